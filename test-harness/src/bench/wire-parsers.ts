import type { RequestParser } from './wire-tap.js';

/**
 * HTTP/1.1 request lines, named by method and the path's resource ("PUT /v1/session/renew",
 * "GET /v1/kv blocking" for a blocking query). A request line split across two reads is missed: Consul
 * requests are small, so that is rare and the counts are a floor.
 */
export const httpRequests: RequestParser = () => (chunk) => {
  const names: string[] = [];
  for (const match of chunk.toString('latin1').matchAll(/(?:^|\r\n)(GET|PUT|POST|DELETE) (\/v1\/[^\s?]*)(\?\S*)? HTTP\/1\.1\r\n/g)) {
    const segments = match[2]!.split('/').slice(1);
    const resource = ['kv', 'txn'].includes(segments[1]!) ? segments.slice(0, 2) : segments.slice(0, 3);
    const blocking = /[?&]index=/.test(match[3] ?? '') ? ' blocking' : '';
    names.push(`${match[1]} /${resource.join('/')}${blocking}`);
  }
  return names;
};

const OP_MSG = 2013;

/**
 * MongoDB OP_MSG commands, named by command and collection ("findAndModify bench_x_pings"). Messages
 * are reassembled across reads by their length prefix.
 */
export const mongoCommands: RequestParser = () => {
  let pending: Buffer = Buffer.alloc(0);
  return (chunk) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    const names: string[] = [];
    while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
      const length = pending.readInt32LE(0);
      const message = pending.subarray(0, length);
      pending = pending.subarray(length);
      if (message.length > 26 && message.readInt32LE(12) === OP_MSG && message[20] === 0) names.push(commandOf(message.subarray(21)));
    }
    return names;
  };
};

/** The first element of a BSON document: the command's name, and its string value (the collection). */
function commandOf(document: Buffer): string {
  const type = document[4];
  const nameEnd = document.indexOf(0, 5);
  const name = document.toString('utf8', 5, nameEnd);
  if (type !== 0x02) return name;
  const valueLength = document.readInt32LE(nameEnd + 1);
  return `${name} ${document.toString('utf8', nameEnd + 5, nameEnd + 4 + valueLength)}`;
}
