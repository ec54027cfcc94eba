// Runs only the validate queue: scale this stage on its own (see the Procfile).
import { runWorkerProcess } from '../src/queue/worker-main.js';

await runWorkerProcess(['validate']);
