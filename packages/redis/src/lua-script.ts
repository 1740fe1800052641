import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/** A Lua script run by EVALSHA, loaded with EVAL when the server does not know it yet. */
export class LuaScript {
  private readonly sha: string;

  constructor(private readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(client: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await client.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!String((error as Error).message).startsWith('NOSCRIPT')) throw error;
      return client.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}
