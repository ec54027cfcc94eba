import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { enqueueWelcomeEmails } from '../../src/queue/queues.js';
import { accountPayload } from '../helpers/fixtures.js';
import { pollUntil } from '../helpers/poll.js';
import { createPipelineContext, type PipelineContext } from './setup.js';

interface Received {
  to: string[];
  body: string;
}
let ctx: PipelineContext;
let smtp: SMTPServer;
const received: Received[] = [];

beforeAll(async () => {
  // A real SMTP server on loopback that records what it is sent.
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, callback) {
      let body = '';
      stream.on('data', (d: Buffer) => (body += d.toString()));
      stream.on('end', () => {
        received.push({ to: session.envelope.rcptTo.map((r) => r.address), body });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  const port = (smtp.server.address() as { port: number }).port;
  ctx = await createPipelineContext({ env: { SMTP_URL: `smtp://127.0.0.1:${port}`, EMAIL_FROM: 'Accounts <accounts@example.com>' } });
  await ctx.createSupplier('MAILER', { sendCustomerEmails: true });
  await ctx.createSupplier('QUIET');
  await ctx.createTeam('Team');
  ctx.startWorkers();
});
afterAll(async () => {
  await ctx?.close();
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
});

const post = async (url: string, payload: object) => ctx.app.inject({ method: 'POST', url, payload, headers: ctx.auth });
async function createAccount(supplier: string, ext: string, overrides: Record<string, unknown> = {}): Promise<string> {
  expect((await post('/v1/data-import/account-import-process/create-or-update/', accountPayload(supplier, ext, overrides))).statusCode).toBe(201);
  const res = await post('/v1/data-import/account-import-process/process/', { external_account_number: ext, import_supplier_code: supplier, operations_team_name: 'Team' });
  expect(res.statusCode).toBe(201);
  return res.json().service_account_number;
}

it('sends one welcome e-mail per created account when the supplier says so, never twice', async () => {
  const number = await createAccount('MAILER', 'M-1', { billing_email: 'ada@example.com' });
  await pollUntil(async () => received.length >= 1, { what: 'the welcome e-mail' });
  expect(received[0]!.to).toEqual(['ada@example.com']);
  expect(received[0]!.body).toContain(number);

  // The same job enqueued again (a retry, a reconcile) does not send a second e-mail.
  const account = await ctx.deps.db.selectFrom('accounts').select('id').where('number', '=', number).executeTakeFirstOrThrow();
  await ctx.deps.queues.emails.remove(`welcome.${account.id}`);
  await enqueueWelcomeEmails(ctx.deps.queues, [account.id]);
  // A completed job is removed from Redis at once: the repeat has finished when its job is gone.
  await pollUntil(async () => (await ctx.deps.queues.emails.getJob(`welcome.${account.id}`)) === undefined, { what: 'the repeated job to finish' });
  expect(await ctx.deps.queues.emails.getFailedCount()).toBe(0);
  const row = await ctx.deps.db.selectFrom('customer_emails').selectAll().where('account_id', '=', account.id).executeTakeFirstOrThrow();
  expect(row.sent_at).not.toBeNull();

  // A supplier that does not send e-mails gets none; the first customer's address is used when there is no billing e-mail.
  await createAccount('QUIET', 'Q-1');
  const second = await createAccount('MAILER', 'M-2', { billing_email: undefined });
  await pollUntil(async () => received.length >= 2, { what: 'the second welcome e-mail' });
  expect(received[1]!.to).toEqual(['ada@example.com']);
  expect(received[1]!.body).toContain(second);
  const rows = await ctx.deps.db.selectFrom('customer_emails').select('account_id').execute();
  expect(rows).toHaveLength(2);
  expect(received).toHaveLength(2);
});
