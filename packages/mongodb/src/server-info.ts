import type { Db } from 'mongodb';

/** What `serverStatus` says about the server's clock and, on a replica set, its current election. */
export interface ServerInfo {
  readonly serverTime: Date;
  /** `repl.electionId` as a hex string; undefined on a standalone server or FerretDB. */
  readonly electionId: string | undefined;
}

/** Reads the server's clock. Swappable (settings.readServerInfo) so tests can skew what a contender sees. */
export type ServerInfoReader = (db: Db, signal?: AbortSignal) => Promise<ServerInfo>;

/** getServerInfo: `serverStatus` -> localTime and repl.electionId. */
export const readServerStatus: ServerInfoReader = async (db, signal) => {
  const status = await db.command({ serverStatus: 1 }, { signal });
  const electionId = (status['repl'] as { electionId?: { toHexString(): string } } | undefined)?.electionId;
  return { serverTime: status['localTime'] as Date, electionId: electionId?.toHexString() };
};
