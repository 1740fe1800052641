import type { AddressInfo } from 'node:net';
import { ErrorCode, type Lock, type LockProvider, LockTimeoutError } from '@holdfast/core';
import { codeOf, rejection, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import {
  type ArgumentsHost,
  Catch,
  Controller,
  type ExceptionFilter,
  type INestApplication,
  Inject,
  Injectable,
  Param,
  Post,
} from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { describe, expect, test } from 'vitest';
import { currentLock, InjectLocks, WithLock } from '../src/index.js';
import { backendsUnderTest, type Deferred, deferred, STEP_MS, startApp } from './nest-apps.js';

const redis = await useBackend('redis');

/** What the handlers and services of one test report, and the gate that keeps the first one inside. */
class Events {
  readonly log: string[] = [];
  readonly entered = deferred<Lock>();
  readonly secondArrived = deferred();
  readonly open = deferred();
  arrivals = 0;
}

/** How an app tells a client that the key is busy: core's LockTimeoutError as 409 Conflict. */
@Catch(LockTimeoutError)
class BusyAs409 implements ExceptionFilter {
  catch(error: LockTimeoutError, host: ArgumentsHost): void {
    host.switchToHttp().getResponse<{ status(code: number): { json(body: unknown): void } }>().status(409).json({ code: error.code });
  }
}

@Controller('orders')
class OrdersController {
  constructor(@Inject(Events) private readonly events: Events) {}

  @Post(':id')
  @WithLock('http-order:{0}')
  async refuseWhenBusy(@Param('id') id: string) {
    return this.held(id);
  }

  @WithLock('http-order:{0}', { waitMs: STEP_MS })
  @Post(':id/wait')
  async waitWhenBusy(@Param('id') id: string) {
    return this.held(id);
  }

  private async held(id: string) {
    const lock = currentLock()!;
    this.events.log.push(`enter ${lock.token}`);
    this.events.entered.resolve(lock);
    await this.events.open.promise;
    this.events.log.push(`exit ${lock.token}`);
    return { id, key: lock.key, token: String(lock.token) };
  }
}

@Injectable()
class OrdersService {
  constructor(
    @Inject(Events) private readonly events: Events,
    @InjectLocks() readonly locks: LockProvider,
  ) {}

  @WithLock('order:{0.id}')
  async place(_order: { id: number }, gate: Deferred) {
    const lock = currentLock()!;
    this.events.entered.resolve(lock);
    await gate.promise;
    return { key: lock.key, signalAbortedInside: lock.signal.aborted };
  }

  @WithLock('order:{0.id}', { onBusy: 'skip' })
  async placeIfFree(_order: { id: number }) {
    return 'ran';
  }

  @WithLock('user:{1.user.name}', { reason: 'profile update' })
  async updateProfile(_changes: object, _request: { user?: { name?: string } }) {
    this.events.log.push('profile ran');
    return (await this.locks.inspect(currentLock()!.key))?.reason;
  }

  /** Protected work that watches the lock's signal, as the docs tell users to. */
  @WithLock('watched:{0}', { reason: 'watched work' })
  async watched(_id: string) {
    const signal = currentLock()!.signal;
    this.events.entered.resolve(currentLock()!);
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    return codeOf(signal.reason);
  }

  @WithLock('failing:{0}')
  async fails(_id: number) {
    throw new Error('the method failed');
  }
}

async function listen(app: INestApplication): Promise<string> {
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

async function startOrdersApp(url: string, events: Events): Promise<INestApplication> {
  return startApp(
    url,
    {
      controllers: [OrdersController],
      providers: [{ provide: Events, useValue: events }, OrdersService, { provide: APP_FILTER, useClass: BusyAs409 }],
    },
    // Counts requests as they reach the app, before any handler: "arrived while the key was held".
    (app) =>
      app.use((_req: unknown, _res: unknown, next: () => void) => {
        events.arrivals++;
        if (events.arrivals === 2) events.secondArrived.resolve();
        next();
      }),
  );
}

for (const backend of backendsUnderTest(redis.url)) {
  describe.skipIf(backend.url === null)(`@WithLock in a Nest application (${backend.name})`, () => {
    const url = backend.url!;
    const id = () => `${process.pid}-${Math.random().toString(36).slice(2)}`;

    test('two concurrent HTTP requests on one key: the second is refused (409 from LockTimeoutError) while the first runs', async () => {
      const events = new Events();
      const base = await listen(await startOrdersApp(url, events));
      const order = id();
      const first = fetch(`${base}/orders/${order}`, { method: 'POST' });
      await within(events.entered.promise, STEP_MS, 'the first request enters the handler');
      const second = await within(fetch(`${base}/orders/${order}`, { method: 'POST' }), STEP_MS, 'the second request');
      expect(second.status).toBe(409);
      expect(await second.json()).toEqual({ code: ErrorCode.Timeout });
      events.open.resolve();
      const answer = await within(first, STEP_MS, 'the first request');
      expect(answer.status).toBe(201);
      expect(await answer.json()).toMatchObject({ id: order, key: `http-order:${order}` });
      expect(events.log).toHaveLength(2);
    });

    test('with waitMs the second request waits: it arrived while the first held the key, and ran after it, with a larger token', async () => {
      const events = new Events();
      const base = await listen(await startOrdersApp(url, events));
      const order = id();
      const first = fetch(`${base}/orders/${order}/wait`, { method: 'POST' });
      const firstLock = await within(events.entered.promise, STEP_MS, 'the first request enters the handler');
      const second = fetch(`${base}/orders/${order}/wait`, { method: 'POST' });
      await within(events.secondArrived.promise, STEP_MS, 'the second request reaches the app');
      events.open.resolve();
      const [a, b] = await within(Promise.all([first, second]), STEP_MS, 'both requests');
      expect([a.status, b.status]).toEqual([201, 201]);
      const secondToken = BigInt(((await b.json()) as { token: string }).token);
      expect(secondToken).toBeGreaterThan(firstLock.token);
      expect(events.log).toEqual([`enter ${firstLock.token}`, `exit ${firstLock.token}`, `enter ${secondToken}`, `exit ${secondToken}`]);
    });

    test('the key comes from the arguments; the lock is currentLock() inside and is released when the promise settles', async () => {
      const events = new Events();
      const app = await startOrdersApp(url, events);
      const service = app.get(OrdersService);
      const order = { id: Date.now() };
      const gate = deferred();
      const placing = service.place(order, gate);
      const lock = await within(events.entered.promise, STEP_MS, 'the method runs');
      expect(lock.key).toBe(`order:${order.id}`);
      expect((await service.locks.inspect(lock.key))?.reason).toBe('OrdersService.place');
      expect(await within(service.placeIfFree(order), STEP_MS, 'placeIfFree while busy')).toBeUndefined();
      gate.resolve();
      expect(await within(placing, STEP_MS, 'place')).toEqual({ key: lock.key, signalAbortedInside: false });
      expect(codeOf(lock.signal.reason)).toBe(ErrorCode.Released);
      expect(await service.locks.inspect(lock.key)).toBeNull();
      expect(await within(service.placeIfFree(order), STEP_MS, 'placeIfFree once free')).toBe('ran');
      expect(currentLock()).toBeUndefined();
    });

    test('a path into a later argument; a missing one is an InvalidArgumentError and the method does not run', async () => {
      const events = new Events();
      const service = (await startOrdersApp(url, events)).get(OrdersService);
      expect(await within(service.updateProfile({}, { user: { name: `ada-${id()}` } }), STEP_MS, 'updateProfile')).toBe('profile update');
      const error = await rejection(within(service.updateProfile({}, {}), STEP_MS, 'updateProfile without a user'));
      expect(codeOf(error)).toBe(ErrorCode.InvalidArgument);
      expect((error as Error).message).toMatch(/\{1\.user\.name\} has no value \(argument 1\.user is undefined\)/);
      expect(events.log).toEqual(['profile ran']);
    });

    test("the lock's signal is reachable inside: a forced release aborts it while the method runs", async () => {
      const events = new Events();
      const service = (await startOrdersApp(url, events)).get(OrdersService);
      const working = service.watched(id());
      const lock = await within(events.entered.promise, STEP_MS, 'the method runs');
      await within(service.locks.forceRelease(lock.key), STEP_MS, 'forceRelease');
      // The provider tells its own holder before forceRelease resolves, on every backend.
      expect(lock.signal.aborted).toBe(true);
      expect(await within(working, STEP_MS, 'the method sees its signal abort')).toBe(ErrorCode.Lost);
    });

    test("the method's error reaches the caller and the lock is released", async () => {
      const service = (await startOrdersApp(url, new Events())).get(OrdersService);
      const key = Date.now();
      const error = await rejection(within(service.fails(key), STEP_MS, 'fails'));
      expect((error as Error).message).toBe('the method failed');
      expect(await service.locks.inspect(`failing:${key}`)).toBeNull();
    });

    test('a decorated method on an object Nest did not create is a typed error', async () => {
      const detached = new OrdersService(new Events(), undefined as unknown as LockProvider);
      expect(codeOf(await rejection(within(detached.placeIfFree({ id: 1 }), STEP_MS, 'placeIfFree')))).toBe(ErrorCode.InvalidArgument);
    });
  });
}
