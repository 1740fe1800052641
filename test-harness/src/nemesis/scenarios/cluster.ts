import type { NemesisControls, NemesisStep } from '../types.js';
import { freshHolder } from './common.js';

/**
 * Faults of a 3-member consensus cluster whose members run in hosts s0, s1, s2 and whose worker w
 * talks first to member s(w mod 3) (Consul, etcd, ZooKeeper).
 */

/** The member that leads at `atMs` isolated for `forMs`, then healed. */
export function isolateLeader(atMs: number, forMs: number): NemesisStep[] {
  let leader = '';
  return [
    {
      atMs,
      run: async (controls: NemesisControls) => {
        leader = await controls.target.leader!();
        controls.rig.isolate(leader);
        controls.mark(`isolated the leader ${leader} for ${forMs} ms`);
      },
    },
    {
      atMs: atMs + forMs,
      run: (controls: NemesisControls) => {
        controls.rig.heal();
        controls.mark(`healed ${leader}`, {});
      },
    },
  ];
}

/** Member s`k` and the workers that talk to it on one side (a minority), the rest on the other. */
export function splitOff(k: number, workers: number, atMs: number, forMs: number): NemesisStep[] {
  const minorityWorkers = Array.from({ length: workers }, (_, w) => w).filter((w) => w % 3 === k);
  return [
    {
      atMs,
      run: (controls: NemesisControls) => {
        controls.rig.split([`s${k}`, ...minorityWorkers.map((w) => controls.clientHost(w))]);
        controls.mark(`split: s${k} with workers ${minorityWorkers.join(', ')} | the other two servers with the rest, for ${forMs} ms`);
      },
    },
    {
      atMs: atMs + forMs,
      run: (controls: NemesisControls) => {
        controls.rig.heal();
        controls.mark('healed the split', { affected: minorityWorkers });
      },
    },
  ];
}

/** How long a partition step waits for a hold to begin, so that the fault falls at its start. */
const FRESH_HOLD_BOUND_MS = 15_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A last step that keeps the run going `ms` after the steps before it ended: a restart's length
 * varies with the machine's load, and the recovery after it needs time to be seen.
 */
export function settle(ms: number): NemesisStep {
  return { atMs: 0, run: () => sleep(ms) };
}

/**
 * From `atMs`, the next worker to be granted a lock is split off with the member it talks to first (a
 * minority of one member), every other member and worker on the majority side, for `forMs`: the
 * holder must be told before the majority grants its key again. One step: the split waits for a hold
 * to begin, so that it falls mid-hold (at most `freshBoundMs`, then any holder: 0 for holds far longer
 * than the fault needs to bite), and the heal comes `forMs` after the split.
 */
export function minorityHolder(atMs: number, forMs: number, freshBoundMs = FRESH_HOLD_BOUND_MS): NemesisStep[] {
  return [
    {
      atMs,
      run: async (controls: NemesisControls) => {
        const victim = await freshHolder(controls, freshBoundMs);
        const member = `s${victim % 3}`;
        controls.rig.split([member, controls.clientHost(victim)]);
        controls.mark(`split: worker ${victim} (a holder) with ${member} | the other members and workers, for ${forMs} ms`);
        await sleep(forMs);
        controls.rig.heal();
        controls.mark(`healed worker ${victim}'s split`, { affected: [victim] });
      },
    },
  ];
}

/**
 * From `atMs`, the next worker to be granted a lock, its member s(w mod 3) and every worker that
 * talks to that member first, split from the other two members and their workers for `forMs`:
 * holders on both sides (the minority's is in doubt and must be told; the majority goes on granting).
 */
export function splitWithFreshHolder(workers: number, atMs: number, forMs: number): NemesisStep[] {
  return [
    {
      atMs,
      run: async (controls: NemesisControls) => {
        const victim = await freshHolder(controls, FRESH_HOLD_BOUND_MS);
        const k = victim % 3;
        const minority = Array.from({ length: workers }, (_, w) => w).filter((w) => w % 3 === k);
        controls.rig.split([`s${k}`, ...minority.map((w) => controls.clientHost(w))]);
        controls.mark(`split: s${k} with workers ${minority.join(', ')} (worker ${victim} just granted) | the rest, for ${forMs} ms`);
        await sleep(forMs);
        controls.rig.heal();
        controls.mark('healed the split', { affected: minority });
      },
    },
  ];
}

/** As cutOffHolders, once, but the cut waits for a hold to begin (so it falls mid-hold). */
export function cutOffFreshHolder(atMs: number, forMs: number): NemesisStep[] {
  return [
    {
      atMs,
      run: async (controls: NemesisControls) => {
        const victim = await freshHolder(controls, FRESH_HOLD_BOUND_MS);
        controls.rig.isolate(controls.clientHost(victim));
        controls.mark(`cut off worker ${victim} (a holder, its hold just begun) from every member for ${forMs} ms`);
        await sleep(forMs);
        controls.rig.heal();
        controls.mark(`healed worker ${victim}`, { affected: [victim] });
      },
    },
  ];
}

/**
 * From `atMs`, every member restarted in turn (stopped gracefully, started on its data, the cluster
 * serving with a leader again before the next), `gapMs` apart: the operator's rolling upgrade.
 */
export function rollingRestart(atMs: number, gapMs: number): NemesisStep[] {
  return [
    {
      atMs,
      run: async (controls: NemesisControls) => {
        const { target } = controls;
        if (!target.restart) throw new Error(`${target.backend} has no restart for a rolling restart`);
        for (const host of target.serverHosts) {
          controls.mark(`restarting ${host}`);
          await target.restart(host);
          controls.mark(`${host} serves again`);
          await sleep(gapMs);
        }
        controls.mark('every member restarted', {});
      },
    },
  ];
}
