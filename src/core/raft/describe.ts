// The one canonical text form of the Raft core's values. Golden interaction scripts, logs, the CLI
// and the dashboard all print messages, entries and Ready batches through these functions, so a
// change of format is one diff in one place.
//
// Conventions: an entry or a log position is `index/term`; a message is `from->to type term=…`
// followed by its type's fields in a fixed order; optional parts appear only when set.
import { describeConf, decodeConfChange } from './conf.js';
import type { Entry, HardState, Message, Ready, ReadState, Snapshot, SoftState } from './types.js';

/** Printable data up to this many characters is shown as text; longer data as a byte count. */
const DATA_TEXT_CHARS_MAX = 32;

const decoder = new TextDecoder('utf-8', { fatal: true });

/** `index/term`, the position of an entry in the log. */
export function describePosition(index: number, term: number): string {
  return `${index}/${term}`;
}

/**
 * Opaque command bytes as a short text: bare when it is one printable word, JSON-quoted when it
 * is printable but holds spaces or quotes, else a byte count.
 */
export function describeData(data: Uint8Array): string {
  if (data.length === 0) return '""';
  let text: string;
  try {
    text = decoder.decode(data);
  } catch {
    return `<${data.length} bytes>`;
  }
  if (text.length > DATA_TEXT_CHARS_MAX || !/^[\x20-\x7e]+$/.test(text)) {
    return `<${data.length} bytes>`;
  }
  return /^[\x21-\x7e]+$/.test(text) && !text.includes('"') ? text : JSON.stringify(text);
}

/** `4/1 noop`, `5/1 put-x`, `6/1 conf addVoter 4`. */
export function describeEntry(e: Entry): string {
  const at = describePosition(e.index, e.term);
  if (e.type === 'conf') {
    const cc = decodeConfChange(e.data);
    return `${at} conf ${cc.type} ${cc.nodeId}`;
  }
  return e.data.length === 0 ? `${at} noop` : `${at} ${describeData(e.data)}`;
}

/** `[4/1 5/1]`: positions only, as in append messages. */
export function describeEntryPositions(entries: readonly Entry[]): string {
  return `[${entries.map((e) => describePosition(e.index, e.term)).join(' ')}]`;
}

export function describeHardState(hs: HardState): string {
  return `term=${hs.term} vote=${hs.vote} commit=${hs.commit}`;
}

export function describeSoftState(ss: SoftState): string {
  return `${ss.role} term=${ss.term} lead=${ss.leader}`;
}

/** `6/2 voters=(1 2 3)`, plus the data when it is short and printable. */
export function describeSnapshot(s: Snapshot): string {
  const data = s.data.length > 0 ? ` data=${describeData(s.data)}` : '';
  return `${describePosition(s.index, s.term)} ${describeConf(s.conf)}${data}`;
}

export function describeReadState(rs: ReadState): string {
  return `ctx=${rs.context} index=${rs.index}`;
}

/** One line per message, e.g. `1->2 app term=1 prev=3/1 entries=[4/1 5/1] commit=3`. */
export function describeMessage(m: Message): string {
  const head = `${m.from}->${m.to} ${m.type} term=${m.term}`;
  switch (m.type) {
    case 'vote':
    case 'preVote':
      return `${head} last=${describePosition(m.lastIndex, m.lastTerm)}${m.transfer ? ' transfer' : ''}`;
    case 'voteResp':
    case 'preVoteResp':
      return m.reject ? `${head} reject` : head;
    case 'app':
      return (
        `${head} prev=${describePosition(m.prevIndex, m.prevTerm)} ` +
        `entries=${describeEntryPositions(m.entries)} commit=${m.commit}`
      );
    case 'appResp':
      return m.reject
        ? `${head} index=${m.index} reject hint=${describePosition(m.hintIndex, m.hintTerm)}`
        : `${head} index=${m.index}`;
    case 'heartbeat':
      return `${head} commit=${m.commit}${m.context !== 0 ? ` ctx=${m.context}` : ''}`;
    case 'heartbeatResp':
      return m.context !== 0 ? `${head} ctx=${m.context}` : head;
    case 'snap':
      return `${head} snap=${describeSnapshot(m.snapshot)}`;
    case 'readIndex':
      return `${head} ctx=${m.context}`;
    case 'readIndexResp':
      return `${head} ctx=${m.context} index=${m.index}`;
    case 'timeoutNow':
      return head;
  }
}

/**
 * A Ready batch, one item per line, in the order the replica loop handles it: what changed, what
 * to persist, what to send, what to apply, which reads are released. Empty parts are left out, so
 * an empty Ready is the empty string.
 */
export function describeReady(rd: Ready): string {
  const out: string[] = [];
  if (rd.softState) out.push(`soft: ${describeSoftState(rd.softState)}`);
  if (rd.hardState) out.push(`hard: ${describeHardState(rd.hardState)}`);
  if (rd.snapshot) out.push(`snapshot: ${describeSnapshot(rd.snapshot)}`);
  if (rd.entries.length > 0) {
    out.push('entries:');
    for (const e of rd.entries) out.push(`  ${describeEntry(e)}`);
  }
  if (rd.messages.length > 0) {
    out.push('messages:');
    for (const m of rd.messages) out.push(`  ${describeMessage(m)}`);
  }
  if (rd.committedEntries.length > 0) {
    out.push('committed:');
    for (const e of rd.committedEntries) out.push(`  ${describeEntry(e)}`);
  }
  if (rd.readStates.length > 0) {
    out.push(`reads: ${rd.readStates.map(describeReadState).join(', ')}`);
  }
  return out.join('\n');
}
