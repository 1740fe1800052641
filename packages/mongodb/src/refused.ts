import type { MongoClient, ServerHeartbeatFailedEvent } from 'mongodb';

/** Thrown when every host of the URL refused the connection: nothing listens there. */
export class ConnectionRefusedError extends Error {
  constructor(hosts: readonly string[], cause: unknown) {
    super(`connection refused by ${hosts.join(', ')} (nothing listens there)`, { cause });
    this.name = 'ConnectionRefusedError';
  }
}

function isRefusal(failure: unknown): boolean {
  const cause = (failure as { cause?: { code?: unknown } } | undefined)?.cause;
  return cause?.code === 'ECONNREFUSED' || /ECONNREFUSED/.test(String((failure as Error | undefined)?.message));
}

/**
 * Connects, but gives up as soon as every host has refused a connection, instead of waiting out
 * server selection: a refusal is a definite answer, unlike a silent host. A host that is still
 * starting refuses too; a waiting acquire simply tries again until its deadline.
 */
export async function connectUnlessRefused(client: MongoClient): Promise<void> {
  const hosts = client.options.hosts.map(String);
  const refusedBy = new Set<string>();
  let onFailed: ((event: ServerHeartbeatFailedEvent) => void) | undefined;
  const refused = new Promise<never>((_, reject) => {
    onFailed = (event) => {
      if (!isRefusal(event.failure)) return;
      refusedBy.add(event.connectionId);
      if (hosts.every((host) => refusedBy.has(host))) reject(new ConnectionRefusedError(hosts, event.failure));
    };
    client.on('serverHeartbeatFailed', onFailed);
  });
  const connecting = client.connect();
  connecting.catch(() => undefined);
  try {
    await Promise.race([connecting, refused]);
  } finally {
    client.off('serverHeartbeatFailed', onFailed!);
  }
}
