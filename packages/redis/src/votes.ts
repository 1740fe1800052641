import { BackendError, InvalidArgumentError } from '@holdfast/core';
import type { RedisNode } from './redis-node.js';

/** A node's answer counts for as long as the connection (session) it came on is still open. */
export interface Vote {
  readonly node: RedisNode;
  readonly session: number;
}

export interface Answer<T> {
  readonly value: T;
  readonly vote: Vote;
}

/** The answers of every node to one request: values from those that answered, errors from the rest. */
export class Votes<T> {
  readonly answers: T[] = [];
  readonly errors: unknown[] = [];
  private readonly voters: Answer<T>[] = [];

  constructor(
    results: PromiseSettledResult<Answer<T>>[],
    readonly quorum: number,
  ) {
    for (const result of results) {
      if (result.status === 'fulfilled') {
        this.answers.push(result.value.value);
        this.voters.push(result.value);
      } else {
        this.errors.push(result.reason);
      }
    }
  }

  get nodes(): number {
    return this.answers.length + this.errors.length;
  }

  count(predicate: (answer: T) => boolean): number {
    return this.answers.filter(predicate).length;
  }

  /** The nodes (and sessions) whose answer matches. */
  votesFor(predicate: (answer: T) => boolean): Vote[] {
    return this.voters.filter((voter) => predicate(voter.value)).map((voter) => voter.vote);
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
    const detail = this.nodes === 1
      ? `${operation}: ${cause instanceof Error ? cause.message : String(cause)}`
      : `${operation}: ${this.errors.length} of ${this.nodes} nodes failed, a majority of ${this.quorum} is needed` +
        ` (first: ${cause instanceof Error ? cause.message : String(cause)})`;
    return new BackendError('redis', detail, cause);
  }
}

export async function poll<T>(nodes: readonly RedisNode[], quorum: number, ask: (node: RedisNode) => Promise<Answer<T>>): Promise<Votes<T>> {
  return new Votes(await Promise.allSettled(nodes.map(ask)), quorum);
}
