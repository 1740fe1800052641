export {
  consulBinary,
  etcdBinary,
  etcdctlBinary,
  ferretdbBinary,
  mariadbBinaries,
  postgresBinDir,
  redisServerBinary,
  serversCacheDir,
} from './binaries.js';
export { type ConsulCluster, startConsulCluster, startConsulDev } from './consul.js';
export { containerRuntimeUnavailable } from './containers.js';
export { type EtcdCluster, startEtcd, startEtcdCluster } from './etcd.js';
export { type FerretdbServer, startFerretdb, startFerretdbOnPostgres } from './ferretdb.js';
export { startMariadb } from './mariadb.js';
export { freePort, freePorts } from './ports.js';
export { startPostgres } from './postgres.js';
export { type RedisSet, startRedis, startRedisSet } from './redis.js';
export { infoFields, redisCli } from './redis-cli.js';
export { type ClusterNodeInfo, type RedisClusterServers, startRedisCluster } from './redis-cluster.js';
export { type RedisSentinelServers, startRedisSentinel } from './redis-sentinel.js';
export { isRequired, requiredBackends } from './require.js';
export { resolveBackend, URL_ENV } from './resolve.js';
export type { BackendKind, LocalDatabase, ResolvedBackend } from './types.js';
export { BACKEND_KINDS } from './types.js';
export { serverVersions } from './versions.js';
export { startZookeeper, startZookeeperEnsemble, type ZookeeperEnsemble, zookeeperJar } from './zookeeper.js';
export { fourLetterWord, type ZookeeperMode, zookeeperMode } from './zookeeper-probe.js';
