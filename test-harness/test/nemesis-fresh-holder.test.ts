import { describe, expect, it } from 'vitest';
import { freshHolder } from '../src/nemesis/scenarios/common.js';
import type { NemesisControls } from '../src/nemesis/types.js';

/** Controls whose only working part is the open holds, which the test changes while freshHolder polls. */
function controlsWith(holds: { worker: number; grant: string }[]): NemesisControls {
  return {
    holders: () => [...new Set(holds.map((hold) => hold.worker))],
    holds: () => [...holds],
  } as unknown as NemesisControls;
}

describe('freshHolder: the worker whose hold begins after the call', () => {
  it('sees a worker granted again between two polls as a fresh holder, not as the hold it had', async () => {
    const holds = [{ worker: 2, grant: '2:1' }];
    const controls = controlsWith(holds);
    const started = performance.now();
    const picked = freshHolder(controls, 5000);
    // Worker 2 releases and is granted again before the next poll: the worker set never changes.
    holds.splice(0, 1, { worker: 2, grant: '2:2' });
    expect(await picked).toBe(2);
    // Found at a poll, not after the bound (the fallback would give the same worker, later).
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('waits past holds open at the call for one that begins later', async () => {
    const holds = [{ worker: 0, grant: '0:4' }];
    const controls = controlsWith(holds);
    const picked = freshHolder(controls, 5000);
    await new Promise((resolve) => setTimeout(resolve, 60));
    holds.push({ worker: 1, grant: '1:1' });
    expect(await picked).toBe(1);
  });

  it('falls back to a current holder once the bound passes with no new hold', async () => {
    const controls = controlsWith([{ worker: 3, grant: '3:7' }]);
    const started = performance.now();
    expect(await freshHolder(controls, 100)).toBe(3);
    expect(performance.now() - started).toBeGreaterThanOrEqual(95);
  });
});
