// Run by quorum-majority.test.ts (from the built dist/): takes a lock on the quorum in argv[2] and
// is SIGKILLed by itself as soon as the grant is handed out and its token printed, a crash at the
// worst moment for anything the provider still had to send.
import { createRedisProvider } from '../dist/index.js';

const [url, key] = process.argv.slice(2);
const provider = createRedisProvider({ url });
const lock = await provider.tryAcquire(key, { ttlMs: 1000 });
process.stdout.write(`${lock ? lock.token : 'none'}\n`, () => process.kill(process.pid, 'SIGKILL'));
