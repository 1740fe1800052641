import { readFileSync } from 'node:fs';

export interface GoServerSpec {
  version: string;
  module: string;
  package: string;
  binary: string;
}

export interface ServerVersions {
  go: { consul: GoServerSpec; ferretdb: GoServerSpec };
  apt: { redis: { package: string; binary: string } };
  containers: { redis: string; mongodb: string; consul: string };
}

let cached: ServerVersions | undefined;

/** The pins in scripts/server-versions.json (same relative path from src/servers and dist/servers). */
export function serverVersions(): ServerVersions {
  cached ??= JSON.parse(
    readFileSync(new URL('../../scripts/server-versions.json', import.meta.url), 'utf8'),
  ) as ServerVersions;
  return cached;
}
