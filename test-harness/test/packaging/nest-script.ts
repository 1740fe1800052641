/**
 * Issue 27 item 3: a small Nest application from the installed tarballs (@holdfast/nestjs and the Nest
 * packages npm installs as its peers), in plain JavaScript, so the decorators are applied by hand as
 * TypeScript would apply them. The same body runs as an ES module and as CommonJS; argv[2] is the
 * backend's URL. It prints one JSON line of facts, and must then exit by itself: app.close() has to
 * leave nothing running.
 */
const BODY = `
const url = process.argv[2];

function decorate(target, name, decorator) {
  Object.defineProperty(target.prototype, name, decorator(target.prototype, name, Object.getOwnPropertyDescriptor(target.prototype, name)));
}

class Jobs {
  constructor(locks) { this.locks = locks; this.gate = undefined; this.entered = undefined; }
  async place(order) { return currentLock().key; }
  async hold(order) { this.entered(); await this.gate; return 'held'; }
  async nightly() { this.entered(); await this.gate; return 'ran'; }
}
decorate(Jobs, 'place', WithLock('order:{0.id}'));
decorate(Jobs, 'hold', WithLock('order:{0.id}'));
decorate(Jobs, 'nightly', LeaderOnly('packaged/nightly'));
Inject(LOCK_PROVIDER)(Jobs, undefined, 0);
Injectable()(Jobs);

class AppModule {}
Module({ imports: [HoldfastModule.forRoot({ url })], providers: [Jobs] })(AppModule);

const start = () => NestFactory.createApplicationContext(AppModule, { logger: false });
const opened = (jobs) => { let open; jobs.gate = new Promise((r) => (open = r)); const entered = new Promise((r) => (jobs.entered = r)); return { open, entered }; };
const codeOf = (work) => work.then(() => 'resolved', (error) => error.code);

const [a, b] = [await start(), await start()];
const [jobsA, jobsB] = [a.get(Jobs), b.get(Jobs)];
const key = await jobsA.place({ id: 7 });
const missingPath = await codeOf(jobsA.place({}));

const hold = opened(jobsA);
const holding = jobsA.hold({ id: 8 });
await hold.entered;
const busy = await codeOf(jobsB.hold({ id: 8 }));
hold.open();
await holding;

const gates = [opened(jobsA), opened(jobsB)];
const runs = [jobsA.nightly(), jobsB.nightly()];
const first = await Promise.race(runs);
for (const gate of gates) gate.open();
const leaderOnly = (await Promise.all(runs)).map(String).sort();

const locks = a.get(LOCK_PROVIDER);
await a.close();
await b.close();
const afterClose = await codeOf(locks.acquire('packaged/after', { waitMs: 0 }));
console.log(JSON.stringify({ key, missingPath, busy, skippedFirst: first === undefined, leaderOnly, afterClose, backend: locks.backend }));
`;

export const NEST_ESM = `import { HoldfastModule, LOCK_PROVIDER, WithLock, LeaderOnly, currentLock } from '@holdfast/nestjs';
import { Inject, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
${BODY}`;

export const NEST_CJS = `const { HoldfastModule, LOCK_PROVIDER, WithLock, LeaderOnly, currentLock } = require('@holdfast/nestjs');
const { Inject, Injectable, Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
(async () => {
${BODY}
})().catch((error) => { console.error(error); process.exitCode = 1; });
`;
