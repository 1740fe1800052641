import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ip, listNamespaces } from '../src/nemesis/ip.js';
import { removeLeftovers } from '../src/nemesis/leftovers.js';
import { NetworkRig } from '../src/nemesis/network.js';
import { listenIn, tcpProbe } from '../src/nemesis/tcp-probe.js';

const PORT = 7000;

describe('the nemesis network rig', () => {
  let rig: NetworkRig;
  const listeners: ChildProcess[] = [];
  const rootLinksBefore = ip(['-o', 'link']).split('\n').length;

  beforeAll(async () => {
    rig = NetworkRig.create(['a', 'b', 'c']);
    for (const host of rig.hostNames) listeners.push(await listenIn(rig, host, PORT));
  });
  afterAll(() => {
    for (const child of listeners) child.kill('SIGKILL');
    rig?.destroy();
  });

  it('connects every host to every other over TCP, addresses in 10.213.0.0/16', async () => {
    for (const host of rig.hostNames) expect(rig.addressOf(host)).toMatch(/^10\.213\./);
    expect(await tcpProbe(rig, 'a', 'b', PORT)).toBe('ok');
    expect(await tcpProbe(rig, 'b', 'c', PORT)).toBe('ok');
    expect(await tcpProbe(rig, 'c', 'a', PORT)).toBe('ok');
  });

  it('leaves the root namespace untouched: no link, no route to the subnet', () => {
    expect(ip(['-o', 'link']).split('\n').length).toBe(rootLinksBefore);
    expect(ip(['route'])).not.toContain('10.213.');
    expect(ip(['-o', 'addr'])).not.toContain('10.213.');
  });

  it('isolates one host and heals it', async () => {
    rig.isolate('a');
    expect(await tcpProbe(rig, 'b', 'a', PORT)).toBe('timeout');
    expect(await tcpProbe(rig, 'a', 'c', PORT)).toBe('timeout');
    expect(await tcpProbe(rig, 'b', 'c', PORT)).toBe('ok');
    rig.heal();
    expect(await tcpProbe(rig, 'b', 'a', PORT)).toBe('ok');
  });

  it('splits into a minority and a majority that each still talk among themselves', async () => {
    rig.split(['c']);
    expect(await tcpProbe(rig, 'a', 'b', PORT)).toBe('ok');
    expect(await tcpProbe(rig, 'a', 'c', PORT)).toBe('timeout');
    expect(await tcpProbe(rig, 'c', 'b', PORT)).toBe('timeout');
    rig.heal();
    expect(await tcpProbe(rig, 'c', 'b', PORT)).toBe('ok');
  });

  it('removes every namespace, link and process of the run when destroyed', async () => {
    const namespaces = rig.hostNames.map((host) => rig.namespaceOf(host));
    const exits = listeners.map((child) => new Promise((resolve) => child.once('exit', resolve)));
    rig.destroy();
    await Promise.all(exits);
    expect(listNamespaces().filter((ns) => ns.includes(rig.runId))).toEqual([]);
    for (const ns of namespaces) expect(listNamespaces()).not.toContain(ns);
    expect(ip(['-o', 'link']).split('\n').length).toBe(rootLinksBefore);
  });
});

describe('leftovers of a crashed run', () => {
  it('are removed by the next run: namespaces and the processes inside them', async () => {
    const script = fileURLToPath(new URL('./fixtures/nemesis-crash.mjs', import.meta.url));
    const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const runId = await new Promise<string>((resolve, reject) => {
      child.stdout!.setEncoding('utf8').once('data', (text: string) => resolve(text.trim()));
      child.once('exit', (code) => reject(new Error(`crash fixture exited early (${code})`)));
    });
    expect(listNamespaces().filter((ns) => ns.includes(runId)).length).toBe(3);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    // SIGKILL runs no exit handler: the namespaces outlive their run until someone cleans up.
    expect(listNamespaces().filter((ns) => ns.includes(runId)).length).toBe(3);
    const removed = removeLeftovers();
    expect(removed.filter((ns) => ns.includes(runId)).length).toBe(3);
    expect(listNamespaces().filter((ns) => ns.includes(runId))).toEqual([]);
  });
});
