// tenure/membership: SWIM + Lifeguard membership for application nodes over UDP (TCP fallback),
// with suspicion levels, link-level unreachability, flap damping and the stall guard.

export { Membership } from './membership.js';
export type {
  CallOptions,
  LevelEvent,
  LinkEvent,
  MembershipEvent,
  MembershipEventMap,
  StallEvent,
  StatusEvent,
} from './membership.js';
export { lan, local, presets, resolveConfig, wan } from './config.js';
export type { LevelAction, MembershipConfig, MembershipOptions } from './config.js';
export { MembershipError } from './errors.js';
export type { MembershipErrorCode } from './errors.js';
export type { MemberView } from '../core/detect/index.js';
