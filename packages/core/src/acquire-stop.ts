import { linkedController } from './abort.js';

/**
 * What ends a waiting acquire: the caller's signal, if it gave one, or close()'s. Most acquires are
 * granted at their first attempt, which the backend caller bounds by both signals directly
 * (`endsOnClose`); one AbortSignal that follows both is built only for a wait or a retry's pause,
 * as creating and linking a controller costs several microseconds of client CPU per acquire in
 * Node 20 (docs/performance.md).
 */
export class AcquireStop {
  private linked: ReturnType<typeof linkedController> | undefined;

  constructor(
    /** The caller's own signal. */
    readonly caller: AbortSignal | undefined,
    /** Aborted as the provider's close() begins. */
    readonly closing: AbortSignal,
  ) {}

  get aborted(): boolean {
    return this.closing.aborted || this.caller?.aborted === true;
  }

  /** close()'s reason when the provider closed, else the caller's. */
  get reason(): unknown {
    return this.closing.aborted ? this.closing.reason : this.caller?.reason;
  }

  /**
   * The signal for the next attempt's backend call, with `endsOnClose`. Before any wait, the caller's
   * own (the call also ends on close()); once a wait built the linked signal, that one: so a waiting
   * acquire keeps one abort listener on the caller's signal at a time, as an app may share one
   * signal among many acquires (Node warns past its listener limit).
   */
  get callSignal(): AbortSignal {
    return this.linked?.controller.signal ?? this.caller ?? this.closing;
  }

  get callEndsOnClose(): boolean {
    return this.linked === undefined && this.caller !== undefined;
  }

  /** One signal aborted by either (close()'s own when the caller gave none), for waits and pauses. */
  get signal(): AbortSignal {
    if (!this.caller) return this.closing;
    this.linked ??= linkedController(this.caller, this.closing);
    return this.linked.controller.signal;
  }

  /** Detaches the signal built for a wait, if any, from the two it follows. */
  dispose(): void {
    this.linked?.dispose();
  }
}
