// Which filters FerretDB 1.24 (SQLite) pushes down to SQLite. Usage: node probe-explain.mjs
import { startFerretdb } from '@holdfast/test-harness/servers';
import { MongoClient } from 'mongodb';

const server = await startFerretdb();
const client = await new MongoClient(server.url).connect();
const records = client.db().collection('probe');
try {
  await records.insertMany(Array.from({ length: 2000 }, (_, i) => ({ _id: `${i + 1}:key`, key: 'key', version: i + 1, n: i })));
  for (const filter of [{ _id: 'x' }, { key: 'key' }, { version: 5 }, { n: 5 }, { _id: { $in: ['a', 'b'] } }, { key: 'key', version: 5 }]) {
    const t = performance.now();
    for (let i = 0; i < 5; i++) await records.find(filter).toArray();
    const plan = await records.find(filter).explain();
    console.log(
      JSON.stringify(filter),
      `${((performance.now() - t) / 5).toFixed(1)} ms`,
      'pushdown',
      plan.filterPushdown,
      JSON.stringify(plan.queryPlanner?.Plan),
    );
  }
} finally {
  await client.close();
  await server.stop();
}
