import zookeeper, { type Client } from 'node-zookeeper-client';
import { within } from '../helpers/within.js';
import { benchKey } from './measure.js';
import type { RoundTrip } from './side-by-side.js';

/** A callback call of node-zookeeper-client as a promise. */
function call<T>(start: (done: (error: unknown, value: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => start((error, value) => (error ? reject(error) : resolve(value))));
}

/** node-zookeeper-client (the adapter's own library) connected to `connectionString`, bounded. */
export async function rawZookeeper(connectionString: string): Promise<Client> {
  const client = zookeeper.createClient(connectionString, { sessionTimeout: 30_000, retries: 0 });
  const connected = new Promise<void>((resolve) => client.once('connected', () => resolve()));
  client.connect();
  try {
    await within(connected, 30_000, 'the raw ZooKeeper client to connect');
  } catch (error) {
    client.close();
    throw error;
  }
  return client;
}

/**
 * The recipe's round trips for an uncontended lock (Curator's InterProcessMutex): create an ephemeral
 * sequential node, list the key's children (the smallest holds), delete the node to unlock.
 */
export async function rawRecipe(client: Client): Promise<RoundTrip> {
  const dir = `/${benchKey('raw-recipe').replace(/\//g, '-')}`;
  await call<string>((done) => client.mkdirp(dir, done));
  return {
    subject: 'raw client: create ephemeral sequential + getChildren + delete (the recipe, 3 round trips)',
    async run() {
      const node = await call<string>((done) => client.create(`${dir}/lock-`, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, done));
      const children = await call<string[]>((done) => client.getChildren(dir, done));
      if (children.length !== 1) throw new Error(`raw recipe directory ${dir} unexpectedly has ${children.length} children`);
      await call<void>((done) => client.remove(node, -1, done));
    },
    close: () => call<void>((done) => client.remove(dir, -1, done)).catch(() => undefined),
  };
}
