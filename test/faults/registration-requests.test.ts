import { afterAll, beforeAll, expect, it } from 'vitest';
import { STAGES } from '../../src/queue/contract.js';
import { enqueueRegistrations } from '../../src/queue/queues.js';
import { createRegistrationEventsProcessor } from '../../src/queue/registration.js';
import { startFakeGateway, type FakeGateway } from '../helpers/fake-gateway.js';
import { pollUntil } from '../helpers/poll.js';
import { LONG } from '../queue/helpers.js';
import type { PipelineContext } from '../queue/setup.js';
import type { WorkerProcess } from '../queue/worker-process.js';
import { registrationFaultContext, registrationHistories, registrationHistoryProblems, spawnQueueWorker } from './helpers.js';

/**
 * Registration requests under faults (issue 15 part 2; decisions.md §8): marking twice at once, two
 * worker processes, a worker SIGKILLed between the request and its record, and the gateway refusing
 * (503) or not answering for a while. One attempt per marking, one request per attempt in every case
 * but the killed worker's, whose retry resends with the same Idempotency-Key and is answered 409:
 * the gateway holds one registration per request id. The key is the last line of defence, not the only one.
 */

const SUPPLIER = 'REGRQ';
const TEAM = 'Requests Team';
let gateway: FakeGateway;
let ctx: PipelineContext;
const workers: WorkerProcess[] = [];

interface Account {
  ext: string;
  points: Array<{ id: string; mpxn: string }>;
}
let accounts: Account[];
const take = (() => {
  let next = 0;
  return (n: number): Account[] => {
    const out = accounts.slice(next, next + n);
    next += n;
    if (out.length !== n) throw new Error('not enough accounts in the cohort');
    return out;
  };
})();

type Flows = { meter_points: Array<{ mpxn: string; status: string; error_detail?: string }> };
const send = async (ext: string): Promise<Flows> => {
  const res = await ctx.app.inject({ method: 'POST', url: `/v1/data-import/send-registration-flows/${SUPPLIER}/${ext}/`, headers: ctx.auth });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<Flows>();
};
const workerEnv = () => ctx.workerEnv({ WORKER_LOCK_MS: '2000', WORKER_CONCURRENCY_REGISTRATION: '2' });

async function meterPoints(ids: readonly string[]) {
  return ctx.deps.db
    .selectFrom('meter_points as m')
    .leftJoin('registration_attempts as a', 'a.request_id', 'm.registration_request_id')
    .select(['m.id', 'm.registration_status as status', 'm.registration_request_id as request_id', 'a.send_started_at', 'a.answered_at', 'a.taken'])
    .where('m.id', 'in', [...ids])
    .orderBy('m.id')
    .execute();
}

/** Waits until every one of these meter points is in `status`; answers their rows. */
const waitAll = (ids: readonly string[], status: string, timeoutMs = 20_000) =>
  pollUntil(async () => {
    const rows = await meterPoints(ids);
    return rows.every((r) => r.status === status) ? rows : null;
  }, { timeoutMs, what: `${ids.length} meter points to be ${status}` });

/** Attempts per meter point (registration_attempts rows), over these meter points. */
async function attemptsPerPoint(ids: readonly string[]): Promise<number[]> {
  const rows = await ctx.deps.db.selectFrom('registration_attempts').select('meter_point_id').where('meter_point_id', 'in', [...ids]).execute();
  return ids.map((id) => rows.filter((r) => String(r.meter_point_id) === id).length);
}

/** The POSTs the gateway received for a request id: what each answered (undefined: never answered) and the key it carried. */
const postsOf = (requestId: string) =>
  gateway.requests
    .filter((r) => r.method === 'POST' && r.path === '/registrations' && (r.body as { request_id?: string } | undefined)?.request_id === requestId)
    .map((r) => ({ status: r.status, key: r.headers['idempotency-key'] }));

async function expectConsistentHistories(ids: readonly string[]): Promise<void> {
  const histories = await registrationHistories(ctx, ids);
  const now = await meterPoints(ids);
  expect(ids.flatMap((id) => registrationHistoryProblems(histories.get(id)!, now.find((r) => String(r.id) === id)!.status).map((p) => `${id}: ${p}`))).toEqual([]);
  // Each meter point was marked once and taken once.
  for (const id of ids) expect(histories.get(id)!.filter((h) => h.applied && h.cause !== 'event').map((h) => h.cause)).toEqual(['marked', 'taken']);
}

