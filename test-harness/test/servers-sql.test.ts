// Smoke tests for the PostgreSQL and MariaDB servers the harness starts itself: reachable on loopback,
// not the machine's shared ones, and crash/pause/restart work on the same port and data dir, leaving
// no process behind. With HOLDFAST_REQUIRE_BACKENDS=all a missing server fails the run.
import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { type LocalDatabase, startMariadb, startPostgres } from '../src/servers/index.js';
import { mysqlGreeting, postgresReady } from '../src/servers/probes.js';
import { needLocalBinary, useBackend } from '../src/servers/vitest.js';

const portOf = (url: string): number => Number(new URL(url).port);

/** Those of `pids` that still exist, zombies included (an unreaped child is a leftover too). */
const stillThere = (pids: readonly number[]): number[] => pids.filter((pid) => existsSync(`/proc/${pid}`));

/** Resolves with the probe's answer, or 'no answer' when it neither answers nor fails within ms. */
function answerWithin(probe: Promise<boolean>, ms: number): Promise<boolean | 'no answer'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'no answer'>((r) => (timer = setTimeout(() => r('no answer'), ms)));
  // The probe goes on after we stop listening (it may even be answered after resume): never unhandled.
  return Promise.race([probe.catch(() => false), late]).finally(() => clearTimeout(timer));
}

const postgres = await useBackend('postgres');
describe.skipIf(!postgres.url)(`postgres (${postgres.label})`, () => {
  it('accepts a session, and is not the shared server on 5432', async () => {
    const url = new URL(postgres.url!);
    expect(url.port).not.toBe('5432');
    expect(await postgresReady(url.hostname, Number(url.port), decodeURIComponent(url.username), url.pathname.slice(1))).toBe(true);
  });
});

const mysql = await useBackend('mysql');
describe.skipIf(!mysql.url)(`mysql (${mysql.label})`, () => {
  it('greets with protocol 10, and is not the shared server on 3306', async () => {
    const url = new URL(mysql.url!);
    expect(url.port).not.toBe('3306');
    expect(await mysqlGreeting(url.hostname, Number(url.port))).toBe(true);
  });
});

interface Flavour {
  name: string;
  binary: 'postgres' | 'mariadbd';
  start: () => Promise<LocalDatabase>;
  answers: (port: number) => Promise<boolean>;
}

const FLAVOURS: Flavour[] = [
  {
    name: 'postgres',
    binary: 'postgres',
    start: startPostgres,
    answers: (port) => postgresReady('127.0.0.1', port, 'postgres', 'postgres'),
  },
  { name: 'mariadb', binary: 'mariadbd', start: startMariadb, answers: (port) => mysqlGreeting('127.0.0.1', port) },
];

for (const flavour of FLAVOURS) {
  const missing = await needLocalBinary(flavour.binary);
  describe.skipIf(missing !== null)(`local ${flavour.name} of our own`, () => {
    let db: LocalDatabase | undefined;
    afterAll(() => db?.stop(), 60_000);

    it('crashes, pauses and restarts on the same port and data dir, and stop leaves nothing behind', async () => {
      db = await flavour.start();
      const port = portOf(db.url);
      expect(port).toBe(db.port);
      expect(await flavour.answers(port)).toBe(true);
      const tempDir = db.dataDir.replace(/\/data$/, '');
      const first = db.processes();
      expect(first.length).toBeGreaterThanOrEqual(1);

      db.pause();
      expect(await answerWithin(flavour.answers(port), 500)).toBe('no answer');
      db.resume();
      expect(await flavour.answers(port)).toBe(true);

      await db.kill();
      expect(stillThere(first)).toEqual([]);
      await expect(flavour.answers(port)).rejects.toThrow();
      await db.restart();
      expect(await flavour.answers(port)).toBe(true);
      expect(existsSync(db.dataDir)).toBe(true);

      const second = db.processes();
      expect(second).not.toContain(first[0]);
      await db.stop();
      db = undefined;
      expect(existsSync(tempDir)).toBe(false);
      expect(stillThere(second)).toEqual([]);
    }, 120_000);
  });
}
