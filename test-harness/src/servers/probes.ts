import { connect } from 'node:net';

/** Sends `request` on a fresh TCP connection and resolves with the reply once `complete` accepts it. */
function exchange(host: string, port: number, request: Buffer, complete: (reply: Buffer) => boolean, timeoutMs = 2000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    let reply = Buffer.alloc(0);
    const finish = (err?: Error): void => {
      socket.destroy();
      if (err) reject(err);
      else resolve(reply);
    };
    socket.setTimeout(timeoutMs, () => finish(new Error(`no reply from ${host}:${port} within ${timeoutMs} ms`)));
    socket.on('error', finish);
    socket.on('connect', () => socket.write(request));
    socket.on('data', (chunk) => {
      reply = Buffer.concat([reply, chunk]);
      if (complete(reply)) finish();
    });
    socket.on('end', () => finish(new Error(`${host}:${port} closed the connection`)));
  });
}

/** Redis answers PING with +PONG (and -LOADING while it reads its dataset). */
export async function redisPing(host: string, port: number): Promise<boolean> {
  const reply = await exchange(host, port, Buffer.from('PING\r\n'), (r) => r.includes('\r\n'));
  return reply.toString().startsWith('+PONG');
}

function bsonHelloAdmin(): Buffer {
  const hello = Buffer.concat([Buffer.from([0x10]), Buffer.from('hello\0'), int32(1)]);
  const db = Buffer.concat([Buffer.from([0x02]), Buffer.from('$db\0'), int32(6), Buffer.from('admin\0')]);
  const body = Buffer.concat([hello, db, Buffer.from([0])]);
  return Buffer.concat([int32(body.length + 4), body]);
}

function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32LE(n);
  return b;
}

/**
 * A MongoDB-wire `hello` via OP_MSG (opcode 2013), without a driver. True when the reply has
 * the double `ok: 1`.
 */
export async function mongoHello(host: string, port: number): Promise<boolean> {
  const doc = bsonHelloAdmin();
  const flagsAndSection = Buffer.concat([int32(0), Buffer.from([0]), doc]);
  const header = Buffer.concat([int32(16 + flagsAndSection.length), int32(1), int32(0), int32(2013)]);
  const reply = await exchange(host, port, Buffer.concat([header, flagsAndSection]), (r) => r.length >= 4 && r.length >= r.readInt32LE(0));
  if (reply.readInt32LE(12) !== 2013) return false;
  const okKey = Buffer.from([0x01, 0x6f, 0x6b, 0x00]);
  const at = reply.indexOf(okKey, 21);
  return at >= 0 && reply.readDoubleLE(at + okKey.length) === 1;
}

/** The Raft leader's address as Consul reports it ("" while there is none). */
export async function consulLeader(httpUrl: string): Promise<string> {
  const res = await fetch(`${httpUrl}/v1/status/leader`, { signal: AbortSignal.timeout(2000) });
  if (!res.ok) throw new Error(`GET /v1/status/leader: HTTP ${res.status}`);
  return (await res.json()) as string;
}

/** Whole PostgreSQL backend messages (type byte, int32 length including itself, body) in `buf`. */
function pgMessageTypes(buf: Buffer): { types: string[]; complete: boolean } {
  const types: string[] = [];
  let at = 0;
  while (at + 5 <= buf.length) {
    const end = at + 1 + buf.readInt32BE(at + 1);
    if (end > buf.length) return { types, complete: false };
    types.push(String.fromCharCode(buf[at]!));
    at = end;
  }
  return { types, complete: at === buf.length };
}

/**
 * A PostgreSQL startup (protocol 3.0) as `user` on `database`, without a driver: true once the
 * server says ReadyForQuery, false on an error (such as "the database system is starting up").
 * Needs trust authentication, which the harness's own servers use.
 */
export async function postgresReady(host: string, port: number, user: string, database: string): Promise<boolean> {
  const params = Buffer.from(`user\0${user}\0database\0${database}\0\0`);
  const startup = Buffer.concat([int32BE(8 + params.length), int32BE(196608), params]);
  const done = (r: Buffer): boolean => {
    const { types, complete } = pgMessageTypes(r);
    return complete && (types.includes('Z') || types.includes('E'));
  };
  const reply = await exchange(host, port, startup, done);
  return pgMessageTypes(reply).types.includes('Z');
}

function int32BE(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}

/** The MySQL/MariaDB server greeting: true for a protocol-10 handshake, false for an error packet. */
export async function mysqlGreeting(host: string, port: number): Promise<boolean> {
  const whole = (r: Buffer): boolean => r.length >= 4 && r.length >= 4 + r.readUIntLE(0, 3);
  // The server speaks first: send nothing, read its first packet.
  const reply = await exchange(host, port, Buffer.alloc(0), whole);
  return reply[4] === 0x0a;
}
