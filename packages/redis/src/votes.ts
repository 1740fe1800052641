import { BackendError } from '@holdfast/core';

/** The answers of every node to one request: values from those that answered, errors from the rest. */
export class Votes<T> {
  readonly answers: T[] = [];
  readonly errors: unknown[] = [];

  constructor(
    results: PromiseSettledResult<T>[],
    readonly quorum: number,
  ) {
    for (const result of results) {
      if (result.status === 'fulfilled') this.answers.push(result.value);
      else this.errors.push(result.reason);
    }
  }

  get nodes(): number {
    return this.answers.length + this.errors.length;
  }

  count(predicate: (answer: T) => boolean): number {
    return this.answers.filter(predicate).length;
  }

  /** So many nodes failed that the others cannot form a majority whatever they said. */
  get tooManyFailed(): boolean {
    return this.errors.length > this.nodes - this.quorum;
  }

  failure(operation: string): BackendError {
    const cause = this.errors[0];
    const detail = this.nodes === 1
      ? `${operation}: ${cause instanceof Error ? cause.message : String(cause)}`
      : `${operation}: ${this.errors.length} of ${this.nodes} nodes failed, a majority of ${this.quorum} is needed` +
        ` (first: ${cause instanceof Error ? cause.message : String(cause)})`;
    return new BackendError('redis', detail, cause);
  }
}

export async function poll<N, T>(nodes: readonly N[], quorum: number, ask: (node: N) => Promise<T>): Promise<Votes<T>> {
  return new Votes(await Promise.allSettled(nodes.map(ask)), quorum);
}
