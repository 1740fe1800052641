export type BackendKind = 'redis' | 'mongodb' | 'consul' | 'postgres' | 'mysql' | 'etcd' | 'zookeeper';

export const BACKEND_KINDS: readonly BackendKind[] = ['redis', 'mongodb', 'consul', 'postgres', 'mysql', 'etcd', 'zookeeper'];

export type ResolvedBackend =
  | {
      kind: BackendKind;
      url: string;
      /** env: a URL from HOLDFAST_TEST_<KIND>_URL; container: testcontainers; local: a binary started here. */
      source: 'env' | 'container' | 'local';
      /** What is behind the URL, e.g. "redis-server 7.0.15" or "FerretDB 1.24.2 (sqlite)". */
      server: string;
      stop(): Promise<void>;
    }
  | { kind: BackendKind; url: null; skipReason: string };

/**
 * A database server of the harness's own (PostgreSQL or MariaDB) on a free loopback port with its
 * data in a temp dir, which fault tests may crash, pause and restart.
 */
export interface LocalDatabase {
  /** postgres://… or mysql://…, with user and database. */
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** The server's live processes (PostgreSQL: the postmaster and its children; MariaDB: one). */
  processes(): number[];
  /** Crash the server: its connections drop at once, nothing is shut down cleanly. */
  kill(): Promise<void>;
  /** Start it again on the same port and data dir (crash recovery runs); resolves once it accepts connections. */
  restart(): Promise<void>;
  /** SIGSTOP the server's processes: connections stay open and nothing answers. */
  pause(): void;
  /** SIGCONT what pause() stopped. */
  resume(): void;
  /** Stops the server and removes its data dir. */
  stop(): Promise<void>;
}
