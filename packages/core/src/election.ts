import { forwardAbort, linkedController, sleep, whenAborted } from './abort.js';
import { InvalidArgumentError, LeaderWorkError, LeaderWorkOverrunError, ProviderClosedError } from './errors.js';
import type { Election, ElectOptions, Leadership, Lock, LockProvider } from './types.js';
import { validateKey } from './validation.js';

const DEFAULT_GRACE_MS = 5000;
const DEFAULT_RETRY_DELAY_MS = 1000;

export type LeaderWork = (leadership: Leadership) => Promise<unknown>;

/**
 * A candidacy built on the provider's own locks, the way Kubernetes' leaderelection and etcd's
 * concurrency.Election are built on a lease: campaign = a waiting acquire, leading = holding the
 * lock, losing it aborts the work's signal. The work of one term must have returned before this
 * instance campaigns again, so one instance never runs two terms at once.
 */
export class CampaigningElection implements Election {
  readonly done: Promise<void>;
  private readonly stopping = new AbortController();
  private readonly graceMs: number;
  private readonly retryDelayMs: number;
  private current: { lock: Lock; work: Promise<unknown> } | undefined;
  private termCount = 0;

  constructor(
    private readonly provider: LockProvider,
    readonly key: string,
    private readonly work: LeaderWork,
    private readonly options: ElectOptions,
    private readonly report: (error: Error) => void,
  ) {
    validateKey(key);
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'expected an object');
    if (options.signal !== undefined && !(options.signal instanceof AbortSignal))
      throw new InvalidArgumentError('signal', 'expected an AbortSignal');
    if (typeof work !== 'function') throw new InvalidArgumentError('work', 'expected a function (leadership) => Promise');
    this.graceMs = nonNegativeMs(options.graceMs, 'graceMs', DEFAULT_GRACE_MS);
    this.retryDelayMs = nonNegativeMs(options.retryDelayMs, 'retryDelayMs', DEFAULT_RETRY_DELAY_MS);
    if (options.onError !== undefined && typeof options.onError !== 'function')
      throw new InvalidArgumentError('onError', 'expected a function');
    const detach = forwardAbort(options.signal, this.stopping);
    this.done = this.campaign().finally(detach);
  }

  get leading(): boolean {
    return this.current !== undefined && !this.current.lock.signal.aborted;
  }

  get terms(): number {
    return this.termCount;
  }

  async resign(): Promise<void> {
    this.stopping.abort(new Error('resigned'));
    await this.done;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.resign();
  }

  private async campaign(): Promise<void> {
    const stop = this.stopping.signal;
    while (!stop.aborted) {
      let lock: Lock;
      try {
        lock = await this.provider.acquire(this.key, { ttlMs: this.options.ttlMs, reason: this.options.reason, signal: stop });
      } catch (error) {
        if (stop.aborted || error instanceof ProviderClosedError) return;
        this.report(error as Error);
        await sleep(this.retryDelayMs, stop).catch(() => undefined);
        continue;
      }
      const failed = await this.lead(lock);
      if (failed) await sleep(this.retryDelayMs, stop).catch(() => undefined);
    }
  }

  /** One term: runs the work until it returns or leadership ends, then releases. True if the work threw. */
  private async lead(lock: Lock): Promise<boolean> {
    this.termCount++;
    const { controller, dispose } = linkedController(lock.signal, this.stopping.signal);
    const leadership: Leadership = { key: this.key, token: lock.token, signal: controller.signal, acquiredAt: lock.acquiredAt };
    let threw = false;
    const work = (async () => this.work(leadership))().catch((error: unknown) => {
      threw = true;
      if (!controller.signal.aborted) this.report(new LeaderWorkError(this.key, error));
    });
    this.current = { lock, work };
    try {
      await Promise.race([work, whenAborted(controller.signal)]);
      if (controller.signal.aborted) await this.awaitOverrun(work);
    } finally {
      dispose();
      this.current = undefined;
      await lock.release().catch(() => undefined);
    }
    return threw;
  }

  /** Leadership ended under a running work: give it graceMs, then report it and wait for it anyway. */
  private async awaitOverrun(work: Promise<unknown>): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const overran = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), this.graceMs)));
    const late = await Promise.race([work.then(() => false), overran]);
    clearTimeout(timer);
    if (!late) return;
    this.report(new LeaderWorkOverrunError(this.key, this.graceMs));
    await work;
  }
}

function nonNegativeMs(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidArgumentError(name, `expected a non-negative number of ms, got ${String(value)}`);
  }
  return value;
}
