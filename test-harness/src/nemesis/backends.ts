import { consensusScenarios } from './scenarios/consensus.js';
import { consulScenarios } from './scenarios/consul.js';
import { ferretdbScenarios } from './scenarios/ferretdb.js';
import { redisClusterScenarios } from './scenarios/redis-cluster.js';
import { redisQuorumScenarios } from './scenarios/redis-quorum.js';
import { redisSentinelScenarios } from './scenarios/redis-sentinel.js';
import { serverClockLeaseScenarios } from './scenarios/server-clock-leases.js';
import { consulTarget } from './targets/consul.js';
import { etcdTarget } from './targets/etcd.js';
import { ferretdbTarget } from './targets/ferretdb.js';
import { mariadbTarget } from './targets/mariadb.js';
import { postgresTarget } from './targets/postgres.js';
import { redisClusterTarget } from './targets/redis-cluster.js';
import { redisQuorumTarget } from './targets/redis-quorum.js';
import { redisSentinelTarget } from './targets/redis-sentinel.js';
import { zookeeperTarget } from './targets/zookeeper.js';
import type { NemesisTarget, Scenario } from './types.js';

/** Every backend the nemesis runs on: how to start its servers in namespaces, and its scenarios. */
export const NEMESIS_BACKENDS: Record<string, { target: () => NemesisTarget; scenarios: Scenario[] }> = {
  consul: { target: consulTarget, scenarios: consulScenarios },
  etcd: { target: etcdTarget, scenarios: consensusScenarios('etcd') },
  mongodb: { target: ferretdbTarget, scenarios: ferretdbScenarios },
  mysql: { target: mariadbTarget, scenarios: serverClockLeaseScenarios },
  postgres: { target: postgresTarget, scenarios: serverClockLeaseScenarios },
  'redis-cluster': { target: redisClusterTarget, scenarios: redisClusterScenarios },
  'redis-quorum': { target: redisQuorumTarget, scenarios: redisQuorumScenarios },
  'redis-sentinel': { target: redisSentinelTarget, scenarios: redisSentinelScenarios },
  zookeeper: { target: zookeeperTarget, scenarios: consensusScenarios('ZooKeeper') },
};
