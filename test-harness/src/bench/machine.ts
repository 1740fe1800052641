import { cpus, loadavg, totalmem } from 'node:os';

/** The machine a run measured on, and how loaded it was (other work shares it: the figures move with that). */
export interface MachineNote {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly platform: string;
  /** The 1-minute load average sampled every 5 s during the run. */
  readonly load: { readonly min: number; readonly mean: number; readonly max: number; readonly samples: number };
}

/** Starts sampling the load; stop() returns the note. */
export function watchMachine(): { stop(): MachineNote } {
  const samples = [loadavg()[0]!];
  const timer = setInterval(() => samples.push(loadavg()[0]!), 5000);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      samples.push(loadavg()[0]!);
      const info = cpus();
      return {
        cpu: info[0]?.model.trim() ?? 'unknown',
        cores: info.length,
        memoryGiB: Math.round(totalmem() / 2 ** 30),
        node: process.version,
        platform: `${process.platform} ${process.arch}`,
        load: {
          min: Math.min(...samples),
          mean: samples.reduce((sum, value) => sum + value, 0) / samples.length,
          max: Math.max(...samples),
          samples: samples.length,
        },
      };
    },
  };
}

export function describeMachine(note: MachineNote): string {
  const { load } = note;
  return (
    `${note.cores} x ${note.cpu}, ${note.memoryGiB} GiB, ${note.platform}, node ${note.node}; ` +
    `1-min load average during the run ${load.min.toFixed(2)}-${load.max.toFixed(2)} (mean ${load.mean.toFixed(2)})`
  );
}
