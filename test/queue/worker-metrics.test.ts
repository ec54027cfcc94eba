import { afterAll, beforeAll, expect, it } from 'vitest';
import { pollUntil } from '../helpers/poll.js';
import { freePort } from '../helpers/ports.js';
import { createPipelineContext, type PipelineContext } from './setup.js';
import { spawnWorker, type WorkerProcess } from './worker-process.js';

let ctx: PipelineContext;
let worker: WorkerProcess | undefined;
const OPERATOR = { user: 'ops', password: 'operator-password-123' };


beforeAll(async () => {
  ctx = await createPipelineContext();
  await ctx.createSupplier('WM', { documentsRoot: 'wm' });
  await ctx.createTeam('Team');
});
afterAll(async () => {
  await worker?.kill('SIGKILL');
  await ctx?.close();
});

it('a worker process serves its job durations on WORKER_METRICS_PORT, behind the operator credentials', async () => {
  const port = await freePort();
  worker = await spawnWorker(ctx.config, ctx.workerEnv({ WORKER_METRICS_PORT: String(port), OPERATOR_USER: OPERATOR.user, OPERATOR_PASSWORD: OPERATOR.password }));
  const { ndjson } = await ctx.cohort({ count: 5, supplier: 'WM', prefix: 'WM' });
  const { batch_id } = await ctx.upload(ndjson, { supplier: 'WM', team: 'Team' });
  expect(await ctx.waitForEnd(batch_id)).toMatchObject({ state: 'COMPLETED', succeeded: 5 });

  const url = `http://127.0.0.1:${port}/metrics`;
  expect((await fetch(url)).status).toBe(401);
  const basic = `Basic ${Buffer.from(`${OPERATOR.user}:${OPERATOR.password}`).toString('base64')}`;
  const text = await pollUntil(async () => {
    const res = await fetch(url, { headers: { authorization: basic } });
    const body = await res.text();
    return res.status === 200 && /di_job_duration_seconds_count\{queue="extras",outcome="completed"\} 5/.test(body) ? body : null;
  }, { what: 'the worker to report 5 completed extras jobs' });
  for (const stage of ['validate', 'stage', 'process']) {
    expect(text).toMatch(new RegExp(`di_job_duration_seconds_count\\{queue="${stage}",outcome="completed"\\} 5`));
  }
}, 120_000);
