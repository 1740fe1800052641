import { until } from '../../helpers/until.js';
import type { NemesisControls, NemesisStep } from '../types.js';

/** How long a cut waits for some worker to hold a lock: a few grants' time on the slowest backend. */
const HOLDER_WAIT_MS = 10_000;

/** A worker that holds a lock now (the point of cutting it off), or worker 0 when none does. */
export function aHolder(controls: NemesisControls): number {
  const holders = controls.holders();
  return holders.length > 0 ? holders[Math.floor(Math.random() * holders.length)]! : 0;
}

/**
 * A worker whose hold begins after this call (so a fault made now falls at the start of a hold, not at
 * its end), or after `boundMs` any holder (aHolder). Holds are told apart by grant, not by worker: on
 * backends without FIFO the worker that releases is often granted again within milliseconds, and a
 * check by worker missed that new hold and fell back to a holder near its end (lossesReported 0 in a
 * MariaDB clock-jump run in CI).
 */
export async function freshHolder(controls: NemesisControls, boundMs: number): Promise<number> {
  const before = new Set(controls.holds().map((hold) => hold.grant));
  const deadline = performance.now() + boundMs;
  while (performance.now() < deadline) {
    const fresh = controls.holds().find((hold) => !before.has(hold.grant));
    if (fresh !== undefined) return fresh.worker;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return aHolder(controls);
}

/**
 * At each of `atMs`, cuts a current holder off from every server for `forMs`, then heals: a holder
 * partitioned past its lease must be told through its signal before anyone else is granted. One step
 * each, healing `forMs` after the cut itself: the cut may wait for a holder first.
 */
export function cutOffHolders(atMs: readonly number[], forMs: number): NemesisStep[] {
  return atMs.map((at) => ({
    atMs: at,
    run: async (controls: NemesisControls) => {
      // A cut with no holder tests nothing (on FerretDB, whose waiters poll, the key was free at the
      // cut once): wait a bounded while for one.
      await until(() => controls.holders().length > 0, HOLDER_WAIT_MS, 'a holder to cut off').catch(() => undefined);
      const victim = aHolder(controls);
      controls.rig.isolate(controls.clientHost(victim));
      controls.mark(`cut off worker ${victim} (a holder) from every server for ${forMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, forMs));
      controls.rig.heal();
      controls.mark(`healed worker ${victim}`, { affected: [victim] });
    },
  }));
}

/**
 * How long a forward clock jump waits for a hold to begin: longer than a hold of the clock scenarios
 * (3-6 s) and a polling waiter's way in after it, less than the gap to their next step, so the steps
 * keep their order.
 */
const JUMP_HOLD_WAIT_MS = 8000;

/**
 * At each step, moves the wall clock of `host` by `jumpMs` (the last one should bring it back). A
 * forward jump ends the current leases at once, and their holders learn it at their next renewal: it
 * waits for a hold to begin first (freshHolder), so that the holder is still holding then. Made at a
 * fixed moment, it could fall on a free key (the next grant is then made on the jumped clock) or in a
 * hold's last moment (the hold ends before that renewal) and bite nobody.
 */
export function clockJumps(host: string, steps: readonly { atMs: number; jumpMs: number; heal?: boolean }[]): NemesisStep[] {
  return steps.map(({ atMs, jumpMs, heal }) => ({
    atMs,
    run: async (controls: NemesisControls) => {
      if (jumpMs > 0) await freshHolder(controls, JUMP_HOLD_WAIT_MS);
      const clock = controls.clock(host);
      clock.jump(jumpMs);
      controls.mark(
        `${host} clock ${jumpMs > 0 ? 'forward' : 'back'} ${Math.abs(jumpMs)} ms (now ${clock.offsetMs} ms off)`,
        heal ? {} : undefined,
      );
    },
  }));
}
