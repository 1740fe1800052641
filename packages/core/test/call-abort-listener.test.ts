import { getEventListeners } from 'node:events';
import { expect, test } from 'vitest';
import type { CallContext, LockBackend } from '../src/backend.js';
import { BackendCaller } from '../src/backend-caller.js';
import { BackendError } from '../src/errors.js';

const backend = { name: 'test' } as LockBackend;

/** A call whose adapter work settles only when told to, with its CallContext kept for the test. */
function heldCall(caller: BackendCaller, signal?: AbortSignal, endsOnClose = false) {
  let context: CallContext | undefined;
  let settle: (value: string) => void = () => undefined;
  const outcome = caller
    .run(
      'op',
      (call) => {
        context = call;
        return new Promise<string>((resolve) => (settle = resolve));
      },
      { signal, endsOnClose },
    )
    .then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
  return { context: context!, settle, outcome };
}

test('onAbort: the listener runs once, with the reason the caller gets, when the per-call timeout gives the call up', async () => {
  const { context, outcome } = heldCall(new BackendCaller(backend, 50));
  const heard: unknown[] = [];
  context.onAbort!((reason) => heard.push(reason));
  context.onAbort!((reason) => heard.push(reason));
  const { error } = (await outcome) as { error: unknown };
  expect(error).toBeInstanceOf(BackendError);
  expect(heard).toEqual([error, error]);
});

test("onAbort: the caller's own abort reaches the listener; one added afterwards runs at once", async () => {
  const controller = new AbortController();
  const { context, outcome } = heldCall(new BackendCaller(backend, 5000), controller.signal);
  const heard: unknown[] = [];
  context.onAbort!((reason) => heard.push(['before', reason]));
  controller.abort('stop');
  expect(await outcome).toEqual({ error: 'stop' });
  context.onAbort!((reason) => heard.push(['after', reason]));
  expect(heard).toEqual([
    ['before', 'stop'],
    ['after', 'stop'],
  ]);
  expect(context.signal.aborted, 'the signal read later agrees').toBe(true);
});

test('onAbort: a call that settled never calls its listeners, not even past its timeout', async () => {
  const { context, settle, outcome } = heldCall(new BackendCaller(backend, 30));
  const heard: unknown[] = [];
  context.onAbort!((reason) => heard.push(reason));
  settle('done');
  expect(await outcome).toEqual({ value: 'done' });
  context.onAbort!((reason) => heard.push(reason));
  await new Promise((resolve) => setTimeout(resolve, 80));
  expect(heard).toEqual([]);
  expect(context.signal.aborted).toBe(false);
});

test("calls whose signal is the provider's closing one share one abort listener, and closing gives up each still open", async () => {
  const closing = new AbortController();
  const caller = new BackendCaller(backend, 5000, '', closing.signal);
  const listeners = (): number => getEventListeners(closing.signal, 'abort').length;
  const before = listeners();
  const calls = Array.from({ length: 50 }, () => heldCall(caller, closing.signal));
  expect(listeners(), 'no listener per call').toBe(before);
  calls[0]!.settle('done');
  expect(await calls[0]!.outcome).toEqual({ value: 'done' });
  closing.abort('closed');
  const outcomes = await Promise.all(calls.slice(1).map((call) => call.outcome));
  expect(outcomes.every((outcome) => 'error' in outcome && outcome.error === 'closed')).toBe(true);
  // The call that had settled was not given up: its onAbort listeners never ran.
  const heard: unknown[] = [];
  calls[0]!.context.onAbort!((reason) => heard.push(reason));
  expect(heard).toEqual([]);
  caller.close();
});

test('a call given another signal still listens on it (and leaves no listener once settled)', async () => {
  const closing = new AbortController();
  const other = new AbortController();
  const caller = new BackendCaller(backend, 5000, '', closing.signal);
  const call = heldCall(caller, other.signal);
  expect(getEventListeners(other.signal, 'abort')).toHaveLength(1);
  call.settle('done');
  expect(await call.outcome).toEqual({ value: 'done' });
  expect(getEventListeners(other.signal, 'abort')).toHaveLength(0);
  caller.close();
});

test("endsOnClose: a call given the caller's signal ends at either, with the reason of the one that aborted, and adds no listener to closing", async () => {
  const closing = new AbortController();
  const caller = new BackendCaller(backend, 5000, '', closing.signal);
  const before = getEventListeners(closing.signal, 'abort').length;
  const byCaller = new AbortController();
  const first = heldCall(caller, byCaller.signal, true);
  const byClose = new AbortController();
  const second = heldCall(caller, byClose.signal, true);
  expect(getEventListeners(closing.signal, 'abort')).toHaveLength(before);
  byCaller.abort('caller stopped');
  expect(await first.outcome).toEqual({ error: 'caller stopped' });
  closing.abort('provider closed');
  expect(await second.outcome).toEqual({ error: 'provider closed' });
  expect(getEventListeners(byClose.signal, 'abort'), 'given up: its listener went with it').toHaveLength(0);
  // Once closing has aborted, such a call is refused before the adapter runs.
  let ran = false;
  const late = await caller
    .run('op', async () => void (ran = true), { signal: new AbortController().signal, endsOnClose: true })
    .catch((error: unknown) => error);
  expect(late).toBe('provider closed');
  expect(ran).toBe(false);
  caller.close();
});
