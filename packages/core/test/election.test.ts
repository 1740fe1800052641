import { expect, test } from 'vitest';
import { createProvider } from '../src/backend-index.js';
import { ErrorCode, type Leadership, LeaderWorkError, LeaderWorkOverrunError, LockLostError } from '../src/index.js';
import { advanceTo, outcomeOf, useFakeClock } from './fixtures/fake-clock.js';
import { ScriptedBackend } from './fixtures/scripted-backend.js';

useFakeClock();

const OPTIONS = { ttlMs: 300, retryDelayMs: 500, graceMs: 1000 };

function setup() {
  const backend = new ScriptedBackend();
  const provider = createProvider(backend, { pollIntervalMs: 100, callTimeoutMs: 5000 });
  const errors: Error[] = [];
  return { backend, provider, errors, onError: (error: Error) => void errors.push(error) };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

test('each term runs the work once with a new token; when it returns the lock is released and the next term starts', async () => {
  const { backend, provider, onError, errors } = setup();
  const tokens: bigint[] = [];
  const work = async ({ token }: Leadership) => {
    tokens.push(token);
    await pause(100);
  };
  const election = provider.elect('k', work, { ...OPTIONS, onError });
  await advanceTo(250);
  expect(tokens).toEqual([1n, 2n, 3n]);
  expect(election.terms).toBe(3);
  expect(election.leading).toBe(true);
  expect(backend.timesOf('release')).toEqual([100, 200]);
  const resigning = outcomeOf(election.resign());
  await advanceTo(300);
  expect(resigning.settled, 'the third term ran to its end (its work ignores the signal)').toBe(true);
  expect(tokens, 'no term after resign()').toEqual([1n, 2n, 3n]);
  expect(election.leading).toBe(false);
  expect(backend.holders.has('k')).toBe(false);
  expect(errors).toEqual([]);
  await provider.close();
});

test("resign() aborts the work's signal, waits for the work to return, then releases the lock", async () => {
  const { backend, provider, onError } = setup();
  const election = provider.elect(
    'k',
    async ({ signal }) => {
      await untilAborted(signal);
      await pause(50);
    },
    { ...OPTIONS, onError },
  );
  await advanceTo(200);
  const resigning = outcomeOf(election.resign());
  await advanceTo(249);
  expect(resigning.settled).toBe(false);
  expect(backend.holders.has('k'), 'held while the work still runs').toBe(true);
  await advanceTo(250);
  expect(resigning.settled).toBe(true);
  expect(backend.timesOf('release')).toEqual([250]);
  expect(backend.holders.has('k')).toBe(false);
  expect(election.terms).toBe(1);
  await provider.close();
});

test('a throwing work is reported as LeaderWorkError and the instance campaigns again after retryDelayMs', async () => {
  const { backend, provider, onError, errors } = setup();
  const failure = new Error('boom');
  let runs = 0;
  const election = provider.elect(
    'k',
    async ({ signal }) => {
      if (++runs === 1) {
        await pause(100);
        throw failure;
      }
      await untilAborted(signal);
    },
    { ...OPTIONS, onError },
  );
  await advanceTo(599);
  expect(errors).toEqual([expect.any(LeaderWorkError)]);
  expect((errors[0] as LeaderWorkError).code).toBe(ErrorCode.LeaderWorkFailed);
  expect(errors[0]!.cause).toBe(failure);
  expect(backend.timesOf('release'), 'the failed term released its lock').toEqual([100]);
  expect(election.terms).toBe(1);
  await advanceTo(600);
  expect(backend.timesOf('tryGrant')).toEqual([0, 600]);
  expect(election.terms).toBe(2);
  await election.resign();
  await provider.close();
});

test('a work that ignores its lost leadership is reported as overrun after graceMs; no campaign until it returns', async () => {
  const { backend, provider, onError, errors } = setup();
  let leadership: Leadership | undefined;
  const election = provider.elect(
    'k',
    async (given) => {
      leadership = given;
      if (election.terms === 1) await pause(5000);
      else await untilAborted(given.signal);
    },
    { ...OPTIONS, onError },
  );
  await advanceTo(50);
  backend.holders.set('k', 'someone-else');
  await advanceTo(100);
  expect(leadership?.signal.reason, 'the renewal at 100 ms found the lock taken').toBeInstanceOf(LockLostError);
  expect(election.leading).toBe(false);
  await advanceTo(1099);
  expect(errors).toEqual([]);
  await advanceTo(1100);
  expect(errors).toEqual([expect.any(LeaderWorkOverrunError)]);
  expect((errors[0] as LeaderWorkOverrunError).graceMs).toBe(1000);
  backend.holders.delete('k');
  await advanceTo(4999);
  expect(backend.timesOf('tryGrant'), 'one term at a time: no campaign while the old work runs').toEqual([0]);
  await advanceTo(5000);
  expect(backend.timesOf('tryGrant')).toEqual([0, 5000]);
  expect(election.terms).toBe(2);
  await election.resign();
  await provider.close();
});
