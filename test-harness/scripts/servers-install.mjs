#!/usr/bin/env node
// Installs the real servers the tests run against when no container runtime and no URLs are given:
// Consul, FerretDB and etcd (with etcdctl) built from their Go modules into a per-version cache dir, Redis,
// PostgreSQL, MariaDB and ZooKeeper from Debian.
// Usage: node test-harness/scripts/servers-install.mjs [consul] [ferretdb] [etcd] [etcdctl] [redis] [postgres] [mysql] [zookeeper]   (default: all)
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

const versions = JSON.parse(readFileSync(new URL('./server-versions.json', import.meta.url), 'utf8'));
const cacheRoot = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'holdfast');
const started = Date.now();

class StepError extends Error {
  constructor(step, message) {
    super(`${step}: ${message}`);
    this.step = step;
  }
}

const elapsed = (since) => {
  const s = Math.round((Date.now() - since) / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
};
const log = (name, msg) => console.log(`[servers:install] ${name}: ${msg}`);

/** Runs a command; resolves with its output, rejects with a StepError carrying the output's tail. */
function run(step, cmd, args, { cwd, env, onLine } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const take = (chunk) => {
      const text = chunk.toString();
      out += text;
      if (out.length > 200_000) out = out.slice(-100_000);
      if (onLine) for (const line of text.split('\n')) if (line.trim()) onLine(line);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', (err) => reject(new StepError(step, `cannot run ${cmd}: ${err.message}`)));
    child.on('close', (code, signal) => {
      if (code === 0) resolve(out);
      else {
        const tail = out.trim().split('\n').slice(-25).join('\n');
        reject(new StepError(step, `\`${cmd} ${args.join(' ')}\` exited with ${code ?? signal}\n${tail}`));
      }
    });
  });
}

function checkGo(name) {
  const res = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (res.error || res.status !== 0) {
    throw new StepError(
      `${name}/check-go`,
      'the Go toolchain is needed to build this server; install Go >= 1.25.3 (https://go.dev/dl) or provide the server another way (see docs/testing.md)',
    );
  }
  return res.stdout.trim();
}

// `go install mod@version` refuses modules whose go.mod has replace/exclude lines (Consul), and it
// asks the proxy for the version list (403 here), so neither server is built with it.

/** Consul: a throwaway module requiring the server at its version, with the pins and excludes it needs. */
async function prepareWrapper(name, spec, work, env, t0) {
  const gomod = ['module holdfastbuild', '', 'go 1.25'];
  if (spec.exclude.length) gomod.push('', 'exclude (', ...spec.exclude.map((e) => `\t${e}`), ')');
  writeFileSync(join(work, 'go.mod'), gomod.join('\n') + '\n');
  const wanted = [`${spec.module}@v${spec.version}`, ...Object.entries(spec.pins).map(([m, v]) => `${m}@${v}`)];
  log(name, `step 1/3 resolve modules: go get ${wanted.join(' ')}`);
  await run(`${name}/go-get`, 'go', ['get', ...wanted], { cwd: work, env });
  log(name, `step 1/3 done (${elapsed(t0)})`);
  return work;
}

/** FerretDB: its own module source as the main module, plus the version file its release build generates. */
async function prepareModuleSource(name, spec, work, env, t0) {
  log(name, `step 1/3 download ${spec.module}@v${spec.version} and copy its source`);
  const out = await run(`${name}/go-mod-download`, 'go', ['mod', 'download', '-json', `${spec.module}@v${spec.version}`], {
    cwd: work,
    env,
  });
  const { Dir: dir, Error: error } = JSON.parse(out);
  if (!dir) throw new StepError(`${name}/go-mod-download`, error ?? 'no module directory in `go mod download` output');
  const src = join(work, 'src');
  cpSync(dir, src, { recursive: true });
  chmodTree(src);
  writeFileSync(join(src, 'build', 'version', 'version.txt'), `v${spec.version}\n`);
  log(name, `step 1/3 done (${elapsed(t0)})`);
  return src;
}

/** The module cache is read-only; the copy must be writable (to add files, and for rmSync). */
function chmodTree(path) {
  const st = statSync(path);
  chmodSync(path, st.mode | 0o200);
  if (st.isDirectory()) for (const e of readdirSync(path)) chmodTree(join(path, e));
}

