import { z } from 'zod';

/**
 * One NDJSON line: an account and its history. Only the outer shape is checked here; each part
 * is validated by the same service its REST endpoint uses, at the stage that imports it.
 */
export const bundleSchema = z
  .strictObject({
    account: z.record(z.string(), z.unknown()),
    notes: z.array(z.unknown()).optional(),
    transactions: z.array(z.unknown()).optional(),
    statements: z.array(z.unknown()).optional(),
    payment_instruction: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'AccountBundle' });
export type Bundle = z.output<typeof bundleSchema>;

export const ITEM_STATE_FILTERS = ['failed', 'succeeded', 'pending'] as const;
export type ItemStateFilter = (typeof ITEM_STATE_FILTERS)[number];

export const uploadQuerySchema = z.strictObject({
  import_supplier: z.string().min(1),
  operations_team_name: z.string().min(1),
  dry_run: z.enum(['true', 'false']).optional().transform((v) => v === 'true'),
  /** Register the meter points of every account the batch creates (decisions.md §8): the registration sweep marks them. */
  register: z.enum(['true', 'false']).optional().transform((v) => v === 'true'),
});

export const itemsQuerySchema = z.strictObject({
  state: z.enum(ITEM_STATE_FILTERS).optional(),
  page_size: z.string().regex(/^\d+$/).optional(),
  // A line number: at most 2^31 - 1 (the column is an integer).
  cursor: z.string().regex(/^\d{1,10}$/).refine((c) => Number(c) <= 2_147_483_647, 'cursor out of range').optional(),
});

export const retryBodySchema = z.strictObject({
  external_account_numbers: z.array(z.string().min(1)).min(1).max(100_000).optional(),
  /** Only the items whose error envelope has this code. */
  code: z.string().min(1).max(200).optional(),
});
