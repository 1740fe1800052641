import { createHash } from 'node:crypto';
import type { ChainableCommander, Redis } from 'ioredis';

/** A Lua script run by EVALSHA, loaded with EVAL when the server does not know it yet. */
export class LuaScript {
  private readonly sha: string;

  constructor(private readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /**
   * EVALSHA, then EVAL on NOSCRIPT: the EVAL goes out one round trip later, so commands sent on
   * the connection meanwhile run before it. Use `evaluate` where that order matters.
   */
  run(client: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    return client.evalsha(this.sha, keys.length, ...keys, ...args).catch((error: unknown) => {
      if (!String((error as Error).message).startsWith('NOSCRIPT')) throw error;
      return client.eval(this.source, keys.length, ...keys, ...args);
    });
  }

  /** EVAL with the source: runs in the order it was sent, whatever the server's script cache holds. */
  evaluate(client: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    return client.eval(this.source, keys.length, ...keys, ...args);
  }

  /** Makes sure the server knows the script, before queueing it in a pipeline (which cannot fall back to EVAL). */
  async load(client: Redis): Promise<void> {
    await client.script('LOAD', this.source);
  }

  queue(pipeline: ChainableCommander, keys: readonly string[], args: readonly (string | number)[]): void {
    pipeline.evalsha(this.sha, keys.length, ...keys, ...args);
  }
}
