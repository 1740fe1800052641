import { removeTempDir } from './cleanup.js';
import { signalEach } from './proc-tree.js';
import type { ManagedProcess } from './process.js';
import type { LocalDatabase } from './types.js';

export interface DatabaseRecipe {
  url: string;
  port: number;
  /** The temp dir holding everything; removed by stop(). */
  dir: string;
  dataDir: string;
  /** Starts the server on `port` with `dataDir`; resolves once it accepts connections. */
  launch(): Promise<ManagedProcess>;
  /** Crashes the running server and resolves once every process of it is gone. */
  crash(server: ManagedProcess): Promise<void>;
  /** The processes that make up the running server (what pause() stops). */
  processes(server: ManagedProcess): number[];
}

/** Launches the server once and wraps it in the kill/restart/pause/stop controls tests use. */
export async function startLocalDatabase(recipe: DatabaseRecipe): Promise<LocalDatabase> {
  let proc: ManagedProcess | undefined;
  try {
    proc = await recipe.launch();
  } catch (err) {
    removeTempDir(recipe.dir);
    throw err;
  }
  let paused: number[] = [];
  const current = (): ManagedProcess => {
    if (!proc || proc.exited()) throw new Error(`${recipe.url} is not running`);
    return proc;
  };
  const resume = (): void => {
    signalEach(paused, 'SIGCONT');
    paused = [];
  };
  return {
    url: recipe.url,
    port: recipe.port,
    dataDir: recipe.dataDir,
    processes: () => (proc && !proc.exited() ? recipe.processes(proc) : []),
    kill: async () => {
      const p = current();
      resume();
      await recipe.crash(p);
    },
    restart: async () => {
      resume();
      await proc?.stop();
      proc = undefined;
      proc = await recipe.launch();
    },
    pause: () => {
      resume();
      paused = recipe.processes(current());
      signalEach(paused, 'SIGSTOP');
    },
    resume,
    stop: async () => {
      resume();
      await proc?.stop();
      removeTempDir(recipe.dir);
    },
  };
}
