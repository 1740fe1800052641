import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@holdfast/test-harness/servers';
import { MongoClient } from 'mongodb';

/**
 * A FerretDB that can be stopped and started again on the same port with the same data, or frozen
 * (SIGSTOP) and thawed, for the unlock-queue and hung-server cases (the servers tooling restarts
 * Redis and Consul members, not FerretDB).
 */
export class RestartableFerretdb {
  private process: ChildProcess | undefined;
  private dir = mkdtempSync(join(tmpdir(), 'holdfast-mongodb-restart-'));

  private constructor(
    private readonly binary: string,
    readonly port: number,
  ) {}

  static async start(binary: string): Promise<RestartableFerretdb> {
    const server = new RestartableFerretdb(binary, await freePort());
    await server.resume();
    return server;
  }

  get url(): string {
    return `mongodb://127.0.0.1:${this.port}/holdfast`;
  }

  async resume(): Promise<void> {
    this.process = spawn(
      this.binary,
      [
        '--handler=sqlite',
        `--sqlite-url=file:${this.dir}/`,
        `--listen-addr=127.0.0.1:${this.port}`,
        `--state-dir=${this.dir}`,
        '--telemetry=disable',
        '--debug-addr=-',
        '--log-level=error',
      ],
      { stdio: 'ignore' },
    );
    const deadline = Date.now() + 30_000;
    for (;;) {
      const probe = new MongoClient(this.url, { serverSelectionTimeoutMS: 300 });
      try {
        await probe.db().command({ hello: 1 });
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
      } finally {
        await probe.close();
      }
    }
  }

  /** SIGSTOP: the server keeps its port and accepts connections (the kernel does) but answers nothing. */
  freeze(): void {
    this.process?.kill('SIGSTOP');
  }

  thaw(): void {
    this.process?.kill('SIGCONT');
  }

  async pause(): Promise<void> {
    const child = this.process;
    this.process = undefined;
    if (!child || child.exitCode !== null) return;
    child.kill('SIGKILL');
    child.kill('SIGCONT');
    await once(child, 'exit');
  }

  /** Stopped and started on the same port with an empty data directory: a restart that lost its data. */
  async restartEmpty(): Promise<void> {
    await this.pause();
    rmSync(this.dir, { recursive: true, force: true });
    this.dir = mkdtempSync(join(tmpdir(), 'holdfast-mongodb-restart-'));
    await this.resume();
  }

  async stop(): Promise<void> {
    await this.pause();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
