import zookeeper, { type Client } from 'node-zookeeper-client';

/**
 * A plain node-zookeeper-client beside the providers under test, to look at the znodes themselves
 * (how many contenders a key has) without going through the adapter.
 */
export async function rawClient(servers: string): Promise<Client & AsyncDisposable> {
  const client = zookeeper.createClient(servers, { sessionTimeout: 10_000, spinDelay: 100 });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no connection to ${servers} within 10 s`)), 10_000);
    client.once('connected', () => {
      clearTimeout(timer);
      resolve();
    });
    client.connect();
  });
  return Object.assign(client, { [Symbol.asyncDispose]: async () => client.close() });
}

/** The children of `path` (empty when it does not exist). */
export function childrenOf(client: Client, path: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    client.getChildren(path, (error, children) => {
      if (error && (error as { getCode?: () => number }).getCode?.() === zookeeper.Exception.NO_NODE) resolve([]);
      else if (error) reject(error);
      else resolve(children);
    });
  });
}
