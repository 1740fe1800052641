import type { MongoClient } from 'mongodb';

export interface MongoServer {
  /** e.g. "FerretDB v1.24.2 (MongoDB 7.0.42 wire protocol), standalone" or "MongoDB 7.0.14, replica set rs0". */
  readonly label: string;
  readonly ferretdb: boolean;
  /** Change streams need a replica set (or a sharded cluster) on a real mongod. */
  readonly changeStreams: boolean;
}

/** What the server says it is (buildInfo, hello), not what the tooling that started it called it. */
export async function describeMongo(client: MongoClient): Promise<MongoServer> {
  const admin = client.db().admin();
  const build = (await admin.command({ buildInfo: 1 })) as { version?: string; ferretdbVersion?: string };
  const hello = (await admin.command({ hello: 1 })) as { setName?: string; msg?: string };
  const topology = hello.setName ? `replica set ${hello.setName}` : hello.msg === 'isdbgrid' ? 'sharded (mongos)' : 'standalone';
  const ferretdb = build.ferretdbVersion !== undefined;
  const product = ferretdb ? `FerretDB ${build.ferretdbVersion} (MongoDB ${build.version} wire protocol)` : `MongoDB ${build.version}`;
  return { label: `${product}, ${topology}`, ferretdb, changeStreams: !ferretdb && topology !== 'standalone' };
}
