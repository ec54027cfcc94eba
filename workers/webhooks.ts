// Runs only the webhooks queue (and its relay and sweep): scale webhook delivery on its own.
import { runWorkerProcess } from '../src/queue/worker-main.js';

await runWorkerProcess(['webhooks']);
