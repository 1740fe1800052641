import { chownSync, readFileSync } from 'node:fs';

export interface Account {
  uid: number;
  gid: number;
}

/**
 * Who a server that refuses root (PostgreSQL) runs as: nobody else when we are not root; as root,
 * the system account `name` (Debian's postgresql package creates it), which gets `dir`.
 */
export function accountForServer(name: string, dir: string): Account | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${name}:`));
  if (!line)
    throw new Error(`running as root, and there is no "${name}" user to run the server as (create one, or run the tests as another user)`);
  const [, , uid, gid] = line.split(':');
  const account = { uid: Number(uid), gid: Number(gid) };
  chownSync(dir, account.uid, account.gid);
  return account;
}
