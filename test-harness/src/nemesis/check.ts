import type { RecordedEvent } from './events.js';

/** A fault the runner injected or removed, when (ms since the run began). */
export interface FaultMark {
  at: number;
  action: string;
  /** True for the step that ends every fault (heal, clock back to real time). */
  heal?: boolean;
  /** The workers the fault cut off: recovery is their next grant (every worker's when absent). */
  affected?: number[];
}

export interface CallBounds {
  acquire: number;
  isHeld: number;
  release: number;
}

export interface HistoryFigures {
  grants: number;
  /** Pairs of grants of one key whose holds (acquire resolved .. lost or release began) overlap in real time. */
  doubleGrants: number;
  /** The longest such overlap, in ms. */
  longestOverlapMs: number;
  /**
   * Writes the fence accepted from a grant while a grant of the key with a higher token had already
   * begun. Must be 0 whatever the backend: it is what fencing is for.
   */
  staleWritesAccepted: number;
  /**
   * Grants of a key given the same token, or a grant that began after an earlier hold of the key had
   * ended, with a token not above it. Overlapping holds are double grants, not regressions: a grant
   * issued first may reach its holder last.
   */
  tokenRegressions: number;
  /** Holds that ended because the signal said the lock was lost. */
  lossesReported: number;
  /** Holds whose holder released believing it held, while the backend said it no longer did. */
  lossesUntold: number;
  /** Lock calls that took longer than their bound, or were still running past it when the run ended. */
  hungCalls: number;
  /** Calls by name that ended with an error, by code. */
  callErrors: Record<string, number>;
  /** For each heal: ms until the next grant to a worker the fault cut off (null: none before the run ended). */
  recoveryMs: (number | null)[];
  /**
   * For each heal that names the workers its fault cut off: grants to the other workers between the
   * fault and the heal, the side that kept a majority going on (a failover that served them).
   */
  grantsDuringFaults: number[];
  overlapDetails: string[];
}

interface Hold {
  grant: string;
  token: bigint;
  worker: number;
  key: string;
  begin: number;
  end: number | null;
}

/** Reads a run's history of worker events; `endedAt` closes holds and calls still open. */
export function checkHistory(
  events: readonly RecordedEvent[],
  faults: readonly FaultMark[],
  bounds: CallBounds,
  endedAt: number,
): HistoryFigures {
  const holds = new Map<string, Hold>();
  const figures: HistoryFigures = {
    grants: 0,
    doubleGrants: 0,
    longestOverlapMs: 0,
    staleWritesAccepted: 0,
    tokenRegressions: 0,
    lossesReported: 0,
    lossesUntold: 0,
    hungCalls: 0,
    callErrors: {},
    recoveryMs: [],
    grantsDuringFaults: [],
    overlapDetails: [],
  };
  const openCalls = new Map<string, number>();
  for (const event of events) {
    switch (event.op) {
      case 'begin':
        figures.grants++;
        holds.set(event.grant, {
          grant: event.grant,
          token: BigInt(event.token),
          worker: event.worker,
          key: event.key,
          begin: event.at,
          end: null,
        });
        break;
      case 'write':
        if (event.accepted && newerBegun(holds, event.key, BigInt(event.token))) figures.staleWritesAccepted++;
        break;
      case 'lost':
        figures.lossesReported++;
        closeHold(holds, event.grant, event.at);
        break;
      case 'end':
        closeHold(holds, event.grant, event.at);
        break;
      case 'asked':
        // Told meanwhile: the signal reported the loss, after the hold's end but before isHeld() answered.
        if (event.toldMeanwhile !== undefined) figures.lossesReported++;
        else if (event.held === false) figures.lossesUntold++;
        break;
      case 'call': {
        const id = `${event.worker}:${event.name}`;
        if (event.phase === 'start') openCalls.set(id, event.at);
        else {
          openCalls.delete(id);
          if ((event.ms ?? 0) > bounds[event.name]) figures.hungCalls++;
          if (event.code) figures.callErrors[`${event.name}:${event.code}`] = (figures.callErrors[`${event.name}:${event.code}`] ?? 0) + 1;
        }
        break;
      }
    }
  }
  for (const [id, started] of openCalls) {
    const name = id.split(':')[1] as keyof CallBounds;
    if (endedAt - started > bounds[name]) figures.hungCalls++;
  }
  countOverlaps([...holds.values()], endedAt, figures);
  const begins = events.filter((event) => event.op === 'begin');
  for (const heal of faults.filter((fault) => fault.heal)) {
    const next = begins.find((event) => event.at >= heal.at && (!heal.affected || heal.affected.includes(event.worker)))?.at;
    figures.recoveryMs.push(next === undefined ? null : Math.round(next - heal.at));
  }
  for (const [index, heal] of faults.entries()) {
    if (!heal.heal || !heal.affected) continue;
    // The fault is the mark just before its heal (each step marks its fault, then its heal).
    const since = faults[index - 1]?.at ?? 0;
    const others = begins.filter((event) => event.at >= since && event.at < heal.at && !heal.affected!.includes(event.worker));
    figures.grantsDuringFaults.push(others.length);
  }
  return figures;
}

function newerBegun(holds: Map<string, Hold>, key: string, token: bigint): boolean {
  for (const hold of holds.values()) if (hold.key === key && hold.token > token) return true;
  return false;
}

function closeHold(holds: Map<string, Hold>, grant: string, at: number): void {
  const hold = holds.get(grant);
  if (hold && hold.end === null) hold.end = at;
}

function countOverlaps(holds: Hold[], endedAt: number, figures: HistoryFigures): void {
  const byKey = new Map<string, Hold[]>();
  for (const hold of holds) byKey.set(hold.key, [...(byKey.get(hold.key) ?? []), hold]);
  for (const list of byKey.values()) {
    list.sort((a, b) => a.begin - b.begin);
    const tokens = new Set<bigint>();
    let highestEnded: bigint | null = null;
    const ended = [...list].filter((hold) => hold.end !== null).sort((a, b) => a.end! - b.end!);
    for (const hold of list) {
      if (tokens.has(hold.token)) figures.tokenRegressions++;
      tokens.add(hold.token);
      // Every hold that ended before this one began must carry a lower token.
      while (ended.length > 0 && ended[0]!.end! <= hold.begin) {
        const done = ended.shift()!;
        if (highestEnded === null || done.token > highestEnded) highestEnded = done.token;
      }
      if (highestEnded !== null && hold.token <= highestEnded) figures.tokenRegressions++;
    }
    for (let i = 0; i < list.length; i++) {
      const earlier = list[i]!;
      const earlierEnd = earlier.end ?? endedAt;
      for (let j = i + 1; j < list.length && list[j]!.begin < earlierEnd; j++) {
        const later = list[j]!;
        const overlap = Math.min(earlierEnd, later.end ?? endedAt) - later.begin;
        figures.doubleGrants++;
        figures.longestOverlapMs = Math.max(figures.longestOverlapMs, Math.round(overlap));
        if (figures.overlapDetails.length < 10)
          figures.overlapDetails.push(
            `${earlier.key}: ${later.grant} began at ${Math.round(later.begin)} ms while ${earlier.grant} (since ${Math.round(earlier.begin)} ms) held it for ${Math.round(overlap)} ms more`,
          );
      }
    }
  }
}
