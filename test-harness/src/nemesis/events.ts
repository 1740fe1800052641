/** What a nemesis worker tells the runner, one JSON line each, on its stdout. */
export type WorkerEvent =
  /** A lock call began or ended (`ms` and `code` on the end): how the check finds hung calls. */
  | { op: 'call'; name: 'acquire' | 'isHeld' | 'release'; phase: 'start' | 'end'; ms?: number; code?: string }
  /** acquire() resolved: the worker believes it holds `key` from now on. */
  | { op: 'begin'; grant: string; key: string; token: string; requestedAt: number }
  /** A write to the fenced store under the hold; `accepted` is the fence's verdict, added by the runner. */
  | { op: 'write'; grant: string; key: string; token: string; requestedAt: number; accepted?: boolean }
  /** The lock's signal said it was lost: the worker stops believing it holds. */
  | { op: 'lost'; grant: string; key: string; token: string; requestedAt: number }
  /** The worker is done with the hold (it stops writing; it asks isHeld() and releases next). */
  | { op: 'end'; grant: string; key: string; token: string; requestedAt: number }
  /**
   * What isHeld() answered at the end of a hold the signal never called lost (null: no answer):
   * false means the backend had let the hold go and the signal never said so, unless `toldMeanwhile`
   * names why the signal did say so on its own while isHeld() was on its way (a `holdfast:lost`
   * reason other than `not-held`: a renewal that ran out of time, say, since isHeld() answers false
   * once its lock is lost). Set with a null answer too: a holder cut off near the end of its hold is
   * told by its signal while its isHeld() waits for the call timeout.
   */
  | { op: 'asked'; grant: string; held: boolean | null; toldMeanwhile?: string }
  | { op: 'exit'; grants: number };

/** An event as the runner recorded it: which worker, when it arrived (ms since the run began). */
export type RecordedEvent = WorkerEvent & { worker: number; at: number };

export interface WorkerSpec {
  worker: number;
  url: string;
  keys: string[];
  ttlMs: number;
  waitMs: number;
  /** Each hold lasts a random time in this range, in ms. */
  holdMs: [number, number];
  writeEveryMs: number;
  /** Options for createLockProvider beside the URL (those a URL cannot carry, such as Redis `replicas`). */
  providerOptions?: Record<string, unknown>;
  /** A planted defect: keeps holding and writing after its signal says the lock is lost. */
  ignoreSignal?: boolean;
}
