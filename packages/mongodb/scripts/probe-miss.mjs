// Forms of a read by _id that misses, on a FerretDB collection of 10,000 documents. Usage: node probe-miss.mjs
import { startFerretdb } from '@holdfast/test-harness/servers';
import { MongoClient } from 'mongodb';
import { startFerretdbOnPostgres } from './ferretdb-postgres.mjs';

const server = process.env.ON_POSTGRES ? await startFerretdbOnPostgres() : await startFerretdb();
const client = await new MongoClient(server.url).connect();
const db = client.db();
const records = db.collection('probe');
const time = async (what, op, n = 20) => {
  const t = performance.now();
  for (let i = 0; i < n; i++) await op(i);
  console.log(`${what}: ${((performance.now() - t) / n).toFixed(2)} ms`);
};
try {
  await records.insertMany(Array.from({ length: 10_000 }, (_, i) => ({ _id: `${i + 1}:key`, key: 'key', version: i + 1, state: 0 })));
  await time('findOne hit (first row)', () => records.findOne({ _id: '1:key' }));
  await time('findOne hit (middle row)', () => records.findOne({ _id: '5000:key' }));
  await time('findOne hit (last row)', () => records.findOne({ _id: '10000:key' }));
  await time('findOneAndUpdate hit (last row)', () => records.findOneAndUpdate({ _id: '9999:key' }, { $set: { a: 1 } }));
  await time('findOne miss', () => records.findOne({ _id: 'none' }));
  await time('find by key (10k match)', () => records.find({ key: 'key' }, { sort: { version: -1 }, limit: 1 }).toArray(), 5);
  await time('find by key (no match)', () => records.find({ key: 'other' }, { sort: { version: -1 }, limit: 1 }).toArray());
  await time('find by key+version (1 match)', () => records.find({ key: 'key', version: 5000 }).toArray());
  await time('findOne miss $eq', () => records.findOne({ _id: { $eq: 'none' } }));
  await time('find miss limit 1', () => records.find({ _id: 'none' }).limit(1).toArray());
  await time('countDocuments miss', () => records.countDocuments({ _id: 'none' }));
  await time('insert new', (i) => records.insertOne({ _id: `new-${i}` }));
  await time('insert duplicate', () => records.insertOne({ _id: '1:key' }).catch(() => undefined));
  await time('replaceOne hit', () => records.replaceOne({ _id: '1:key' }, { state: 1 }));
  await time('replaceOne miss upsert', (i) => records.replaceOne({ _id: `up-${i}` }, { state: 1 }, { upsert: true }));
  await time('updateOne miss', () => records.updateOne({ _id: 'none' }, { $set: { a: 1 } }));
  await time('deleteOne hit', (i) => records.deleteOne({ _id: `${i + 100}:key` }));
  await time('deleteOne miss', () => records.deleteOne({ _id: 'none' }));
  await time('findOneAndUpdate hit', () => records.findOneAndUpdate({ _id: '2:key' }, { $set: { a: 1 } }));
  await time(
    'explain miss',
    async () => {
      const plan = await records.find({ _id: 'none' }).explain();
      if (!globalThis.printed) console.log(JSON.stringify(plan).slice(0, 600));
      globalThis.printed = true;
    },
    1,
  );
} finally {
  await client.close();
  await server.stop();
}
