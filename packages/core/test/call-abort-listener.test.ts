import { expect, test } from 'vitest';
import type { CallContext, LockBackend } from '../src/backend.js';
import { BackendCaller } from '../src/backend-caller.js';
import { BackendError } from '../src/errors.js';

const backend = { name: 'test' } as LockBackend;

/** A call whose adapter work settles only when told to, with its CallContext kept for the test. */
function heldCall(caller: BackendCaller, signal?: AbortSignal) {
  let context: CallContext | undefined;
  let settle: (value: string) => void = () => undefined;
  const outcome = caller
    .run(
      'op',
      (call) => {
        context = call;
        return new Promise<string>((resolve) => (settle = resolve));
      },
      { signal },
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
