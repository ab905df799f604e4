// The replica's view of the outside world. The same replica code runs against the simulator's
// seeded implementations and against the real ones in src/server (TigerBeetle-style: the replica
// is generic over time, network and storage).
import type { NodeId } from '../core/base/units.js';
import type { Message } from '../core/raft/types.js';

export type { Cancel, Clock } from '../core/base/clock.js';

export interface Transport {
  /** Best effort: a message may be lost, delayed, duplicated or reordered. */
  send(m: Message): void;
  /**
   * Put what `send` queued on the wire now. The replica calls it after each Ready's messages, so
   * a transport that batches the sends of one event-loop turn does not hold a Ready's messages
   * back behind the rest of the turn (an fsync's completion, other clients' requests).
   */
  flush?(): void;
}

/**
 * What a peer's monotonic clock said: it read `peerMs` when it sent something that arrived here
 * when our clock read `localMs`. So when ours read `localMs`, the peer's read at least `peerMs`.
 */
export interface PeerClockReading {
  readonly peerMs: number;
  readonly localMs: number;
}

/**
 * Frames between members other than Raft messages (request forwarding). Best effort: in order
 * per peer and never duplicated, but lost when a link breaks, and not held past a bound.
 */
export interface PeerChannel {
  send(to: NodeId, frame: Uint8Array): void;
  /** The newest clock reading `peer` sent us (on any message or frame), if any. */
  heard(peer: NodeId): PeerClockReading | undefined;
}

/**
 * A node's durable storage as named files. Operations complete in the order they were issued.
 * Appended bytes are durable only once a later `sync` of that file has completed; `replace`
 * is atomic and durable when its callback runs (temp file, fsync, rename, fsync of the directory).
 */
export interface Disk {
  /**
   * The file's bytes. After a restart an appended file may end in zeros that were never
   * appended (space preallocated for appends); readers treat a zero tail as the end.
   */
  read(name: string): Uint8Array | undefined;
  /** `bytes` is the disk's from then on: it may be written later, and the caller leaves it be. */
  append(name: string, bytes: Uint8Array): void;
  sync(name: string, done: () => void): void;
  replace(name: string, bytes: Uint8Array, done: () => void): void;
  /**
   * Cut the file to its first `length` bytes (a torn or preallocated tail after the last valid
   * record), durable when `done` runs; appends then continue from `length`. Cheap, unlike a
   * replace of the whole file.
   */
  truncate(name: string, length: number, done: () => void): void;
}