beforeAll(async () => {
  gateway = await startFakeGateway();
  const count = 4 + 6 + 1 + 3;
  // Only the stages here: each test runs the registration queue where it needs it (in this process, or in others).
  const started = await registrationFaultContext(gateway, { supplier: SUPPLIER, team: TEAM, prefix: 'RQ', seed: 1502, count, queues: STAGES });
  ctx = started.ctx;
  const generated = started.generated;
  const rows = await ctx.deps.db
    .selectFrom('meter_points as m')
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .select(['m.id', 'm.identifier', 'a.external_account_number'])
    .orderBy('m.id')
    .execute();
  accounts = generated.map((g) => {
    const ext = g.bundle.account.external_account_number as string;
    return { ext, points: rows.filter((r) => r.external_account_number === ext).map((r) => ({ id: String(r.id), mpxn: r.identifier })) };
  });
  expect(accounts.every((a) => a.points.length === 2)).toBe(true);
}, LONG);

afterAll(async () => {
  for (const w of workers) await w.kill('SIGKILL');
  await ctx?.close();
  await gateway?.close();
});

it('marking twice at once (two send-registration-flows per account, concurrently): one attempt and one request per meter point; re-enqueueing the answered attempts sends nothing', async () => {
  const group = take(4);
  const ids = group.flatMap((a) => a.points.map((p) => p.id));
  const set = ctx.startWorkers(['registration']);
  const results: Array<{ jobId: string; result: unknown }> = [];
  set.workers[0]!.on('completed', (job, result) => results.push({ jobId: job.id!, result }));
  try {
    const answers = await Promise.all(group.flatMap((a) => [send(a.ext), send(a.ext)]));
    for (const [i, a] of group.entries()) {
      const both = [answers[2 * i]!, answers[2 * i + 1]!];
      for (const p of a.points) {
        const said = both.map((b) => b.meter_points.find((m) => m.mpxn === p.mpxn)!);
        // One of the two marked it; the other found the attempt under way.
        expect(said.map((s) => s.status).sort()).toEqual(['REGISTRATION_FLOW_ERROR', 'REGISTRATION_FLOW_SUCCESS']);
        expect(said.find((s) => s.status === 'REGISTRATION_FLOW_ERROR')!.error_detail).toMatch(/^A registration attempt is already under way \((UNDERGOING_REGISTRATION|REGISTRATION_REQUESTED)\)\.$/);
      }
    }
    const rows = await waitAll(ids, 'REGISTRATION_REQUESTED');
    expect(await attemptsPerPoint(ids)).toEqual(ids.map(() => 1));
    const requestIds = rows.map((r) => r.request_id!);
    for (const id of requestIds) {
      expect(postsOf(id)).toEqual([{ status: 202, key: id }]);
      expect(gateway.registrations.has(id)).toBe(true);
    }

    // The same attempts enqueued again (a lost-job sweep, an operator's retry): their jobs run and send nothing.
    await enqueueRegistrations(ctx.deps.queues, requestIds.map((requestId) => ({ requestId, kind: 'request' as const })));
    await pollUntil(async () => requestIds.every((id) => results.some((r) => r.jobId === `reg.${id}` && r.result === 'nothing to send')), {
      timeoutMs: 10_000,
      what: 'the re-enqueued jobs to run',
    });
    // And marking once more starts nothing.
    for (const a of group) expect((await send(a.ext)).meter_points.map((p) => p.status)).toEqual(['REGISTRATION_FLOW_ERROR', 'REGISTRATION_FLOW_ERROR']);
    expect(await attemptsPerPoint(ids)).toEqual(ids.map(() => 1));
    for (const id of requestIds) expect(postsOf(id)).toEqual([{ status: 202, key: id }]);
    await expectConsistentHistories(ids);
  } finally {
    await set.close();
  }
});

