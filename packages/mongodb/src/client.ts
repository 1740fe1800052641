import { InvalidArgumentError } from '@holdfast/core';
import { MongoClient, type MongoClientOptions } from 'mongodb';

/** Driver timeouts that keep a hung or unreachable server from holding anything longer than a call may take. */
const BOUNDED_BY_CALL = ['serverSelectionTimeoutMS', 'connectTimeoutMS', 'socketTimeoutMS'] as const;

/**
 * The driver client for a URL, without connecting. A URL the driver refuses (an unknown option, a
 * malformed host list) is an InvalidArgumentError here, before any server is contacted.
 */
export function createClient(url: string | undefined, given: MongoClientOptions = {}, callTimeoutMs: number): MongoClient {
  if (url === undefined) throw new InvalidArgumentError('url', 'createMongoProvider needs a url or a client');
  const options: MongoClientOptions = { ...given };
  const inUrl = new URLSearchParams(url.includes('?') ? url.slice(url.indexOf('?') + 1) : '');
  for (const name of BOUNDED_BY_CALL) {
    if (options[name] !== undefined || [...inUrl.keys()].some((key) => key.toLowerCase() === name.toLowerCase())) continue;
    options[name] = name === 'socketTimeoutMS' ? 2 * callTimeoutMs : callTimeoutMs;
  }
  try {
    return new MongoClient(url, options);
  } catch (error) {
    // The constructor only parses (MongoParseError, also from mongodb-connection-string-url, which is
    // no MongoError): whatever it throws is about the URL or the options.
    throw new InvalidArgumentError('url', `the MongoDB driver refused it: ${error instanceof Error ? error.message : String(error)}`);
  }
}
