// Runs every queue in one process: the simplest deployment (and what `npm start` does in-process).
import { QUEUE_NAMES } from '../src/queue/contract.js';
import { runWorkerProcess } from '../src/queue/worker-main.js';

await runWorkerProcess(QUEUE_NAMES);