it('two worker processes on the registration queue, both sending at once: one request per attempt', async ({ annotate }) => {
  const group = take(6);
  const ids = group.flatMap((a) => a.points.map((p) => p.id));
  const pair = await Promise.all([0, 1].map(() => spawnQueueWorker(ctx.config, workerEnv(), ['registration'], workers)));
  try {
    // Slow answers, so both processes have requests out at the same time.
    gateway.answerNext(ids.length, { status: 202, delayMs: 300 }, { route: 'registration' });
    const from = gateway.requests.length;
    for (const a of group) expect((await send(a.ext)).meter_points.map((p) => p.status)).toEqual(['REGISTRATION_FLOW_SUCCESS', 'REGISTRATION_FLOW_SUCCESS']);
    let inFlight = 0;
    const rows = await pollUntil(async () => {
      inFlight = Math.max(inFlight, gateway.requests.slice(from).filter((r) => r.method === 'POST' && r.status === undefined).length);
      const now = await meterPoints(ids);
      return now.every((r) => r.status === 'REGISTRATION_REQUESTED') ? now : null;
    }, { timeoutMs: 20_000, what: 'every meter point to be REGISTRATION_REQUESTED' });
    // More requests out at once than one process runs (WORKER_CONCURRENCY_REGISTRATION=2): both processes sent.
    expect(inFlight).toBeGreaterThan(2);
    expect(gateway.script).toEqual([]);
    expect(await attemptsPerPoint(ids)).toEqual(ids.map(() => 1));
    for (const r of rows) expect(postsOf(r.request_id!)).toEqual([{ status: 202, key: r.request_id }]);
    expect(gateway.requests.slice(from).filter((r) => r.method === 'POST').length).toBe(ids.length);
    await expectConsistentHistories(ids);
    await annotate(`[registration-requests] two processes: ${ids.length} attempts, at most ${inFlight} requests out at once`);
  } finally {
    for (const w of pair) await w.kill('SIGKILL');
  }
});

it('a worker SIGKILLed between the request and its record: another resends with the same Idempotency-Key and the gateway holds one registration (409); an event that comes first counts as the request taken', async () => {
  const [account] = take(1);
  const ids = account!.points.map((p) => p.id);
  const first = await spawnQueueWorker(ctx.config, workerEnv(), ['registration'], workers);
  let second: WorkerProcess | undefined;
  try {
    // The gateway takes each request and never answers: the worker dies with its requests out.
    gateway.answerNext(ids.length, { status: 202, hang: true, takes: true }, { route: 'registration' });
    expect((await send(account!.ext)).meter_points.map((p) => p.status)).toEqual(['REGISTRATION_FLOW_SUCCESS', 'REGISTRATION_FLOW_SUCCESS']);
    const marked = await meterPoints(ids);
    const requestIds = marked.map((r) => r.request_id!);
    await pollUntil(async () => requestIds.every((id) => gateway.registrations.has(id) && postsOf(id).length === 1 && postsOf(id)[0]!.status === undefined), {
      timeoutMs: 20_000,
      what: 'both requests to be taken by the gateway and unanswered',
    });
    // Sent, not recorded: the attempt knows a request may be out.
    for (const r of await meterPoints(ids)) expect(r).toMatchObject({ status: 'UNDERGOING_REGISTRATION', send_started_at: expect.any(Date), answered_at: null, taken: null });

    // The gateway reports the first acceptance before the service has recorded that it took the
    // request: the event proves the gateway has it, so the meter point moves to REGISTRATION_REQUESTED
    // (a 'taken' line naming the event) and the acceptance applies; the retry's answer later finds the
    // attempt answered and changes nothing.
    const early = gateway.accept(requestIds[0]!);
    const poll = createRegistrationEventsProcessor({
      db: ctx.deps.db,
      log: ctx.deps.log,
      gateway: ctx.config.registrationGateway,
      queues: ctx.deps.queues,
      markAccounts: (accountIds) => ctx.built.services.registration.markAccounts(accountIds),
    });
    expect(await poll()).toEqual({ pages: 1, applied: 1 });
    expect((await meterPoints([ids[0]!]))[0]).toMatchObject({ status: 'REGISTRATION_ACCEPTED', answered_at: expect.any(Date), taken: true });

    await first.kill('SIGKILL');
    second = await spawnQueueWorker(ctx.config, workerEnv(), ['registration'], workers);
    await pollUntil(async () => ((await meterPoints([ids[1]!]))[0]!.status === 'REGISTRATION_REQUESTED' ? true : undefined), { timeoutMs: 20_000, what: 'the second request to be recorded taken' });
    // The first: its acceptance already showed the gateway has it, so the retry sends nothing.
    expect(postsOf(requestIds[0]!)).toEqual([{ status: undefined, key: requestIds[0] }]);
    // The second: twice, with the same key: the killed worker's request (never answered) and the retry's, answered 409.
    expect(postsOf(requestIds[1]!)).toEqual([
      { status: undefined, key: requestIds[1] },
      { status: 409, key: requestIds[1] },
    ]);
    for (const [i, id] of requestIds.entries()) {
      const bodies = gateway.requests.filter((r) => r.method === 'POST' && r.headers['idempotency-key'] === id).map((r) => r.body);
      if (bodies.length > 1) expect(bodies[1]).toEqual(bodies[0]);
      expect(gateway.registrations.get(id)).toEqual(bodies[0]);
      expect(gateway.registrations.get(id)!.mpxn).toBe(account!.points[i]!.mpxn);
    }
    expect(await attemptsPerPoint(ids)).toEqual([1, 1]);
    const [accepted, requested] = await meterPoints(ids);
    expect(accepted).toMatchObject({ status: 'REGISTRATION_ACCEPTED', answered_at: expect.any(Date), taken: true });
    expect(requested).toMatchObject({ status: 'REGISTRATION_REQUESTED', answered_at: expect.any(Date), taken: true });
    await expectConsistentHistories(ids);
    const lines = (await registrationHistories(ctx, [ids[0]!])).get(ids[0]!)!.filter((h) => h.cause !== 'marked');
    expect(lines.map((e) => [e.cause, e.event_id, e.applied, e.from_status, e.to_status])).toEqual([
      ['taken', null, true, 'UNDERGOING_REGISTRATION', 'REGISTRATION_REQUESTED'],
      ['event', early.event_id, true, 'REGISTRATION_REQUESTED', 'REGISTRATION_ACCEPTED'],
    ]);
  } finally {
    await first.kill('SIGKILL');
    await second?.kill('SIGKILL');
  }
}, 60_000);

