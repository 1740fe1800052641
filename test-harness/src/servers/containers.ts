import type { StartedTestContainer } from 'testcontainers';
import type { BackendKind } from './types.js';
import { serverVersions } from './versions.js';

let runtimeProbe: Promise<string | null> | undefined;

/**
 * testcontainers is an optional peer dependency (about 100 MB with its Docker client stack): an
 * adapter author who only runs the conformance suite against their own server does not need it.
 */
async function testcontainers(): Promise<typeof import('testcontainers')> {
  return import('testcontainers');
}

/**
 * Whether a container runtime (Docker, Podman...) is usable. testcontainers does not cache a failed
 * lookup and each attempt is slow, so probe once per process. Resolves with the reason when not.
 */
export function containerRuntimeUnavailable(): Promise<string | null> {
  runtimeProbe ??= testcontainers().then(
    ({ getContainerRuntimeClient }) =>
      getContainerRuntimeClient().then(
        () => null,
        (err: unknown) => (err instanceof Error ? err.message : String(err)),
      ),
    () => 'testcontainers is not installed (npm install --save-dev testcontainers to start servers in containers)',
  );
  return runtimeProbe;
}

export interface StartedContainerBackend {
  url: string;
  stop(): Promise<void>;
}

async function started(container: StartedTestContainer, url: string): Promise<StartedContainerBackend> {
  return { url, stop: async () => void (await container.stop()) };
}

async function redis(): Promise<StartedContainerBackend> {
  const { GenericContainer, Wait } = await testcontainers();
  const c = await new GenericContainer(serverVersions().containers.redis)
    .withExposedPorts(6379)
    .withCommand(['redis-server', '--save', '', '--appendonly', 'no'])
    .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
    .start();
  return started(c, `redis://${c.getHost()}:${c.getMappedPort(6379)}`);
}

/** A single-member replica set, so transactions and change streams work like in production. */
async function mongodb(): Promise<StartedContainerBackend> {
  const { GenericContainer, Wait } = await testcontainers();
  const c = await new GenericContainer(serverVersions().containers.mongodb)
    .withExposedPorts(27017)
    .withCommand(['mongod', '--replSet', 'rs0', '--bind_ip_all'])
    .withWaitStrategy(Wait.forLogMessage(/Waiting for connections/))
    .start();
  const init = await c.exec([
    'mongosh',
    '--quiet',
    '--eval',
    "rs.initiate({_id:'rs0',members:[{_id:0,host:'127.0.0.1:27017'}]}); " +
      'while (!db.hello().isWritablePrimary) { sleep(100); } print("primary")',
  ]);
  if (init.exitCode !== 0) {
    await c.stop();
    throw new Error(`mongo replica set init failed: ${init.output}`);
  }
  return started(c, `mongodb://${c.getHost()}:${c.getMappedPort(27017)}/holdfast?directConnection=true`);
}

async function consul(): Promise<StartedContainerBackend> {
  const { GenericContainer, Wait } = await testcontainers();
  const c = await new GenericContainer(serverVersions().containers.consul)
    .withExposedPorts(8500)
    .withCommand(['agent', '-dev', '-client=0.0.0.0'])
    .withWaitStrategy(Wait.forHttp('/v1/status/leader', 8500).forResponsePredicate((body) => body.trim() !== '""'))
    .start();
  return started(c, `consul://${c.getHost()}:${c.getMappedPort(8500)}`);
}

/** The official image runs a throwaway server for its init scripts first, hence the second "ready". */
async function postgres(): Promise<StartedContainerBackend> {
  const { GenericContainer, Wait } = await testcontainers();
  const c = await new GenericContainer(serverVersions().containers.postgres)
    .withExposedPorts(5432)
    .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
    .withWaitStrategy(Wait.forAll([Wait.forLogMessage(/database system is ready to accept connections/, 2), Wait.forListeningPorts()]))
    .start();
  return started(c, `postgres://postgres@${c.getHost()}:${c.getMappedPort(5432)}/postgres`);
}

async function mysql(): Promise<StartedContainerBackend> {
  const { GenericContainer, Wait } = await testcontainers();
  const c = await new GenericContainer(serverVersions().containers.mysql)
    .withExposedPorts(3306)
    .withEnvironment({ MARIADB_ALLOW_EMPTY_ROOT_PASSWORD: '1', MARIADB_DATABASE: 'holdfast' })
    .withWaitStrategy(Wait.forAll([Wait.forLogMessage(/ready for connections/, 2), Wait.forListeningPorts()]))
    .start();
  return started(c, `mysql://root@${c.getHost()}:${c.getMappedPort(3306)}/holdfast`);
}

/** etcd's image has no default command that listens beyond the container's loopback. */
async function etcd(): Promise<StartedContainerBackend> {
  const { GenericContainer, Wait } = await testcontainers();
  const c = await new GenericContainer(serverVersions().containers.etcd)
    .withExposedPorts(2379)
    .withCommand(['etcd', '--listen-client-urls=http://0.0.0.0:2379', '--advertise-client-urls=http://127.0.0.1:2379'])
    .withWaitStrategy(Wait.forHttp('/health', 2379).forResponsePredicate((body) => body.includes('"true"')))
    .start();
  return started(c, `etcd://${c.getHost()}:${c.getMappedPort(2379)}`);
}

/** The official image runs one standalone server; its log line says when the client port is bound. */
async function zookeeper(): Promise<StartedContainerBackend> {
  const { GenericContainer, Wait } = await testcontainers();
  const c = await new GenericContainer(serverVersions().containers.zookeeper)
    .withExposedPorts(2181)
    .withEnvironment({ ZOO_4LW_COMMANDS_WHITELIST: 'srvr,ruok,mntr,cons', ZOO_MAX_SESSION_TIMEOUT: '60000' })
    .withWaitStrategy(Wait.forAll([Wait.forLogMessage(/binding to port/), Wait.forListeningPorts()]))
    .start();
  return started(c, `zookeeper://${c.getHost()}:${c.getMappedPort(2181)}`);
}

export function startContainer(kind: BackendKind): Promise<StartedContainerBackend> {
  return { redis, mongodb, consul, postgres, mysql, etcd, zookeeper }[kind]();
}
