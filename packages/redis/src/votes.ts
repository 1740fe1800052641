import { BackendError, InvalidArgumentError } from '@holdfast/core';
import type { RedisNode } from './redis-node.js';
import type { Session } from './session.js';

/** A node's answer, and the session it came on (undefined: the node was never reached). */
export interface Answer<T> {
  readonly value: T;
  readonly session: Session | undefined;
}

/** The answers of every node to one request: values from those that answered, errors from the rest. */
export class Votes<T> {
  readonly answers: T[] = [];
  readonly errors: unknown[] = [];
  private readonly voters: Answer<T>[] = [];

  constructor(
    results: readonly PromiseSettledResult<Answer<T>>[],
    readonly quorum: number,
    /** Nodes asked; those that have not answered yet are neither answers nor errors. */
    readonly nodes: number,
  ) {
    for (const result of results) this.add(result);
  }

  /** One more node's result (poll() fills one Votes as the answers come, rather than a new one per answer). */
  add(result: PromiseSettledResult<Answer<T>>): void {
    if (result.status === 'fulfilled') {
      this.answers.push(result.value.value);
      this.voters.push(result.value);
    } else {
      this.errors.push(result.reason);
    }
  }

  /** Nodes that have not answered yet (the outcome was decided without them). */
  get pending(): number {
    return this.nodes - this.answers.length - this.errors.length;
  }

  /** Each answer with the session it came on. */
  get answered(): readonly Answer<T>[] {
    return this.voters;
  }

  count(predicate: (answer: T) => boolean): number {
    let count = 0;
    for (const answer of this.answers) if (predicate(answer)) count++;
    return count;
  }

  /**
   * Whether answers that the key is in use as another kind decide the attempt: only from a majority
   * of nodes, as a valid use stands on one; fewer are a use on its way out (a release that answered at
   * a majority and has not reached the last node yet), so the attempt hears every node out first.
   * Undefined while none came: the caller's own rule decides.
   */
  conflictDecides(isConflict: (answer: T) => boolean): boolean | undefined {
    const conflicts = this.count(isConflict);
    if (conflicts === 0) return undefined;
    return conflicts >= this.quorum || this.pending === 0;
  }

  /**
   * The sessions whose answer matches: a node's answer counts for as long as the connection it
   * came on stays open.
   */
  votesFor(predicate: (answer: T) => boolean): Session[] {
    return this.voters.filter((voter) => predicate(voter.value) && voter.session !== undefined).map((voter) => voter.session!);
  }

  /** So many nodes failed that the others cannot form a majority whatever they said. */
  get tooManyFailed(): boolean {
    return this.errors.length > this.nodes - this.quorum;
  }

  /** A node that refuses the configuration (its db) makes the whole call a configuration error. */
  get refusal(): InvalidArgumentError | undefined {
    return this.errors.find((error): error is InvalidArgumentError => error instanceof InvalidArgumentError);
  }

  failure(operation: string): BackendError | InvalidArgumentError {
    if (this.refusal) return this.refusal;
    const cause = this.errors[0];
    const detail =
      this.nodes === 1
        ? `${operation}: ${cause instanceof Error ? cause.message : String(cause)}`
        : `${operation}: ${this.errors.length} of ${this.nodes} nodes failed, a majority of ${this.quorum} is needed` +
          ` (first: ${cause instanceof Error ? cause.message : String(cause)})`;
    return new BackendError('redis', detail, cause);
  }
}

export interface Decision<T> {
  /** True when the answers so far settle the outcome, whatever the other nodes say. */
  readonly decided: (votes: Votes<T>) => boolean;
  /** How long to wait for the other nodes' answers after that (they still count when they come). */
  readonly graceMs?: number;
  /** Hears each answer that comes after the outcome was settled (an error is not an answer). */
  readonly late?: (answer: Answer<T>) => void;
}

/**
 * Asks every node at once. Resolves when all have answered or failed, or once `decision` says the
 * answers so far settle the outcome (and its grace ran out): a hung minority does not hold up
 * the majority.
 */
export function poll<T>(
  nodes: readonly RedisNode[],
  quorum: number,
  ask: (node: RedisNode) => Promise<Answer<T>>,
  decision?: Decision<T>,
): Promise<Votes<T>> {
  if (nodes.length === 1) {
    return ask(nodes[0]!).then(
      (value) => new Votes([{ status: 'fulfilled', value }], quorum, 1),
      (reason: unknown) => new Votes([{ status: 'rejected', reason }], quorum, 1),
    );
  }
  return new Promise((resolve) => {
    // Filled as the answers come; once resolved it is not touched again (later answers go to `late`).
    const votes = new Votes<T>([], quorum, nodes.length);
    let finished = false;
    let grace: NodeJS.Timeout | undefined;
    const finish = (): void => {
      finished = true;
      clearTimeout(grace);
      resolve(votes);
    };
    const settle = (result: PromiseSettledResult<Answer<T>>): void => {
      if (finished) {
        if (result.status === 'fulfilled') decision?.late?.(result.value);
        return;
      }
      votes.add(result);
      if (votes.pending === 0) finish();
      else if (grace === undefined && decision?.decided(votes)) {
        if (decision.graceMs) grace = setTimeout(finish, decision.graceMs);
        else finish();
      }
    };
    for (const node of nodes) {
      ask(node).then(
        (value) => settle({ status: 'fulfilled', value }),
        (reason: unknown) => settle({ status: 'rejected', reason }),
      );
    }
  });
}
