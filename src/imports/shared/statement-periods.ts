import { sql } from 'kysely';
import { groupBy, type SetRead } from './write-set.js';

export interface StoredStatementPeriod {
  statement_id: string;
  from: string;
  to: string;
}

/**
 * The historical statements each account holds, by account id: what new statements must not overlap,
 * and where the account's open statement period starts. One statement for the whole set.
 */
export const statementPeriods: SetRead<string, StoredStatementPeriod[]> = {
  async load(trx, accountIds) {
    const rows = await trx
      .selectFrom('historical_statements')
      .select(['account_id', 'statement_id', 'bill_period_from_date as from', 'bill_period_to_date as to'])
      .where(sql<boolean>`account_id = any(${[...new Set(accountIds)]}::bigint[])`)
      .orderBy('id')
      .execute();
    const byAccount = groupBy(rows, (r) => r.account_id);
    return accountIds.map((id) => (byAccount.get(id) ?? []).map(({ statement_id, from, to }) => ({ statement_id, from, to })));
  },
};