it('the gateway refusing requests for a while (503), one of them hanging until the client gives up: each retried with its key until taken, once', async ({ annotate }) => {
  const group = take(3);
  const ids = group.flatMap((a) => a.points.map((p) => p.id));
  gateway.answerNext(1_000, { status: 503, retryAfter: 1 }, { route: 'registration' });
  const set = ctx.startWorkers(['registration']);
  const started = Date.now();
  try {
    for (const a of group) await send(a.ext);
    const requestIds = (await meterPoints(ids)).map((r) => r.request_id!);
    const [hung, ...others] = requestIds;
    // One request is taken by the gateway but never answered: the client's own timeout ends it.
    gateway.script.unshift({ request_id: hung!, status: 202, hang: true, takes: true });
    const answered = (id: string, status: number) => postsOf(id).filter((p) => p.status === status).length;
    await pollUntil(async () => others.every((id) => answered(id, 503) >= 2) && postsOf(hung!).some((p) => p.status === undefined), {
      timeoutMs: 20_000,
      what: 'every request refused twice, and one hanging',
    });
    expect((await meterPoints(ids)).map((r) => r.status)).toEqual(ids.map(() => 'UNDERGOING_REGISTRATION'));
    // Back up: the default answers again (202; 409 for a request already taken).
    gateway.script.splice(0);
    await waitAll(ids, 'REGISTRATION_REQUESTED', 40_000);
    for (const id of others) {
      const posts = postsOf(id);
      expect(posts.at(-1)).toEqual({ status: 202, key: id });
      expect(posts.slice(0, -1)).toEqual(posts.slice(0, -1).map(() => ({ status: 503, key: id })));
      expect(posts.length).toBeGreaterThanOrEqual(3);
    }
    const hungPosts = postsOf(hung!);
    expect(hungPosts.slice(-2)).toEqual([
      { status: undefined, key: hung },
      { status: 409, key: hung },
    ]);
    expect(hungPosts.slice(0, -2).every((p) => p.status === 503 && p.key === hung)).toBe(true);
    for (const id of requestIds) expect(gateway.registrations.has(id)).toBe(true);
    expect(await attemptsPerPoint(ids)).toEqual(ids.map(() => 1));
    for (const r of await meterPoints(ids)) expect(r).toMatchObject({ answered_at: expect.any(Date), taken: true });
    await expectConsistentHistories(ids);
    await annotate(`[registration-requests] gateway down: posts per attempt ${JSON.stringify(requestIds.map((id) => postsOf(id).length))}; all taken after ${Date.now() - started} ms`);
  } finally {
    gateway.script.splice(0);
    await set.close();
  }
}, 60_000);
