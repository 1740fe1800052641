import { expect, test } from 'vitest';
import { adapterUrl } from '../src/backend-index.js';
import { ErrorCode } from '../src/index.js';

const spec = {
  schemes: ['sql:', 'sqls:'],
  example: 'sql://user@host/db',
  own: { table: ['table', 'text'], create: ['createTables', 'boolean'], poll: ['pollIntervalMs', 'duration'] },
  driver: { name: 'driver', parameters: new Set(['ssl']) },
} as const;
const invalid = expect.objectContaining({ code: ErrorCode.InvalidArgument });

test("the adapter's parameters become settings and leave the URL; the driver's stay", () => {
  const { url, settings } = adapterUrl('sqls://u:p%40ss@h:1/db?ssl=on&table=t&create=0&poll=1s500ms', spec);
  expect(url.href).toBe('sqls://u:p%40ss@h:1/db?ssl=on');
  expect(settings).toEqual({ table: 't', createTables: false, pollIntervalMs: 1500 });
  expect(adapterUrl(new URL('sql://h/db?create=true'), spec).settings).toEqual({ createTables: true });
});

test('another scheme, an unknown parameter, a bad value or no URL at all is an InvalidArgumentError without the password', () => {
  for (const text of ['other://h/db', 'sql://h/db?tabel=x', 'sql://h/db?create=maybe', 'sql://h/db?poll=soon', 'not a url']) {
    expect(() => adapterUrl(text, spec), text).toThrow(invalid);
  }
  expect(() => adapterUrl('sql://u:hunter2@h/db?nope=1', spec)).toThrow(/nope/);
  expect(() => adapterUrl('sql://u:hunter2@h/db?nope=1', spec)).not.toThrow(/hunter2/);
  expect(() => adapterUrl('nope://u:hunter2@', spec)).not.toThrow(/hunter2/);
});
