// Runs only the extras queue: scale this stage on its own (see the Procfile).
import { runWorkerProcess } from '../src/queue/worker-main.js';

await runWorkerProcess(['extras']);
