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
   * How the grant shares its key: a read-write lock's reader ('shared', many at once) or anything
   * that holds the key alone ('exclusive', the default: a lock, a writer, one key of a multi-key lock).
   */
  readonly mode?: 'shared' | 'exclusive';
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
  readonly shared: boolean;
  /** The key's begin count when this hold began: a later begin supersedes it (a later exclusive one, a reader). */
  readonly began: number;
  paused: boolean;
}

interface KeyState {
  highestToken: bigint;
  highestGrant: string;
  /** The highest token an exclusive grant began with: a reader's token must be above it. */
  highestExclusiveToken: bigint;
  /** Begins of this key so far, and the count at the latest exclusive one. */
  begins: number;
  lastExclusiveBegin: number;
  readonly open: Map<string, Hold>;
}

/**
 * The shared resource the soak workers write to, in the runner's process: it fences writes by token
 * (an exclusive holder's write is accepted only with the highest token seen for the key, from the
 * grant that brought it; a reader's only while no exclusive grant with a higher token began) and,
 * knowing which workers the runner has stopped, tells an overlap of two live holders from a paused
 * holder that was legitimately superseded. Readers may overlap each other, and may begin in another
 * order than their tokens (two granted at once); nothing else may.
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
    return [...new Set(this.holds().map((hold) => hold.worker))];
  }

  /** The holds open now, each with its grant id: a worker granted again at once is a new hold. */
  holds(): { worker: number; grant: string }[] {
    const holds: { worker: number; grant: string }[] = [];
    for (const state of this.keys.values()) for (const { worker, grant } of state.open.values()) holds.push({ worker, grant });
    return holds;
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
    const shared = request.mode === 'shared';
    // Stopped at some point since it asked for the lock: it may have been superseded before it got here.
    const paused = this.stopped.has(request.worker) || (this.lastStoppedAt.get(request.worker) ?? -Infinity) >= request.requestedAt;
    if (paused) this.figures.holdsPaused++;
    const floor = shared ? state.highestExclusiveToken : state.highestToken;
    // Every later reader must be above this writer, whether or not the fence lets it write.
    if (!shared && token > state.highestExclusiveToken) state.highestExclusiveToken = token;
    if (token <= floor) {
      // A paused holder arriving after its successor is what fencing is for; a live one is a broken token.
      if (paused) {
        this.figures.staleWritesRejected++;
        return this.fence(state, request, token);
      }
      this.figures.tokenRegressions++;
    }
    for (const hold of state.open.values()) {
      if (hold.paused || this.stopped.has(hold.worker) || (shared && hold.shared)) continue;
      this.figures.overlaps++;
      if (this.overlapDetails.length < 20)
        this.overlapDetails.push(
          `${request.key}: grant ${request.grant} (${shared ? 'shared, ' : ''}token ${token}) began while ${hold.grant}${hold.shared ? ' (shared)' : ''} held it`,
        );
    }
    state.begins++;
    if (!shared) state.lastExclusiveBegin = state.begins;
    state.open.set(request.grant, { worker: request.worker, grant: request.grant, shared, began: state.begins, paused });
    return this.fence(state, request, token);
  }

  private write(state: KeyState, request: StoreRequest, token: bigint): boolean {
    const accepted = this.fence(state, request, token);
    const hold = state.open.get(request.grant);
    // A reader is superseded by a later exclusive grant only; an exclusive holder by any later grant.
    const since = request.mode === 'shared' ? state.lastExclusiveBegin : state.begins;
    const superseded = hold === undefined || since > hold.began;
    if (!accepted) this.figures.staleWritesRejected++;
    else if (superseded) this.figures.staleWritesAccepted++;
    return accepted;
  }

  /**
   * The fence: an exclusive holder only with the highest token seen for the key, and only from the
   * grant that brought it; a reader while no exclusive grant began with a higher token.
   */
  private fence(state: KeyState, request: StoreRequest, token: bigint): boolean {
    if (request.mode === 'shared') {
      if (token <= state.highestExclusiveToken) return false;
      if (token > state.highestToken) {
        state.highestToken = token;
        state.highestGrant = request.grant;
      }
      return true;
    }
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
      state = { highestToken: -1n, highestGrant: '', highestExclusiveToken: -1n, begins: 0, lastExclusiveBegin: 0, open: new Map() };
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
