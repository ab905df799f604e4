// Markdown tables for the reports that `tenure bench` and `tenure detect eval` write, in the one
// layout both use: a space either side of each cell, `|---|` rules, `---:` for right alignment.

export type Align = 'left' | 'right';

/** One row: `| a | b |`. */
export function markdownRow(cells: readonly (string | number)[]): string {
  return `| ${cells.join(' | ')} |`;
}

/** The rule under the header: `|---|---:|`. */
export function markdownRule(align: readonly Align[]): string {
  return `|${align.map((a) => (a === 'right' ? '---:' : '---')).join('|')}|`;
}

/** Header, rule and rows, one line each; `align` defaults to left for every column. */
export function markdownTable(
  header: readonly string[],
  rows: readonly (readonly (string | number)[])[],
  align: readonly Align[] = header.map(() => 'left'),
): string[] {
  return [markdownRow(header), markdownRule(align), ...rows.map((r) => markdownRow(r))];
}
