// The state a tenure node replicates: the etcd key space plus the member table (names, peer and
// client URLs), which etcd also keeps in its Raft log so that every member learns how to reach a
// new one and what to show in MemberList. An entry's first byte says which of the two it is for.
import { assert } from '../../core/base/assert.js';
import { FNV_OFFSET, fnvString } from '../../core/base/hash.js';
import type { LogIndex } from '../../core/base/units.js';
import type { EtcdResult } from '../../core/state/etcd-machine.js';
import { EtcdMachine } from '../../core/state/etcd-machine.js';
import type { StateMachine } from '../../core/state/machine.js';
import { decodeTagged, encodeTagged } from '../../core/state/tagged-json.js';
import type { Command } from '../../core/state/command.js';
import { decodeCommand, encodeCommand } from '../../core/state/command.js';

const TAG_ETCD = 0;
const TAG_MEMBER = 1;

/** What the member table holds of one member; IDs are the Raft node IDs as decimal strings. */
export interface MemberRecord {
  readonly id: string;
  readonly name: string;
  readonly peerUrls: readonly string[];
  readonly clientUrls: readonly string[];
}

export type MemberCommand =
  | { readonly type: 'memberSet'; readonly member: MemberRecord }
  | { readonly type: 'memberDelete'; readonly id: string };

export type ServerResult = EtcdResult | { readonly type: 'member' };

export function encodeEtcdEntry(cmd: Command): Uint8Array {
  const body = encodeCommand(cmd);
  const out = new Uint8Array(body.length + 1);
  out[0] = TAG_ETCD;
  out.set(body, 1);
  return out;
}

export function encodeMemberEntry(cmd: MemberCommand): Uint8Array {
  const body = encodeTagged(cmd);
  const out = new Uint8Array(body.length + 1);
  out[0] = TAG_MEMBER;
  out.set(body, 1);
  return out;
}

/** The etcd command of a log entry, or null for the no-op, a member command or damage. */
export function decodeEtcdEntry(data: Uint8Array): Command | null {
  return data.length > 0 && data[0] === TAG_ETCD ? decodeCommand(data.subarray(1)) : null;
}

/**
 * Whether a log entry is one this machine's encoders write: the leader's no-op, a member command,
 * or an etcd command that decodes. Only the leader's own encoder writes entries, so anything else
 * is damage below the state machine (the simulator asserts it on every apply).
 */
export function wellFormedEntry(data: Uint8Array): boolean {
  if (data.length === 0) return true;
  if (data[0] === TAG_MEMBER) return true;
  return data[0] === TAG_ETCD && decodeCommand(data.subarray(1)) !== null;
}

interface ServerSnapshot {
  readonly format: 1;
  readonly members: readonly MemberRecord[];
  readonly etcd: Uint8Array;
}

export class ServerMachine implements StateMachine<ServerResult> {
  readonly etcd: EtcdMachine;
  private members = new Map<string, MemberRecord>();
  /** Told of every change to the member table (the node updates its peer transport). */
  onMembersChanged: (() => void) | undefined;

  constructor(etcd: EtcdMachine = new EtcdMachine()) {
    this.etcd = etcd;
  }

  apply(index: LogIndex, data: Uint8Array): ServerResult {
    if (data.length === 0) return this.etcd.apply(index, data);
    if (data[0] === TAG_MEMBER) {
      // Keep the etcd machine's applied index (its consistent index) in step.
      this.etcd.apply(index, new Uint8Array(0));
      const cmd = decodeTagged(data.subarray(1)) as MemberCommand;
      if (cmd.type === 'memberSet') this.members.set(cmd.member.id, cmd.member);
      else this.members.delete(cmd.id);
      this.onMembersChanged?.();
      return { type: 'member' };
    }
    assert(data[0] === TAG_ETCD, () => `server machine: unknown entry tag ${data[0]}`);
    return this.etcd.apply(index, data.subarray(1));
  }

  memberTable(): ReadonlyMap<string, MemberRecord> {
    return this.members;
  }

  snapshot(): Uint8Array {
    const s: ServerSnapshot = {
      format: 1,
      members: [...this.members.values()],
      etcd: this.etcd.snapshot(),
    };
    return encodeTagged(s);
  }

  restore(data: Uint8Array): void {
    const s = decodeTagged(data) as ServerSnapshot;
    assert(s.format === 1, 'server machine: unknown snapshot format');
    this.etcd.restore(s.etcd);
    this.members = new Map(s.members.map((m) => [m.id, m]));
    this.onMembersChanged?.();
  }

  digest(): number {
    let h = this.etcd.digest();
    for (const m of [...this.members.values()].sort((a, b) => (a.id < b.id ? -1 : 1)))
      h = fnvString(h, JSON.stringify(m));
    return h === 0 ? FNV_OFFSET : h;
  }
}
