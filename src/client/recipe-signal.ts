// A holder's AbortSignal whose `aborted` is computed at the moment it is read.
//
// A lock or leadership signal aborts when the session enters jeopardy, when the own key
// disappears, or on release. The session notices jeopardy by a timer, but a process that was
// paused (SIGSTOP, a long GC, a VM freeze) resumes with that timer not yet run: code that checks
// `signal.aborted` first thing after the pause would read a stale `false`. So the signal handed to
// the holder reads the session's monotonic clock on every `aborted`, `reason` and
// `throwIfAborted()`: the session's `valid()` applies the current time (session.ts), which
// synchronously aborts the session's signal and, through our listener, this one. "The deadline is
// read from the monotonic clock at the moment of the check, not only from a timer."
import type { Session } from './session.js';

/** The prototype's getter, called on `s` itself (bypassing the live getters installed below). */
const own = (s: AbortSignal, name: 'aborted' | 'reason'): unknown =>
  Reflect.get(AbortSignal.prototype, name, s);

/** The signal's own `aborted`, bypassing the live getter installed by liveSignal. */
export function rawAborted(signal: AbortSignal): boolean {
  return own(signal, 'aborted') === true;
}

/**
 * The controller's signal, made live: every read first asks the session for its phase now. The
 * session's own signal must already be linked to `controller` (see linkAbort).
 */
export function liveSignal(controller: AbortController, session: Session): AbortSignal {
  const s = controller.signal;
  const refresh = (): void => {
    // valid() applies the clock now, which may abort `s` synchronously through the link.
    if (own(s, 'aborted') !== true) session.valid();
  };
  Object.defineProperties(s, {
    aborted: { configurable: true, get: () => (refresh(), own(s, 'aborted') === true) },
    reason: { configurable: true, get: () => (refresh(), own(s, 'reason')) },
    throwIfAborted: {
      configurable: true,
      value: () => {
        refresh();
        if (own(s, 'aborted') === true) throw own(s, 'reason');
      },
    },
  });
  return s;
}

/**
 * Abort `target` (with the source's reason) when `source` aborts; returns the unlink function.
 * Already aborted: aborts at once.
 */
export function linkAbort(source: AbortSignal, target: AbortController): () => void {
  if (source.aborted) {
    target.abort(source.reason);
    return () => undefined;
  }
  const on = (): void => target.abort(source.reason);
  source.addEventListener('abort', on, { once: true });
  return () => source.removeEventListener('abort', on);
}
