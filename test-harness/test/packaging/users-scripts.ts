/**
 * Scripts a fresh app runs from the installed tarballs, one per item of issue 27 that a user meets
 * first: each prints one JSON line of facts that packaging.test.ts asserts.
 */

/** Item 1: a backend that never answered (a closed loopback port, argv[2]) fails a waiting acquire at once. */
export const NEVER_ANSWERED = `import { createLockProvider } from '@holdfast/core';
const locks = await createLockProvider('redis://127.0.0.1:' + process.argv[2], { callTimeoutMs: 2000 });
const started = Date.now();
let code = null;
let message = '';
try {
  await locks.acquire('packaged/never-answered');
} catch (error) {
  code = error.code;
  message = error.message;
}
await locks.close();
console.log(JSON.stringify({ code, neverAnswered: /never answered/.test(message), ms: Date.now() - started }));
`;

/** Item 4: runExclusive on memory: one run at a time, the lock kept until atLeastFor, then free. */
export const SCHEDULED = `import { createLockProvider, runExclusive } from '@holdfast/core';
const a = await createLockProvider('memory:');
const b = await createLockProvider('memory:');
const started = Date.now();
let skipped;
const first = await runExclusive(a, 'packaged/job', async () => {
  skipped = await runExclusive(b, 'packaged/job', () => 'twice', { atMostFor: '5s' });
  return 'once';
}, { atMostFor: '5s', atLeastFor: '1s' });
const keptAfterJob = (await b.tryAcquire('packaged/job')) === null;
let freeAt = null;
while (freeAt === null && Date.now() - started < 5000) {
  const lock = await b.tryAcquire('packaged/job');
  if (lock) { freeAt = Date.now() - started; await lock.release(); }
  else await new Promise((resolve) => setTimeout(resolve, 20));
}
// The last run keeps its lock for 30 s on its lease: the process must still exit at once.
await runExclusive(a, 'packaged/last', () => undefined, { atMostFor: '60s', atLeastFor: '30s' });
await a.close();
await b.close();
console.log(JSON.stringify({ ran: first.ran, value: first.value, skipped: skipped.ran, keptAfterJob, freeAt }));
`;

/** Item 7: a lock handed off as JSON and resumed by another provider, same token. */
export const HAND_OFF = `import { createLockProvider } from '@holdfast/core';
const web = await createLockProvider('memory:');
const worker = await createLockProvider('memory:');
const lock = await web.acquire('packaged/invoice', { ttlMs: 2000 });
const proof = JSON.stringify(lock.handOff());
const oldSignal = lock.signal.reason?.code;
const resumed = await worker.resume(proof);
await new Promise((resolve) => setTimeout(resolve, 2500));
const stillHeld = !resumed.signal.aborted && (await web.inspect('packaged/invoice'))?.token === resumed.token;
await resumed.release();
let staleCode = null;
try { await worker.resume(proof); } catch (error) { staleCode = error.code; }
await web.close();
await worker.close();
console.log(JSON.stringify({ sameToken: resumed.token === lock.token, oldSignal, stillHeld, staleCode }));
`;

/** Item 5: @holdfast/opentelemetry with the SDK's in-memory exporters: spans and metrics of a grant, a busy answer and a forced release. */
export const OPENTELEMETRY = `import { createLockProvider } from '@holdfast/core';
import { instrumentHoldfast } from '@holdfast/opentelemetry';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { channel } from 'node:diagnostics_channel';
const spans = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const meterProvider = new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3600000 })] });
const instrumentation = instrumentHoldfast({ meterProvider, tracerProvider, keyLabel: (key) => key.split('/')[0] });
const a = await createLockProvider('memory:');
const b = await createLockProvider('memory:');
const lock = await a.acquire('packaged/otel');
const busy = await b.tryAcquire('packaged/otel');
await a.forceRelease('packaged/otel');
await meterProvider.forceFlush();
const metrics = exporter.getMetrics().at(-1).scopeMetrics.flatMap((scope) => scope.metrics);
const points = (name) => metrics.find((metric) => metric.descriptor.name === name)?.dataPoints ?? [];
const sum = (name) => points(name).reduce((total, point) => total + point.value, 0);
const finished = spans.getFinishedSpans();
instrumentation.dispose();
// Read before the shutdown: the in-memory span exporter forgets its spans when shut down.
await Promise.all([a.close(), b.close(), meterProvider.shutdown(), tracerProvider.shutdown()]);
console.log(JSON.stringify({
  busyAnswer: busy === null,
  spans: finished.map((span) => [span.name, span.attributes['holdfast.acquire.outcome'] ?? span.attributes['holdfast.loss.reason']]),
  grants: sum('holdfast.lock.grants'),
  busy: sum('holdfast.lock.busy'),
  losses: points('holdfast.lock.losses').map((point) => point.attributes),
  holdUnit: metrics.find((metric) => metric.descriptor.name === 'holdfast.lock.hold.duration')?.descriptor.unit,
  subscribedAfterDispose: channel('holdfast:grant').hasSubscribers,
  tokenOnHold: finished.find((span) => span.name === 'holdfast.hold')?.attributes['holdfast.lock.token'] === String(lock.token),
}));
`;

/** Item 2: forceRelease through the provider that holds the key has told the holder by the time it resolves (argv[2]: a URL). */
export const OWN_FORCE_RELEASE = `import { createLockProvider } from '@holdfast/core';
const locks = await createLockProvider(process.argv[2]);
const lock = await locks.acquire('packaged/own-force-release-' + process.pid);
const freed = await locks.forceRelease(lock.key);
const toldBeforeReturn = lock.signal.aborted;
const reason = lock.signal.reason?.code ?? null;
const free = (await locks.inspect(lock.key)) === null;
await locks.close();
console.log(JSON.stringify({ backend: locks.backend, freed, toldBeforeReturn, reason, free }));
`;

/**
 * Item 9: URL settings the SQL adapters used to accept: each is an InvalidArgumentError from the
 * installed adapters, and the loopback listener their host:port names sees no connection.
 */
export const BAD_SQL_URLS = `import { createServer } from 'node:net';
import { createLockProvider } from '@holdfast/core';
let connections = 0;
const listener = createServer((socket) => { connections++; socket.destroy(); });
await new Promise((resolve) => listener.listen(0, '127.0.0.1', resolve));
const port = listener.address().port;
const urls = [
  'postgres://u@127.0.0.1:' + port + '/db?pollInterval=0',
  'postgres://u@127.0.0.1:' + port + '/db?connectTimeout=0',
  'postgres://u@127.0.0.1:' + port + '/db?sslmode=bogus',
  'postgres://u@127.0.0.1:' + port + '/db?table=a&table=b',
  'mysql://u@127.0.0.1:' + port + '/db?pollInterval=0',
  'mysql://u@127.0.0.1:' + port + '/db?connectTimeout=0',
  'mysql://u@127.0.0.1:' + port + '/db?charset=bogus',
  'mysql://u@127.0.0.1:0/db',
];
const codes = [];
for (const url of urls) {
  try {
    const provider = await createLockProvider(url);
    await provider.close();
    codes.push('accepted');
  } catch (error) {
    codes.push(error.code ?? error.name);
  }
}
await new Promise((resolve) => setTimeout(resolve, 200));
await new Promise((resolve) => listener.close(resolve));
console.log(JSON.stringify({ codes, connections }));
`;
