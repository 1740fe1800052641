// Grant+release cost on FerretDB as the version records grow (issue 15a). Usage: node measure-growth.mjs [rounds]

import { createMongoProvider } from '@holdfast/mongodb';
import { startFerretdb } from '@holdfast/test-harness/servers';
import { MongoClient } from 'mongodb';

const rounds = Number(process.argv[2] ?? 5000);
const server = await startFerretdb();
const url = `${server.url}?holdfastPingInterval=1s&holdfastLockExpiration=30s`;
const raw = new MongoClient(server.url);
const commands = { count: 0 };
const client = new MongoClient(server.url, { monitorCommands: true });
client.on('commandStarted', () => commands.count++);
const byName = new Map();
client.on('commandSucceeded', (event) => {
  const entry = byName.get(event.commandName) ?? { n: 0, ms: 0 };
  entry.n++;
  entry.ms += event.duration;
  byName.set(event.commandName, entry);
});
const perCommand = () => [...byName].map(([name, { n, ms }]) => `${name} ${(ms / n).toFixed(1)}`).join(', ');
const locks = createMongoProvider({ url, client });
try {
  const key = 'growth/one';
  const timeFindOne = async (collection, id) => {
    const t = performance.now();
    for (let i = 0; i < 50; i++) await raw.db().collection(collection).findOne({ _id: id });
    return (performance.now() - t) / 50;
  };
  for (let done = 0; done < rounds; ) {
    const batch = Math.min(500, rounds - done);
    const before = commands.count;
    byName.clear();
    const t = performance.now();
    for (let i = 0; i < batch; i++) {
      const lock = await locks.tryAcquire(key);
      if (!lock) throw new Error('busy');
      await lock.release();
    }
    const ms = (performance.now() - t) / batch;
    done += batch;
    const records = await raw.db().collection('locks.versions').estimatedDocumentCount();
    const idRead = await timeFindOne('locks.versions', `1:${key}`);
    const mirrorRead = await timeFindOne('locks', key);
    console.log(
      `${done} grants: ${ms.toFixed(2)} ms/grant+release, ${((commands.count - before) / batch).toFixed(1)} commands, records ${records}, findOne by _id: versions ${idRead.toFixed(2)} ms, locks ${mirrorRead.toFixed(2)} ms; per command (ms): ${perCommand()}`,
    );
  }
} finally {
  await locks.close();
  await client.close();
  await raw.close();
  await server.stop();
}
