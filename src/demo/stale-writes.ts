// What a "stale write" is, precisely, for the split-brain demo and the stress test. The input is
// the history of ACCEPTED writes in the order the store accepted them; each write names its holder
// (a writer and the fencing token of its tenure; a tenure's token is unique).
//
// - A stale write is an accepted write whose token is lower than the token of some write accepted
//   before it: a deposed holder (a zombie) wrote after its successor had.
// - An interleaving is a write of holder B accepted strictly between the first and the last
//   accepted write of another holder A: two holders' writes mixed within A's tenure.
//
// A fenced store admits neither (contract.ts: a lower token is refused once a higher one was
// accepted, so every interleaving would need a stale write). An unfenced store shows both as soon
// as a zombie writes after its successor.

export interface AcceptedWrite {
  readonly writer: string;
  readonly token: bigint;
  /** The write's number within its holder's tenure (1, 2, …); for reports only. */
  readonly seq: number;
}

export interface StaleWrite {
  /** Position in the history. */
  readonly index: number;
  readonly write: AcceptedWrite;
  /** The highest token accepted before it. */
  readonly highestBefore: bigint;
}

export interface Interleaving {
  /** Position of the intruding write in the history. */
  readonly index: number;
  readonly intruder: AcceptedWrite;
  /** The holder whose tenure it landed in, `writer@token`. */
  readonly holder: string;
}

export interface HistoryVerdict {
  readonly writes: number;
  /** Distinct holders (writer, token) among the accepted writes. */
  readonly holders: number;
  readonly staleWrites: readonly StaleWrite[];
  readonly interleavings: readonly Interleaving[];
}

/** The canonical text of a holder: `worker-1@17`. */
export function describeHolder(w: Pick<AcceptedWrite, 'writer' | 'token'>): string {
  return `${w.writer}@${w.token}`;
}

/** The canonical text of a write: `worker-1@17#2`. */
export function describeWrite(w: AcceptedWrite): string {
  return `${describeHolder(w)}#${w.seq}`;
}

export function checkHistory(history: readonly AcceptedWrite[]): HistoryVerdict {
  const staleWrites: StaleWrite[] = [];
  let highest: bigint | undefined;
  history.forEach((write, index) => {
    if (highest !== undefined && write.token < highest) {
      staleWrites.push({ index, write, highestBefore: highest });
    }
    if (highest === undefined || write.token > highest) highest = write.token;
  });

  const spans = new Map<string, { first: number; last: number }>();
  history.forEach((write, index) => {
    const key = describeHolder(write);
    const span = spans.get(key);
    if (span === undefined) spans.set(key, { first: index, last: index });
    else span.last = index;
  });
  const interleavings: Interleaving[] = [];
  for (const [holder, { first, last }] of spans) {
    for (let i = first + 1; i < last; i++) {
      const intruder = history[i];
      if (intruder !== undefined && describeHolder(intruder) !== holder) {
        interleavings.push({ index: i, intruder, holder });
      }
    }
  }
  interleavings.sort((a, b) => a.index - b.index);
  return { writes: history.length, holders: spans.size, staleWrites, interleavings };
}
