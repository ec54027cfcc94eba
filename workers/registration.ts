// Runs only registration: its requests (rate-limited over every worker) and the events poller
// (one run at a time, whichever process takes it). Scale registration on its own.
import { runWorkerProcess } from '../src/queue/worker-main.js';

await runWorkerProcess(['registration', 'registration-events']);
