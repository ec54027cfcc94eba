import type { Job } from 'bullmq';
import { sql } from 'kysely';
import type { Transporter } from 'nodemailer';
import type { Deps } from '../deps.js';
import type { EmailJobData } from '../queue/contract.js';

/**
 * Sends one account's welcome e-mail. The row is claimed before sending and marked sent after, so a
 * repeated job never sends twice; a failed send releases the claim and the job retries. (A crash
 * between claim and send leaves the row claimed and unsent: never twice wins over at least once.)
 */
export function createEmailProcessor(deps: Pick<Deps, 'db' | 'log'>, transport: Transporter, from: string) {
  return async (job: Job<EmailJobData>): Promise<'sent' | 'skipped'> => {
    const claimed = await deps.db
      .updateTable('customer_emails as e')
      .set({ claimed_at: sql`now()` })
      .from('accounts as a')
      .innerJoin('import_suppliers as s', 's.id', 'a.import_supplier_id')
      .whereRef('a.id', '=', 'e.account_id')
      .where('e.account_id', '=', job.data.accountId)
      .where('e.claimed_at', 'is', null)
      .where('e.sent_at', 'is', null)
      .returning(['e.recipient', 'a.number', 'a.billing_name', 's.name as supplier_name'])
      .executeTakeFirst();
    if (!claimed) return 'skipped';
    try {
      await transport.sendMail({
        from,
        to: claimed.recipient,
        subject: `Welcome: your account ${claimed.number} has moved to us`,
        text: [
          `Hello${claimed.billing_name ? ` ${claimed.billing_name}` : ''},`,
          '',
          `Your energy account from ${claimed.supplier_name} has moved to us. Your new account number is ${claimed.number}.`,
          'Your balance, statements and payment arrangements have come with it; nothing changes for you today.',
        ].join('\n'),
      });
    } catch (err) {
      await deps.db.updateTable('customer_emails').set({ claimed_at: null }).where('account_id', '=', job.data.accountId).execute();
      throw err;
    }
    await deps.db.updateTable('customer_emails').set({ sent_at: sql`now()` }).where('account_id', '=', job.data.accountId).execute();
    return 'sent';
  };
}
