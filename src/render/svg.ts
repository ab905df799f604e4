// SVG as strings, for the reports that `tenure bench` and `tenure detect eval` write: one element
// per line, text and attribute values escaped, no dependencies. Callers lay out the chart.

/** An element's attributes, written in this order. */
export type SvgAttrs = Readonly<Record<string, string | number>>;

export function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** `<name a="1" …/>`, or `<name …>text</name>` when there is text. */
export function svgElement(name: string, attrs: SvgAttrs, text?: string): string {
  const a = Object.entries(attrs)
    .map(([k, v]) => ` ${k}="${escapeXml(String(v))}"`)
    .join('');
  return text === undefined ? `<${name}${a}/>` : `<${name}${a}>${escapeXml(text)}</${name}>`;
}

export interface SvgDocumentOptions {
  /** Add a viewBox of the same size, so the chart scales when shown smaller. */
  readonly viewBox?: boolean;
}

/** A whole document: the root element, a white background, then `elements`, one per line. */
export function svgDocument(
  width: number,
  height: number,
  elements: readonly string[],
  options: SvgDocumentOptions = {},
): string {
  const viewBox = options.viewBox === true ? ` viewBox="0 0 ${width} ${height}"` : '';
  return (
    [
      `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"${viewBox} ` +
        'font-family="sans-serif" font-size="12">',
      svgElement('rect', { width, height, fill: 'white' }),
      ...elements,
      '</svg>',
    ].join('\n') + '\n'
  );
}
