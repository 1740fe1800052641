import { describe, expect, it } from 'vitest';
import { checkHistory } from '../src/nemesis/check.js';
import type { RecordedEvent } from '../src/nemesis/events.js';

const BOUNDS = { acquire: 20_000, isHeld: 10_000, release: 10_000 };
const about = (worker: number, n: number, token: number) => ({
  grant: `${worker}:${n}`,
  key: 'k',
  token: String(token),
  requestedAt: 0,
  worker,
});
const begin = (at: number, worker: number, n: number, token: number): RecordedEvent => ({ op: 'begin', at, ...about(worker, n, token) });
const end = (at: number, worker: number, n: number, token: number): RecordedEvent => ({ op: 'end', at, ...about(worker, n, token) });
const lost = (at: number, worker: number, n: number, token: number): RecordedEvent => ({ op: 'lost', at, ...about(worker, n, token) });
const write = (at: number, worker: number, n: number, token: number, accepted: boolean): RecordedEvent => ({
  op: 'write',
  at,
  accepted,
  ...about(worker, n, token),
});

describe('the nemesis history check', () => {
  it('finds nothing wrong in a clean hand-off, and measures recovery from the heal', () => {
    const figures = checkHistory(
      [begin(0, 0, 1, 1), lost(100, 0, 1, 1), begin(150, 1, 1, 2), end(300, 1, 1, 2)],
      [{ at: 120, action: 'heal', heal: true }],
      BOUNDS,
      400,
    );
    expect(figures).toMatchObject({
      grants: 2,
      doubleGrants: 0,
      tokenRegressions: 0,
      staleWritesAccepted: 0,
      lossesReported: 1,
      recoveryMs: [30],
    });
  });

  it('counts the grants to the workers a fault did not cut off, between the fault and its heal', () => {
    const figures = checkHistory(
      // Worker 0 cut off at 100; worker 1 granted during the cut (200), worker 0 itself (250) and after the heal (450) not counted.
      [
        begin(0, 0, 1, 1),
        lost(150, 0, 1, 1),
        begin(200, 1, 1, 2),
        end(240, 1, 1, 2),
        begin(250, 0, 2, 3),
        end(300, 0, 2, 3),
        begin(450, 1, 2, 4),
      ],
      [
        { at: 100, action: 'cut off worker 0' },
        { at: 400, action: 'healed worker 0', heal: true, affected: [0] },
      ],
      BOUNDS,
      500,
    );
    expect(figures.grantsDuringFaults).toEqual([1]);
  });

  it('counts overlapping holds as a double grant, with the overlap', () => {
    const figures = checkHistory([begin(0, 0, 1, 1), begin(100, 1, 1, 2), end(250, 0, 1, 1), end(300, 1, 1, 2)], [], BOUNDS, 400);
    expect(figures.doubleGrants).toBe(1);
    expect(figures.longestOverlapMs).toBe(150);
    expect(figures.tokenRegressions).toBe(0);
  });

  it('counts a sequential grant that did not raise the token, and a token given twice', () => {
    const figures = checkHistory([begin(0, 0, 1, 5), end(100, 0, 1, 5), begin(200, 1, 1, 5), end(300, 1, 1, 5)], [], BOUNDS, 400);
    expect(figures.tokenRegressions).toBe(2);
  });

  it('counts a write the fence accepted after a newer token began', () => {
    const figures = checkHistory(
      [begin(0, 0, 1, 1), begin(100, 1, 1, 2), write(150, 0, 1, 1, true), write(160, 0, 1, 1, false)],
      [],
      BOUNDS,
      400,
    );
    expect(figures.staleWritesAccepted).toBe(1);
  });

  it('counts calls past their bound, also those still running when the run ended', () => {
    const call = (at: number, phase: 'start' | 'end', ms?: number): RecordedEvent => ({
      op: 'call',
      name: 'release',
      phase,
      at,
      worker: 0,
      ...(ms ? { ms } : {}),
    });
    expect(checkHistory([call(0, 'start'), call(11_000, 'end', 11_000)], [], BOUNDS, 20_000).hungCalls).toBe(1);
    expect(checkHistory([call(0, 'start')], [], BOUNDS, 20_000).hungCalls).toBe(1);
    expect(checkHistory([call(0, 'start'), call(50, 'end', 50)], [], BOUNDS, 20_000).hungCalls).toBe(0);
  });

  it('counts a loss that only isHeld() revealed', () => {
    const asked: RecordedEvent = { op: 'asked', grant: '0:1', held: false, at: 120, worker: 0 };
    expect(checkHistory([begin(0, 0, 1, 1), end(100, 0, 1, 1), asked], [], BOUNDS, 400).lossesUntold).toBe(1);
  });

  it('does not count a lease that ran out while isHeld() was on its way: the signal said so on its own', () => {
    const asked: RecordedEvent = { op: 'asked', grant: '0:1', held: false, toldMeanwhile: 'renewal-failed', at: 120, worker: 0 };
    const figures = checkHistory([begin(0, 0, 1, 1), end(100, 0, 1, 1), asked], [], BOUNDS, 400);
    expect(figures.lossesUntold).toBe(0);
    expect(figures.lossesReported).toBe(1);
    expect(figures.grants).toBe(1);
    // Cut off near the end of its hold: isHeld() failed (null) after the signal said lost.
    const unanswered: RecordedEvent = { op: 'asked', grant: '0:1', held: null, toldMeanwhile: 'renewal-failed', at: 120, worker: 0 };
    expect(checkHistory([begin(0, 0, 1, 1), end(100, 0, 1, 1), unanswered], [], BOUNDS, 400).lossesReported).toBe(1);
  });
});
