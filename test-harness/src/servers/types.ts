export type BackendKind = 'redis' | 'mongodb' | 'consul';

export const BACKEND_KINDS: readonly BackendKind[] = ['redis', 'mongodb', 'consul'];

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
