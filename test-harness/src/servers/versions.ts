import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import packageDir from '../package-dir.cjs';

export interface GoServerSpec {
  version: string;
  module: string;
  package: string;
  binary: string;
}

export interface ServerVersions {
  go: { consul: GoServerSpec; ferretdb: GoServerSpec; etcd: GoServerSpec; etcdctl: GoServerSpec };
  apt: { redis: AptServerSpec; 'redis-sentinel': AptServerSpec; postgres: AptServerSpec; mysql: AptServerSpec };
  containers: { redis: string; mongodb: string; consul: string; postgres: string; mysql: string; etcd: string; zookeeper: string };
  java: { zookeeper: JavaServerSpec };
}

/** A server that runs on the JVM from a Debian package's jars (ZooKeeper). */
export interface JavaServerSpec {
  package: string;
  version: string;
  /** The server jar; its manifest's Class-Path names the dependency jars. */
  jar: string;
  /** An SLF4J binding, so the server's errors reach its output. */
  logBinding: string;
  main: string;
}

export interface AptServerSpec {
  /** The Debian package that provides it. */
  package: string;
  /** The binary whose presence means it is installed. */
  binary: string;
}

let cached: ServerVersions | undefined;

/** The pins in the harness's scripts/server-versions.json. */
export function serverVersions(): ServerVersions {
  cached ??= JSON.parse(readFileSync(join(packageDir.harnessDir(), 'scripts', 'server-versions.json'), 'utf8')) as ServerVersions;
  return cached;
}
