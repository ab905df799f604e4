// The cluster's alarms, part of the replicated state as etcd keeps them in its backend's alarm
// bucket (etcd server/etcdserver/api/v3alarm/alarms.go): raised and cleared by log entries, so
// every member holds the same set and a restart keeps it. While one is raised the key space
// refuses what etcd's alarm appliers refuse (etcd server/etcdserver/apply.go, Alarm; corrupt.go,
// applierV3Corrupt; applierV3Capped): CORRUPT, raised for any member, stops every write on every
// member; NOSPACE stops what would take more space.
import { fnvNumber, fnvString } from '../base/hash.js';

/** etcdserverpb.AlarmType. NONE can be raised too, as in etcd; it refuses nothing. */
export type AlarmType = 'NONE' | 'NOSPACE' | 'CORRUPT';
export const ALARM_TYPES: readonly AlarmType[] = ['NONE', 'NOSPACE', 'CORRUPT'];

/** etcdserverpb.AlarmMember: which member raised which alarm. */
export interface AlarmMember {
  readonly memberId: bigint;
  readonly alarm: AlarmType;
}

const sameAlarm = (a: AlarmMember, b: AlarmMember): boolean =>
  a.memberId === b.memberId && a.alarm === b.alarm;

/** Type order, then member ID: one order on every member, whatever the order of raising. */
function compareAlarms(a: AlarmMember, b: AlarmMember): number {
  const byType = ALARM_TYPES.indexOf(a.alarm) - ALARM_TYPES.indexOf(b.alarm);
  if (byType !== 0) return byType;
  return a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0;
}

export class AlarmStore {
  private list: AlarmMember[] = [];

  /** True while no alarm is raised (the snapshot then carries no alarm section). */
  get isEmpty(): boolean {
    return this.list.length === 0;
  }

  has(alarm: AlarmType): boolean {
    return this.list.some((a) => a.alarm === alarm);
  }

  /** The raised alarms of `alarm`, or all for NONE (etcd's AlarmStore.Get). */
  get(alarm: AlarmType): readonly AlarmMember[] {
    return alarm === 'NONE' ? [...this.list] : this.list.filter((a) => a.alarm === alarm);
  }

  /** Raise an alarm; the alarm as stored (the one already raised, if it was). */
  activate(m: AlarmMember): AlarmMember {
    const known = this.list.find((a) => sameAlarm(a, m));
    if (known !== undefined) return known;
    const stored: AlarmMember = { memberId: m.memberId, alarm: m.alarm };
    this.list = [...this.list, stored].sort(compareAlarms);
    return stored;
  }

  /** Clear an alarm; the alarm cleared, or null when it was not raised. */
  deactivate(m: AlarmMember): AlarmMember | null {
    const known = this.list.find((a) => sameAlarm(a, m));
    if (known === undefined) return null;
    this.list = this.list.filter((a) => a !== known);
    return known;
  }

  toData(): readonly AlarmMember[] {
    return [...this.list];
  }

  static fromData(data: readonly AlarmMember[]): AlarmStore {
    const s = new AlarmStore();
    for (const m of data) s.activate(m);
    return s;
  }

  digest(h: number): number {
    h = fnvNumber(h, this.list.length);
    for (const a of this.list) h = fnvString(fnvString(h, a.memberId.toString()), a.alarm);
    return h;
  }
}

/** Whether a decoded value is an AlarmMember (from the log or a snapshot: never trusted). */
export function isAlarmMember(v: unknown): v is AlarmMember {
  if (typeof v !== 'object' || v === null) return false;
  const { memberId, alarm } = v as { memberId?: unknown; alarm?: unknown };
  return (
    typeof memberId === 'bigint' &&
    memberId >= 0n &&
    memberId < 1n << 64n &&
    typeof alarm === 'string' &&
    (ALARM_TYPES as readonly string[]).includes(alarm)
  );
}
