import { afterAll, beforeAll, expect, it } from 'vitest';
import { accountHoldings } from './helpers.js';
import { createPipelineContext, type PipelineContext } from './setup.js';

let ctx: PipelineContext;
beforeAll(async () => {
  ctx = await createPipelineContext();
  await ctx.createSupplier('ATOM', { documentsRoot: 'atom' });
  await ctx.createTeam('Team');
  ctx.startWorkers();
});
afterAll(async () => ctx?.close());

type Row = Record<string, unknown>;

it("an item refused at extras keeps none of its extras, whichever extra refused and at which point", async () => {
  const { accounts } = await ctx.cohort({ count: 9, supplier: 'ATOM', prefix: 'AT' });
  const bundles = accounts.map((a) => structuredClone(a.bundle) as { transactions: Row[]; statements: Row[]; notes: Row[] });
  // Line 2: refused while writing, after its notes were written in the same transaction.
  bundles[1]!.transactions[1]!.transaction_id = bundles[1]!.transactions[0]!.transaction_id;
  // Line 5: refused while writing its statements, after its notes and transactions.
  bundles[4]!.statements[1] = { ...bundles[4]!.statements[1]!, bill_period_from_date: bundles[4]!.statements[0]!.bill_period_from_date, bill_period_to_date: bundles[4]!.statements[0]!.bill_period_to_date };
  // Line 8: its PDF is not in storage (found with the writes, as the REST endpoint reports it with the overlaps).
  bundles[7]!.statements[0]!.statement_path = 'nowhere/missing.pdf';
  const ndjson = bundles.map((b) => JSON.stringify(b)).join('\n') + '\n';

  const { batch_id } = await ctx.upload(ndjson, { supplier: 'ATOM', team: 'Team' });
  expect(await ctx.waitForEnd(batch_id)).toMatchObject({ state: 'COMPLETED_WITH_ERRORS', succeeded: 6, failed: 3 });
  const failed = await ctx.items(batch_id, 'failed');
  expect(failed.map((i) => [i.line, i.stage, i.state])).toEqual([
    [2, 'extras', 'failed'],
    [5, 'extras', 'failed'],
    [8, 'extras', 'failed'],
  ]);
  expect(JSON.stringify(failed[0]!.error)).toContain('duplicate_transaction_ids');
  expect(JSON.stringify(failed[1]!.error)).toContain('overlapping_statement_periods');
  expect(failed[2]!.error).toMatchObject({ code: 'invalid_request', errors: [expect.objectContaining({ attr: 'statements.0.statement_path' })] });

  const holdings = await accountHoldings(ctx, 'ATOM');
  for (const [i, b] of bundles.entries()) {
    const ext = (b as unknown as { account: { external_account_number: string } }).account.external_account_number;
    const [h] = holdings.get(ext)!;
    const refused = [1, 4, 7].includes(i);
    // The account itself was created at process; what the extras stage writes is all there or none of it.
    expect(h, ext).toMatchObject(
      refused
        ? { imported_notes: 0, moved_notes: 0, transactions: 0, statements: 0, payment_instructions: 0 }
        : { imported_notes: 3, transactions: 10, statements: 2, payment_instructions: 1 },
    );
  }
}, 120_000);
