import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPipelineContext, type PipelineContext } from './setup.js';

let ctx: PipelineContext;
beforeAll(async () => {
  ctx = await createPipelineContext();
  await ctx.createSupplier('SMOKE', { documentsRoot: 'smoke' });
  await ctx.createTeam('Team');
  ctx.startWorkers();
});
afterAll(async () => ctx?.close());

it('drives a small cohort through every stage', async () => {
  const { ndjson } = await ctx.cohort({ count: 20, supplier: 'SMOKE', prefix: 'SM' });
  const { batch_id, total_items } = await ctx.upload(ndjson, { supplier: 'SMOKE', team: 'Team' });
  expect(total_items).toBe(20);
  const end = await ctx.waitForEnd(batch_id);
  if (end.failed) console.error(JSON.stringify(await ctx.items(batch_id, 'failed'), null, 1).slice(0, 3000));
  expect(end).toMatchObject({ state: 'COMPLETED', succeeded: 20, failed: 0 });
}, 120_000);
