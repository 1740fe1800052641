import { createServer, type Server, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { listenOnLoopback, type ServerAddress } from '../faults/address.js';

/** One message from a worker: it began a hold, wrote under it, ended it, or was told it lost it. */
export interface StoreRequest {
  readonly op: 'begin' | 'write' | 'end' | 'lost';
  readonly worker: number;
  /** Unique per grant: `<worker>:<n>`. */
  readonly grant: string;
  readonly key: string;
  readonly token: string;
  /**
   * When the worker started the acquire that brought this grant (Date.now()). A worker stopped after
   * that may have been granted, paused past the lease and superseded before it could say so.
   */
  readonly requestedAt: number;
}

export interface StoreFigures {
  grants: number;
  /** A newer grant began while an older holder that was never paused during its hold had not ended. */
  overlaps: number;
  /** Writes the fence accepted from a holder after a newer grant of the key had begun. Must be 0. */
  staleWritesAccepted: number;
  /** Writes the fence refused (paused holders writing after resuming). */
  staleWritesRejected: number;
  /** Grants whose token was not above every earlier grant's token for the key. */
  tokenRegressions: number;
  /** Losses the workers were told about through their lock's signal. */
  lossesReported: number;
  /** Holders that were stopped (SIGSTOP) at some point during their hold. */
  holdsPaused: number;
}

interface Hold {
  readonly worker: number;
  readonly grant: string;
  paused: boolean;
}

interface KeyState {
  highestToken: bigint;
  highestGrant: string;
  /** Grants of this key in the order they began. */
  readonly order: string[];
  readonly open: Map<string, Hold>;
}

/**
 * The shared resource the soak workers write to, in the runner's process: it fences writes by token
 * (a write is accepted only with the highest token seen for the key, from the grant that brought it)
 * and, knowing which workers the runner has stopped, tells an overlap of two live holders from a
 * paused holder that was legitimately superseded.
 */
export class FencedStore {
  readonly figures: StoreFigures = {
    grants: 0,
    overlaps: 0,
    staleWritesAccepted: 0,
    staleWritesRejected: 0,
    tokenRegressions: 0,
    lossesReported: 0,
    holdsPaused: 0,
  };
  readonly overlapDetails: string[] = [];
  private readonly keys = new Map<string, KeyState>();
  private readonly stopped = new Set<number>();
  private readonly lastStoppedAt = new Map<number, number>();
  private readonly sockets = new Set<Socket>();
  private stopAfter = Number.POSITIVE_INFINITY;

  private constructor(
    private readonly server: Server,
    readonly address: ServerAddress,
  ) {}

  static async start(): Promise<FencedStore> {
    const server = createServer();
    const address = await listenOnLoopback(server);
    const store = new FencedStore(server, address);
    server.on('connection', (socket) => store.serve(socket));
    return store;
  }

  /** Replies carry `stop: true` once this many grants were counted. */
  stopAt(grants: number): void {
    this.stopAfter = grants;
  }

  get done(): boolean {
    return this.figures.grants >= this.stopAfter;
  }

  /** The runner stopped a worker: every hold it has open now counts as paused. */
  workerStopped(worker: number): void {
    this.stopped.add(worker);
    this.lastStoppedAt.set(worker, Date.now());
    for (const state of this.keys.values()) {
      for (const hold of state.open.values()) {
        if (hold.worker === worker && !hold.paused) {
          hold.paused = true;
          this.figures.holdsPaused++;
        }
      }
    }
  }

  workerResumed(worker: number): void {
    this.stopped.delete(worker);
  }

  /** Workers currently holding some key, for the pauser to pick from. */
  holders(): number[] {
    const workers = new Set<number>();
    for (const state of this.keys.values()) for (const hold of state.open.values()) workers.add(hold.worker);
    return [...workers];
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  handle(request: StoreRequest): { ok: boolean; stop: boolean } {
    const state = this.stateOf(request.key);
    const token = BigInt(request.token);
    let ok = true;
    switch (request.op) {
      case 'begin':
        ok = this.begin(state, request, token);
        break;
      case 'write':
        ok = this.write(state, request, token);
        break;
      case 'end':
        state.open.delete(request.grant);
        break;
      case 'lost':
        this.figures.lossesReported++;
        state.open.delete(request.grant);
        break;
    }
    return { ok, stop: this.done };
  }

  private begin(state: KeyState, request: StoreRequest, token: bigint): boolean {
    this.figures.grants++;
    // Stopped at some point since it asked for the lock: it may have been superseded before it got here.
    const paused = this.stopped.has(request.worker) || (this.lastStoppedAt.get(request.worker) ?? -Infinity) >= request.requestedAt;
    if (paused) this.figures.holdsPaused++;
    if (token <= state.highestToken) {
      // A paused holder arriving after its successor is what fencing is for; a live one is a broken token.
      if (paused) {
        this.figures.staleWritesRejected++;
        return this.fence(state, request, token);
      }
      this.figures.tokenRegressions++;
    }
    for (const hold of state.open.values()) {
      if (hold.paused || this.stopped.has(hold.worker)) continue;
      this.figures.overlaps++;
      if (this.overlapDetails.length < 20)
        this.overlapDetails.push(`${request.key}: grant ${request.grant} (token ${token}) began while ${hold.grant} held it`);
    }
    state.order.push(request.grant);
    if (state.order.length > 64) state.order.splice(0, state.order.length - 64);
    state.open.set(request.grant, { worker: request.worker, grant: request.grant, paused });
    return this.fence(state, request, token);
  }

  private write(state: KeyState, request: StoreRequest, token: bigint): boolean {
    const accepted = this.fence(state, request, token);
    const superseded = state.order.length > 0 && state.order[state.order.length - 1] !== request.grant;
    if (!accepted) this.figures.staleWritesRejected++;
    else if (superseded) this.figures.staleWritesAccepted++;
    return accepted;
  }

  /** The fence: only the highest token seen for the key, and only from the grant that brought it. */
  private fence(state: KeyState, request: StoreRequest, token: bigint): boolean {
    if (token > state.highestToken) {
      state.highestToken = token;
      state.highestGrant = request.grant;
      return true;
    }
    return token === state.highestToken && request.grant === state.highestGrant;
  }

  private stateOf(key: string): KeyState {
    let state = this.keys.get(key);
    if (!state) {
      state = { highestToken: -1n, highestGrant: '', order: [], open: new Map() };
      this.keys.set(key, state);
    }
    return state;
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.setNoDelay(true);
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.sockets.delete(socket));
    const lines = createInterface({ input: socket });
    lines.on('error', () => undefined);
    lines.on('line', (line) => {
      const reply = this.handle(JSON.parse(line) as StoreRequest);
      if (!socket.destroyed) socket.write(`${JSON.stringify(reply)}\n`);
    });
  }
}