async function buildGo(name, spec) {
  const dir = join(cacheRoot, `${name}-${spec.version}`);
  const bin = join(dir, spec.binary);
  if (existsSync(bin)) {
    log(name, `cached ${bin}`);
    return;
  }
  const t0 = Date.now();
  log(name, `building ${spec.module}@v${spec.version} (${checkGo(name)}); cold builds take 5-15 min on 2 cores`);
  const work = mkdtempSync(join(tmpdir(), `holdfast-build-${name}-`));
  try {
    const env = { GOFLAGS: '-mod=mod -buildvcs=false', CGO_ENABLED: '0' };
    const buildDir =
      spec.recipe === 'wrapper' ? await prepareWrapper(name, spec, work, env, t0) : await prepareModuleSource(name, spec, work, env, t0);
    log(name, `step 2/3 compile ${spec.package}`);
    let packages = 0;
    const tick = setInterval(() => log(name, `  compiling... ${packages} packages, ${elapsed(t0)} elapsed`), 30_000);
    // Build next to the final path so the last step is an atomic rename on one filesystem.
    mkdirSync(dir, { recursive: true });
    const tmpBin = join(dir, `.${spec.binary}.${process.pid}.partial`);
    try {
      await run(`${name}/go-build`, 'go', ['build', '-v', '-trimpath', '-ldflags=-s -w', '-o', tmpBin, spec.package], {
        cwd: buildDir,
        env,
        onLine: () => packages++,
      });
    } finally {
      clearInterval(tick);
    }
    log(name, `step 2/3 done (${elapsed(t0)})`);

    log(name, 'step 3/3 check the binary runs');
    const versionArgs = spec.versionArgs ?? (name === 'ferretdb' ? ['--version'] : ['version']);
    const out = await run(`${name}/self-check`, tmpBin, versionArgs);
    log(name, `  ${out.trim().split('\n')[0]}`);
    renameSync(tmpBin, bin);
    log(name, `installed ${bin} in ${elapsed(t0)}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
    rmSync(join(dir, `.${spec.binary}.${process.pid}.partial`), { force: true });
  }
}

/** Where Debian may put the binary: PATH, the sbin dirs (mariadbd), /usr/lib/postgresql/<major>/bin (initdb). */
function findAptBinary(binary) {
  const pg = '/usr/lib/postgresql';
  const pgBins = existsSync(pg)
    ? readdirSync(pg)
        .filter((d) => /^\d+$/.test(d))
        .map((d) => join(pg, d, 'bin'))
    : [];
  const dirs = [...(process.env.PATH ?? '').split(':').filter(Boolean), '/usr/sbin', '/usr/local/sbin', ...pgBins];
  return dirs.map((d) => join(d, binary)).find((p) => existsSync(p)) ?? null;
}

function aptVersion(binary) {
  const path = findAptBinary(binary);
  const res = path ? spawnSync(path, ['--version'], { encoding: 'utf8' }) : null;
  return res && !res.error && res.status === 0 ? res.stdout.trim() : null;
}

async function installApt(name, spec, { force = false } = {}) {
  const present = aptVersion(spec.binary);
  if (present && !force) {
    log(name, `present: ${present}`);
    return;
  }
  const isRoot = process.getuid?.() === 0;
  const sudo = isRoot ? [] : spawnSync('sudo', ['-n', 'true']).status === 0 ? ['sudo', '-n'] : null;
  if (!sudo)
    throw new StepError(`${name}/apt-install`, `${spec.binary} not found and not root; run: sudo apt-get install -y ${spec.package}`);
  const env = { DEBIAN_FRONTEND: 'noninteractive' };
  const apt = (args) =>
    sudo.length
      ? run(`${name}/apt-get`, 'sudo', ['-n', 'env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', ...args])
      : run(`${name}/apt-get`, 'apt-get', args, { env });
  log(name, `${spec.binary} not found; apt-get install -y ${spec.package}`);
  await apt(['update']);
  await apt(['install', '-y', '--no-install-recommends', spec.package]);
  // Debian starts a system server (redis 6379, postgres 5432, mariadb 3306); tests never use it, they
  // start their own on free ports.
  const installed = aptVersion(spec.binary);
  if (!installed) throw new StepError(`${name}/apt-install`, `${spec.package} is installed but ${spec.binary} is still not found`);
  log(name, `installed ${installed}`);
}

/**
 * ZooKeeper: Debian's package (jars only; it starts no service) run with the machine's Java. Present
 * when its jar is there and `java` runs; the harness starts QuorumPeerMain itself.
 */
async function installZookeeper(name, spec) {
  const java = spawnSync('java', ['-version'], { encoding: 'utf8' });
  const javaVersion = java.error || java.status !== 0 ? null : java.stderr.trim().split('\n')[0];
  if (javaVersion && existsSync(spec.jar) && existsSync(spec.logBinding)) {
    log(name, `present: ${spec.jar} (${javaVersion})`);
    return;
  }
  // default-jre comes with the package when java is missing.
  await installApt(name, { package: spec.package, binary: 'java' }, { force: true });
  if (!existsSync(spec.jar)) throw new StepError(`${name}/apt-install`, `${spec.package} is installed but ${spec.jar} is missing`);
  log(name, `installed ${spec.jar}`);
}

const all = {
  consul: () => buildGo('consul', versions.go.consul),
  ferretdb: () => buildGo('ferretdb', versions.go.ferretdb),
  etcd: () => buildGo('etcd', versions.go.etcd),
  etcdctl: () => buildGo('etcdctl', versions.go.etcdctl),
  redis: () => installApt('redis', versions.apt.redis),
  'redis-sentinel': () => installApt('redis-sentinel', versions.apt['redis-sentinel']),
  postgres: () => installApt('postgres', versions.apt.postgres),
  mysql: () => installApt('mysql', versions.apt.mysql),
  zookeeper: () => installZookeeper('zookeeper', versions.java.zookeeper),
  faketime: () => installApt('faketime', versions.apt.faketime),
};
const names = process.argv.slice(2).length
  ? process.argv.slice(2)
  : ['redis', 'redis-sentinel', 'postgres', 'mysql', 'zookeeper', 'faketime', 'ferretdb', 'consul', 'etcd', 'etcdctl'];
for (const n of names) {
  if (!all[n]) {
    console.error(`[servers:install] unknown server "${n}"; known: ${Object.keys(all).join(', ')}`);
    process.exit(2);
  }
}

try {
  for (const n of names) await all[n]();
  console.log(`[servers:install] done in ${elapsed(started)} (cache: ${cacheRoot})`);
} catch (err) {
  console.error(
    err instanceof StepError ? `[servers:install] FAILED at step ${err.message}` : `[servers:install] FAILED: ${err?.stack ?? err}`,
  );
  process.exit(1);
}
