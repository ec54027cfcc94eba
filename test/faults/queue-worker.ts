// A worker process (src/queue/worker-main.ts) running only the queues named in WORKER_QUEUES
// (comma-separated): what the fault tests start and SIGKILL when one queue's worker must die alone.
import { QUEUE_NAMES, type QueueName } from '../../src/queue/contract.js';
import { runWorkerProcess } from '../../src/queue/worker-main.js';

const queues = (process.env.WORKER_QUEUES ?? '').split(',').filter((q) => q !== '');
const unknown = queues.filter((q) => !(QUEUE_NAMES as readonly string[]).includes(q));
if (queues.length === 0 || unknown.length > 0) {
  console.error(`WORKER_QUEUES must name queues among ${QUEUE_NAMES.join(', ')}; got ${JSON.stringify(process.env.WORKER_QUEUES ?? '')}`);
  process.exit(2);
}
await runWorkerProcess(queues as QueueName[]);
