import {
  type BackendGrant,
  type Busy,
  type CallContext,
  type Extension,
  type GrantOutcome,
  type GrantRequest,
  granted,
  type LockBackend,
  type QueuePlace,
  type SlotRequest,
  type WaitOptions,
} from './backend.js';
import {
  type Breach,
  backendBreach,
  booleanBreach,
  contractError,
  extensionBreach,
  holderBreach,
  holdersBreach,
  outcomeBreach,
} from './contract-check.js';
import type { Capabilities, LockInfo } from './types.js';

/**
 * The adapter as core sees it: every answer is checked against the contract where it crosses into
 * core (contract-check.ts), and a wrong one becomes an AdapterContractError that names the adapter,
 * the method and the rule, instead of a TypeError from deep inside core or, worse, a lock handed
 * out on a grant core cannot keep. Built once per provider; a grant costs one small wrapper.
 */
export function checkedBackend(backend: LockBackend): LockBackend {
  const broken = backendBreach(backend);
  if (broken) throw contractError(String((backend as Partial<LockBackend> | null)?.name), broken.member, broken.breach);
  return new CheckedBackend(backend);
}

class CheckedBackend implements LockBackend {
  // Optional methods stay absent where the adapter has none: core tests for them to pick its way
  // of waiting, queueing and whether semaphores exist.
  readonly waitForChange: ((key: string, busy: Busy, options: WaitOptions) => Promise<void>) | undefined;
  readonly leaveQueue: ((key: string, place: QueuePlace, call: CallContext) => Promise<void>) | undefined;
  readonly tryGrantSlot: ((request: SlotRequest, call: CallContext) => Promise<GrantOutcome>) | undefined;
  readonly slotHolders: ((key: string, call: CallContext) => Promise<readonly LockInfo[]>) | undefined;

  // The checks of answers that need nothing but the answer, built once: a call then costs one
  // then() on the adapter's promise (measured: an async function per call cost more).
  readonly extension = (answer: unknown): Extension => this.kept('grant.extend', extensionBreach(answer), answer as Extension);
  readonly released = (answer: unknown): boolean => this.kept('grant.release', booleanBreach(answer), answer as boolean);
  readonly held = (answer: unknown): boolean => this.kept('grant.isHeld', booleanBreach(answer), answer as boolean);
  private readonly holder = (answer: unknown) => this.kept('inspect', holderBreach(answer), answer as LockInfo | null);
  private readonly listed = (answer: unknown) => this.kept('list', holdersBreach(answer), answer as readonly LockInfo[]);
  private readonly slots = (answer: unknown) => this.kept('slotHolders', holdersBreach(answer), answer as readonly LockInfo[]);
  private readonly forced = (answer: unknown) => this.kept('forceRelease', booleanBreach(answer), answer as boolean);

  constructor(private readonly inner: LockBackend) {
    // Answers with nothing to check go straight to the adapter.
    this.waitForChange = inner.waitForChange?.bind(inner);
    this.leaveQueue = inner.leaveQueue?.bind(inner);
    const { tryGrantSlot, slotHolders } = inner;
    this.tryGrantSlot =
      tryGrantSlot &&
      ((request, call) =>
        answer(tryGrantSlot.call(inner, request, call)).then((outcome) => this.outcome('tryGrantSlot', request, call, outcome)));
    this.slotHolders = slotHolders && ((key, call) => answer(slotHolders.call(inner, key, call)).then(this.slots));
  }

  // Read through, not copied: an adapter may learn its capabilities (the server's version) after it was built.
  get name(): string {
    return this.inner.name;
  }

  get capabilities(): Capabilities {
    return this.inner.capabilities;
  }

  tryGrant(request: GrantRequest, call: CallContext): Promise<GrantOutcome> {
    return answer(this.inner.tryGrant(request, call)).then((outcome) => this.outcome('tryGrant', request, call, outcome));
  }

  abandon(request: GrantRequest, call: CallContext): Promise<void> {
    return this.inner.abandon(request, call);
  }

  inspect(key: string, call: CallContext): Promise<LockInfo | null> {
    return answer(this.inner.inspect(key, call)).then(this.holder);
  }

  list(prefix: string, call: CallContext): Promise<readonly LockInfo[]> {
    return answer(this.inner.list(prefix, call)).then(this.listed);
  }

  forceRelease(key: string, call: CallContext): Promise<boolean> {
    return answer(this.inner.forceRelease(key, call)).then(this.forced);
  }

  close(call: CallContext): Promise<void> {
    return this.inner.close(call);
  }

  /** The answer, if it broke no rule; else the error naming the adapter, the method and the rule. */
  private kept<T>(method: string, breach: Breach | undefined, answer: T): T {
    if (breach) throw contractError(this.inner.name, method, breach);
    return answer;
  }

  /** A grant is handed to core only behind a CheckedGrant, so its own answers are checked too. */
  private outcome(method: string, request: GrantRequest, call: CallContext, outcome: unknown): GrantOutcome | Promise<never> {
    const breach = outcomeBreach(outcome);
    if (breach) return this.refuse(method, request, call, breach);
    const checked = outcome as GrantOutcome;
    return checked.granted ? granted(new CheckedGrant(this, checked.grant)) : checked;
  }

  /**
   * Whatever a wrong answer meant, the attempt may hold the key on the server: it is undone
   * (owner-checked by its lockId, a no-op when nothing landed) within this call's bound before the
   * error, so no lock is left behind that nobody holds. If the undo fails too, the lease still runs
   * out, as it does for a crashed holder.
   */
  private async refuse(method: string, request: GrantRequest, call: CallContext, breach: Breach): Promise<never> {
    await Promise.resolve()
      .then(() => this.inner.abandon(request, call))
      .catch(() => undefined);
    throw contractError(this.inner.name, method, breach);
  }
}

/** Stands in for the adapter's grant (whose fields were checked) and checks what its methods answer. */
class CheckedGrant implements BackendGrant {
  readonly token: bigint;
  readonly acquiredAt: Date;
  readonly expiresAt: Date | null;

  constructor(
    private readonly backend: CheckedBackend,
    private readonly inner: BackendGrant,
  ) {
    this.token = inner.token;
    this.acquiredAt = inner.acquiredAt;
    this.expiresAt = inner.expiresAt;
  }

  extend(ttlMs: number, call: CallContext): Promise<Extension> {
    return answer(this.inner.extend(ttlMs, call)).then(this.backend.extension);
  }

  release(call: CallContext): Promise<boolean> {
    return answer(this.inner.release(call)).then(this.backend.released);
  }

  isHeld(call: CallContext): Promise<boolean> {
    return answer(this.inner.isHeld(call)).then(this.backend.held);
  }
}

/**
 * The adapter's answer as a promise. Promise.resolve returns a native promise as it is (no
 * allocation); it also accepts a plain value from an adapter method that is not async, which core
 * itself has always accepted.
 */
function answer<T>(value: T | Promise<T>): Promise<T> {
  return Promise.resolve(value);
}
