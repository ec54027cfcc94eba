import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { STAGES } from '../../src/queue/contract.js';
import { createRegistrationEventsProcessor } from '../../src/queue/registration.js';
import { startFakeGateway, type FakeGateway, type FakeGatewayEventInput, type GatewayEventType } from '../helpers/fake-gateway.js';
import { pollUntil } from '../helpers/poll.js';
import { LONG } from '../queue/helpers.js';
import type { PipelineContext } from '../queue/setup.js';
import type { WorkerProcess } from '../queue/worker-process.js';
import { eventsKeptTwice, registrationCursor, registrationFaultContext, registrationHistories, registrationHistoryProblems, spawnQueueWorker, type RegistrationHistoryRow } from './helpers.js';

/**
 * The registration events poller under faults (issue 15 part 3; decisions.md §8): the scriptable
 * gateway on loopback sends duplicated, late and out-of-order events; the poller is SIGKILLed in a
 * real process mid-page and between pages; two pollers run at once; the event feed is down for a
 * while. Nothing may be lost, nothing applied twice, and no status may move backwards: every
 * event is kept in its meter point's history exactly once (applied, or not with the reason), and
 * each history reads as one unbroken chain of §8's moves (registrationHistoryProblems).
 */

const SUPPLIER = 'REGEV';
const TEAM = 'Events Team';
let gateway: FakeGateway;
let ctx: PipelineContext;
const workers: WorkerProcess[] = [];

interface Point {
  id: string;
  mpxn: string;
  ext: string;
  /** The attempt the gateway took when the test began. */
  requestId: string;
}

/** Meter points by account, in cohort order; each test takes its own accounts. */
let accounts: Point[][];
const SCENARIO_ACCOUNTS = 2;
const take = (() => {
  let next = 0;
  return (n: number): Point[][] => {
    const out = accounts.slice(next, next + n);
    next += n;
    if (out.length !== n) throw new Error('not enough accounts in the cohort');
    return out;
  };
})();

const send = (ext: string) => ctx.app.inject({ method: 'POST', url: `/v1/data-import/send-registration-flows/${SUPPLIER}/${ext}/`, headers: ctx.auth });

async function pointsNow(ids: readonly string[]): Promise<Map<string, { status: string; requestId: string | null }>> {
  const rows = await ctx.deps.db.selectFrom('meter_points').select(['id', 'registration_status', 'registration_request_id']).where('id', 'in', [...ids]).execute();
  return new Map(rows.map((r) => [String(r.id), { status: r.registration_status, requestId: r.registration_request_id }]));
}

const registrationEvents = async (): Promise<number> =>
  Number((await ctx.deps.db.selectFrom('registration_events').select(({ fn }) => fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n);

/** The events of the history only, in the form the tests compare. */
const eventRows = (rows: readonly RegistrationHistoryRow[]) =>
  rows.filter((r) => r.cause === 'event').map((r) => ({ event_id: r.event_id, event_type: r.event_type, applied: r.applied, from_status: r.from_status, to_status: r.to_status, reason: r.reason }));

/** Waits for the poller to have applied the whole feed: its saved cursor is the feed's end. */
async function waitForFeedEnd(what: string, timeoutMs = 20_000): Promise<void> {
  const end = gateway.events.length;
  await pollUntil(async () => (await registrationCursor(ctx))?.endsWith(`.${end}`), { timeoutMs, what: `the cursor to reach event ${end} (${what})` });
}

/** Every history of these points reads as one chain of §8's moves ending at the status each has now. */
async function expectConsistentHistories(points: readonly Point[]): Promise<Map<string, RegistrationHistoryRow[]>> {
  const histories = await registrationHistories(ctx, points.map((p) => p.id));
  const now = await pointsNow(points.map((p) => p.id));
  const problems = points.flatMap((p) => registrationHistoryProblems(histories.get(p.id)!, now.get(p.id)!.status).map((x) => `${p.mpxn}: ${x}`));
  expect(problems).toEqual([]);
  return histories;
}

beforeAll(async () => {
  gateway = await startFakeGateway();
  const count = 8 * SCENARIO_ACCOUNTS + 3 + 2 + 2;
  // The stages create the accounts; the registration queue sends each attempt. No poller yet: each test starts its own.
  const started = await registrationFaultContext(gateway, { supplier: SUPPLIER, team: TEAM, prefix: 'EV', seed: 1501, count, queues: [...STAGES, 'registration'] });
  ctx = started.ctx;
  const generated = started.generated;
  const exts = generated.map((a) => a.bundle.account.external_account_number as string);
  const sent = await Promise.all(exts.map(send));
  for (const res of sent) expect(res.json<{ meter_points: Array<{ status: string }> }>().meter_points.every((p) => p.status === 'REGISTRATION_FLOW_SUCCESS'), res.body).toBe(true);
  const rows = await pollUntil(
    async () => {
      const all = await ctx.deps.db
        .selectFrom('meter_points as m')
        .innerJoin('accounts as a', 'a.id', 'm.account_id')
        .select(['m.id', 'm.identifier', 'a.external_account_number', 'm.registration_status', 'm.registration_request_id'])
        .orderBy('m.id')
        .execute();
      return all.length === 2 * count && all.every((r) => r.registration_status === 'REGISTRATION_REQUESTED') ? all : null;
    },
    { timeoutMs: 30_000, what: 'every meter point to be REGISTRATION_REQUESTED' },
  );
  accounts = exts.map((ext) =>
    rows.filter((r) => r.external_account_number === ext).map((r) => ({ id: String(r.id), mpxn: r.identifier, ext, requestId: r.registration_request_id! })),
  );
}, LONG);

afterAll(async () => {
  for (const w of workers) await w.kill('SIGKILL');
  await ctx?.close();
  await gateway?.close();
});

// ---------------------------------------------------------------------------------------------------
// 1. Duplicated, late and out-of-order events, over many meter points

/**
 * One event a scenario sends, and what §8 makes of it: `to` applied (the status it moves to),
 * `found` not applied (it does not fit the status found), `late` not applied (of the first attempt,
 * sent after the re-send), `again` the same event (same event_id) as the step labelled so: nothing.
 */
type Step = { type: GatewayEventType; as?: string } & ({ to: string } | { found: string } | { late: true } | { again: string });
const ok = (type: GatewayEventType, to: string, as?: string): Step => ({ type, to, ...(as && { as }) });
const skip = (type: GatewayEventType, found: string, as?: string): Step => ({ type, found, ...(as && { as }) });
const late = (type: GatewayEventType): Step => ({ type, late: true });
/** The type is a placeholder: a repeat is sent exactly as its original (same event_id, request_id, type). */
const again = (as: string): Step => ({ type: 'ACCEPTED', again: as });

interface Scenario {
  name: string;
  /** Sent in one push: all scenarios' first events share one page of the feed. */
  first: Step[];
  /** Sent once the first are applied: a later page. */
  later?: Step[];
  /** Re-send (a new attempt) once `later` is applied; `last` is then of the new attempt unless `late`. */
  resend?: true;
  last?: Step[];
  final: string;
}

const RR = 'REGISTRATION_REQUESTED';
const RA = 'REGISTRATION_ACCEPTED';
const OR = 'OBJECTION_RECEIVED';
const SCENARIOS: Scenario[] = [
  {
    name: 'a duplicate in the same page applies once',
    first: [ok('ACCEPTED', RA, 'acc'), again('acc'), ok('SUPPLY_STARTED', 'ON_SUPPLY', 'sup'), again('sup')],
    final: 'ON_SUPPLY',
  },
  {
    name: 'duplicates in later pages apply nothing',
    first: [ok('ACCEPTED', RA, 'acc')],
    later: [again('acc'), ok('OBJECTION_RECEIVED', OR, 'obj'), again('acc')],
    last: [again('obj'), again('acc')],
    final: OR,
  },
  {
    name: 'SUPPLY_STARTED before ACCEPTED is kept and moves nothing, also when delivered again',
    first: [skip('SUPPLY_STARTED', RR, 'early'), ok('ACCEPTED', RA)],
    later: [again('early')],
    final: RA,
  },
  {
    name: 'OBJECTION_UPHELD before OBJECTION_RECEIVED is kept and moves nothing',
    first: [ok('ACCEPTED', RA), skip('OBJECTION_UPHELD', RA), ok('OBJECTION_RECEIVED', OR)],
    final: OR,
  },
  {
    name: 'an objection withdrawn, then its uphold arriving late; then on supply, and a stale ACCEPTED',
    first: [ok('OBJECTION_RECEIVED', OR), ok('OBJECTION_WITHDRAWN', RA), skip('OBJECTION_UPHELD', RA)],
    later: [ok('SUPPLY_STARTED', 'ON_SUPPLY'), skip('ACCEPTED', 'ON_SUPPLY')],
    final: 'ON_SUPPLY',
  },
  {
    name: "rejected (an ACCEPTED after it moves nothing); re-sent; the first attempt's events arrive late",
    first: [ok('REJECTED', 'REGISTRATION_REJECTED', 'rej'), skip('ACCEPTED', 'REGISTRATION_REJECTED')],
    resend: true,
    last: [late('SUPPLY_STARTED'), again('rej'), ok('ACCEPTED', RA), late('ACCEPTED'), late('OBJECTION_RECEIVED')],
    final: RA,
  },
  {
    name: "objection upheld; re-sent; the first attempt's OBJECTION_WITHDRAWN arrives late, twice",
    first: [ok('ACCEPTED', RA), ok('OBJECTION_RECEIVED', OR), ok('OBJECTION_UPHELD', 'REGISTRATION_OBJECTED')],
    later: [skip('OBJECTION_WITHDRAWN', 'REGISTRATION_OBJECTED', 'wd')],
    resend: true,
    last: [late('OBJECTION_WITHDRAWN'), again('wd'), ok('REJECTED', 'REGISTRATION_REJECTED'), skip('ACCEPTED', 'REGISTRATION_REJECTED')],
    final: 'REGISTRATION_REJECTED',
  },
  {
    name: 'events that never fit (WITHDRAWN with no withdrawal, REJECTED after ACCEPTED, anything on supply)',
    first: [skip('WITHDRAWN', RR), skip('OBJECTION_WITHDRAWN', RR), skip('SUPPLY_STARTED', RR), ok('ACCEPTED', RA), skip('WITHDRAWN', RA), skip('REJECTED', RA)],
    later: [ok('SUPPLY_STARTED', 'ON_SUPPLY'), skip('OBJECTION_RECEIVED', 'ON_SUPPLY'), skip('WITHDRAWN', 'ON_SUPPLY')],
    final: 'ON_SUPPLY',
  },
];

it('duplicated, late and out-of-order events over many meter points: final statuses as §8 gives, each event kept once, no status moved backwards', async () => {
  const set = ctx.startWorkers(['registration-events']);
  const groups = SCENARIOS.map((s) => ({ scenario: s, points: take(SCENARIO_ACCOUNTS).flat() }));
  const points = groups.flatMap((g) => g.points);
  const ofPoint = new Map(groups.flatMap((g) => g.points.map((p) => [p.id, g.scenario] as const)));
  // Per meter point: the events sent (by label), the attempts, and the history §8 predicts.
  const sentAs = new Map(points.map((p) => [p.id, new Map<string, FakeGatewayEventInput>()]));
  let eventSeq = 0;
  const attempts = new Map(points.map((p) => [p.id, { first: p.requestId, current: p.requestId }]));
  const expected = new Map(points.map((p) => [p.id, { status: RR, events: [] as Array<ReturnType<typeof eventRows>[number]> }]));
  const feedBefore = gateway.events.length;

  /** Sends one phase: step k of every meter point, then step k+1..., so a page interleaves them all. */
  const sendPhase = (phase: 'first' | 'later' | 'last') => {
    const rounds = Math.max(...points.map((p) => (ofPoint.get(p.id)![phase] ?? []).length));
    const batch: Array<{ point: Point; step: Step; input: FakeGatewayEventInput }> = [];
    for (let k = 0; k < rounds; k++) {
      for (const point of points) {
        const step = ofPoint.get(point.id)![phase]?.[k];
        if (!step) continue;
        const { first, current } = attempts.get(point.id)!;
        const labelled = sentAs.get(point.id)!;
        // Event ids are given here, so a repeat may follow its original within the same push.
        const input: FakeGatewayEventInput =
          'again' in step ? { ...labelled.get(step.again)! } : { event_id: `t-${point.mpxn}-${++eventSeq}`, request_id: 'late' in step ? first : current, type: step.type, mpxn: point.mpxn };
        if (step.as) labelled.set(step.as, input);
        batch.push({ point, step, input });
      }
    }
    const events = gateway.push(batch.map((b) => b.input));
    for (const [i, { point, step }] of batch.entries()) {
      const event = events[i]!;
      if ('again' in step) continue;
      const want = expected.get(point.id)!;
      const row = { event_id: event.event_id, event_type: step.type, applied: 'to' in step, from_status: want.status, to_status: 'to' in step ? step.to : null, reason: null as string | null };
      if ('found' in step) row.reason = `${step.type} does not apply to a meter point in ${step.found}`;
      if ('late' in step) row.reason = 'the event is for an earlier attempt';
      if ('to' in step) want.status = step.to;
      want.events.push(row);
    }
    return events.length;
  };

  try {
    await runScenarios();
  } finally {
    await set.close();
  }

  async function runScenarios() {
    // Phase 1, with three events for request ids this service never sent (kept by id, skipped).
    const unknown = gateway.push([0, 1, 2].map((i) => ({ request_id: randomUUID(), type: 'ACCEPTED' as const, mpxn: `UNKNOWN${i}` })));
    const firstPage = sendPhase('first');
    expect(firstPage + unknown.length).toBeLessThan(500); // one page (EVENTS_PAGE): duplicates share it with their originals
    await waitForFeedEnd('the first page');
    sendPhase('later');
    await waitForFeedEnd('the later page');

    // Re-send where the scenario says: a new attempt, taken by the gateway, then its events and the first attempt's late ones.
    const resent = groups.filter((g) => g.scenario.resend);
    for (const ext of new Set(resent.flatMap((g) => g.points.map((p) => p.ext)))) {
      const res = await send(ext);
      expect(res.json<{ meter_points: Array<{ status: string }> }>().meter_points.map((p) => p.status), res.body).toEqual(['REGISTRATION_FLOW_SUCCESS', 'REGISTRATION_FLOW_SUCCESS']);
    }
    const resentPoints = resent.flatMap((g) => g.points);
    const renewed = await pollUntil(
      async () => {
        const now = await pointsNow(resentPoints.map((p) => p.id));
        return resentPoints.every((p) => now.get(p.id)!.status === RR && now.get(p.id)!.requestId !== p.requestId) ? now : null;
      },
      { timeoutMs: 20_000, what: 'the re-sent meter points to be REGISTRATION_REQUESTED on a new attempt' },
    );
    for (const p of resentPoints) {
      attempts.get(p.id)!.current = renewed.get(p.id)!.requestId!;
      expected.get(p.id)!.status = RR;
    }
    sendPhase('last');
    await waitForFeedEnd('the last page');

    const now = await pointsNow(points.map((p) => p.id));
    const finals = groups.flatMap((g) => g.points.map((p) => ({ scenario: g.scenario.name, mpxn: p.mpxn, status: now.get(p.id)!.status })));
    expect(finals).toEqual(groups.flatMap((g) => g.points.map((p) => ({ scenario: g.scenario.name, mpxn: p.mpxn, status: g.scenario.final }))));
    const histories = await expectConsistentHistories(points);
    for (const g of groups) {
      for (const p of g.points) expect({ scenario: g.scenario.name, events: eventRows(histories.get(p.id)!) }).toEqual({ scenario: g.scenario.name, events: expected.get(p.id)!.events });
    }
    // Every event of the feed is known by id exactly once; the unknown request ids' are kept there too, and in no history.
    const feedIds = [...new Set(gateway.events.slice(feedBefore).map((e) => e.event_id))];
    const kept = await ctx.deps.db.selectFrom('registration_events').select('event_id').where('event_id', 'in', feedIds).execute();
    expect(kept.length).toBe(feedIds.length);
    const { rows: strays } = await sql<{ n: string }>`SELECT count(*) AS n FROM registration_history WHERE event_id = ANY(${unknown.map((e) => e.event_id)}::text[])`.execute(ctx.deps.db);
    expect(Number(strays[0]!.n)).toBe(0);
    expect(await eventsKeptTwice(ctx)).toEqual([]);
  }
}, 60_000);

// ---------------------------------------------------------------------------------------------------
// 2. A poller killed mid-page, and two pollers at once

it('a poller SIGKILLed while reading a page, and again between pages, then two poller processes at once: every event applied exactly once, the cursor at the end', async ({ annotate }) => {
  const points = take(3).flat();
  const env = ctx.workerEnv({ WORKER_LOCK_MS: '2000' });
  const queue = ctx.deps.queues['registration-events'];
  const kicked: string[] = [];
  /** A poll run now (beside the scheduler's), kept once done so its answer can be read. */
  const kick = async () => kicked.push((await queue.add('poll', {}, { removeOnComplete: false, removeOnFail: false })).id!);
  const cursor0 = (await registrationCursor(ctx))!;
  const base = Number(cursor0.split('.')[1]);
  expect(base).toBe(gateway.events.length);
  const eventsBefore = await registrationEvents();
  const FILLER = 200;
  const inputs: FakeGatewayEventInput[] = [];
  const round = (type: GatewayEventType) => points.forEach((p) => inputs.push({ request_id: p.requestId, type }));
  round('ACCEPTED');
  // Events that do not fit an accepted meter point: each is kept (not applied) in the history.
  for (let k = 0; k < FILLER; k++) round('WITHDRAWN');
  round('OBJECTION_RECEIVED');
  round('OBJECTION_WITHDRAWN');
  round('SUPPLY_STARTED');
  gateway.eventsPageDelayMs = 1_500;
  const pushed = gateway.push(inputs);
  // The ACCEPTED events again at the very end: duplicates two pages later.
  gateway.push(pushed.slice(0, points.length).map((e) => ({ ...e })));
  const total = gateway.events.length - base;
  expect(total).toBeGreaterThan(1_000); // three pages of 500

  /** A GET /events after `after` still waiting for its answer, among the requests since `from`. */
  const reading = (after: string, from: number) => gateway.requests.slice(from).some((r) => r.path === '/events' && r.status === undefined && r.query.after === after);
  /** At a kill: the saved cursor covers exactly the events saved with it (pages 1 and 2 hold no repeats). */
  const expectSavedWithCursor = async () => {
    const cursor = (await registrationCursor(ctx))!;
    const upTo = Number(cursor.split('.')[1]) - base;
    expect(upTo % 500).toBe(0);
    expect(await registrationEvents()).toBe(eventsBefore + upTo);
    const histories = await registrationHistories(ctx, points.map((p) => p.id));
    expect([...histories.values()].reduce((n, rows) => n + rows.filter((r) => r.cause === 'event').length, 0)).toBe(upTo);
    return { cursor, upTo };
  };

  const kills: Array<{ cursor: string; upTo: number }> = [];
  try {
    // Kill 1: while its first page is being read (the transaction holds the cursor row): nothing saved.
    let from = gateway.requests.length;
    const first = await spawnQueueWorker(ctx.config, env, ['registration-events'], workers);
    await kick();
    await pollUntil(async () => reading(cursor0, from), { timeoutMs: 20_000, what: 'the first poller to read the first page' });
    await first.kill('SIGKILL');
    kills.push(await expectSavedWithCursor());
    expect(kills[0]).toEqual({ cursor: cursor0, upTo: 0 });

    // Kill 2: after it saved a page, while it reads the next one.
    gateway.eventsPageDelayMs = 1_000;
    from = gateway.requests.length;
    const second = await spawnQueueWorker(ctx.config, env, ['registration-events'], workers);
    await kick();
    const page1 = await pollUntil(async () => {
      const c = await registrationCursor(ctx);
      return c !== null && c !== cursor0 ? c : null;
    }, { timeoutMs: 30_000, what: 'the second poller to save a page' });
    await pollUntil(async () => reading(page1, from), { timeoutMs: 10_000, what: 'the second poller to read the page after' });
    await second.kill('SIGKILL');
    kills.push(await expectSavedWithCursor());
    // Mid-run: one page saved (two on a slow machine), the rest not.
    expect([500, 1_000]).toContain(kills[1]!.upTo);

    // Two pollers in two processes, several runs queued at once: the cursor row's lock lets one read at a time.
    gateway.eventsPageDelayMs = 200;
    await Promise.all([0, 1].map(() => spawnQueueWorker(ctx.config, env, ['registration-events'], workers)));
    for (let i = 0; i < 4; i++) await kick();
    await waitForFeedEnd('the pollers after the kills', 40_000);
  } finally {
    gateway.eventsPageDelayMs = 0;
    for (const w of workers) await w.kill('SIGKILL');
  }

  const now = await pointsNow(points.map((p) => p.id));
  expect([...now.values()].map((p) => p.status)).toEqual(points.map(() => 'ON_SUPPLY'));
  const histories = await expectConsistentHistories(points);
  for (const p of points) {
    const events = eventRows(histories.get(p.id)!);
    expect(events.length).toBe(1 + FILLER + 3);
    expect(events.filter((e) => e.applied).map((e) => `${e.from_status}>${e.to_status}`)).toEqual([`${RR}>${RA}`, `${RA}>${OR}`, `${OR}>${RA}`, `${RA}>ON_SUPPLY`]);
    expect(events.filter((e) => !e.applied).every((e) => e.event_type === 'WITHDRAWN' && e.reason === `WITHDRAWN does not apply to a meter point in ${RA}`)).toBe(true);
  }
  expect(await registrationEvents()).toBe(eventsBefore + total - points.length);
  expect(await eventsKeptTwice(ctx)).toEqual([]);
  // How the queued runs went (informative: which of them found the cursor row locked depends on timing).
  const answers = await Promise.all(
    kicked.map(async (id) => {
      const job = await queue.getJob(id);
      return job ? ((job.returnvalue as unknown) ?? (await job.getState())) : 'gone';
    }),
  );
  await annotate(`[registration-events] ${total} events; killed with ${kills.map((k) => k.upTo).join(' and ')} saved; queued runs answered ${JSON.stringify(answers)}`);
}, 90_000);

it('two pollers at once in one process: one finds the cursor row locked (NOWAIT) and stops; each event is applied once', async () => {
  const points = take(2).flat();
  const poll = createRegistrationEventsProcessor({
    db: ctx.deps.db,
    log: ctx.deps.log,
    gateway: ctx.config.registrationGateway,
    queues: ctx.deps.queues,
    markAccounts: (ids) => ctx.built.services.registration.markAccounts(ids),
  });
  const accepted = gateway.push(points.map((p) => ({ request_id: p.requestId, type: 'ACCEPTED' as const })));
  gateway.push([...accepted.map((e) => ({ ...e })), ...points.map((p) => ({ request_id: p.requestId, type: 'OBJECTION_RECEIVED' as const }))]);
  // The page takes half a second to come: the first run holds the cursor row's lock all that time.
  gateway.eventsPageDelayMs = 500;
  try {
    const runs = await Promise.all([poll(), poll()]);
    expect(runs.filter((r) => r.busy === true)).toEqual([{ pages: 0, applied: 0, busy: true }]);
    expect(runs.find((r) => r.busy !== true)).toEqual({ pages: 1, applied: 2 * points.length });
    expect(await poll()).toEqual({ pages: 1, applied: 0 });
  } finally {
    gateway.eventsPageDelayMs = 0;
  }
  expect((await registrationCursor(ctx))!.endsWith(`.${gateway.events.length}`)).toBe(true);
  const now = await pointsNow(points.map((p) => p.id));
  expect([...now.values()].map((p) => p.status)).toEqual(points.map(() => OR));
  const histories = await expectConsistentHistories(points);
  for (const p of points) expect(eventRows(histories.get(p.id)!).map((e) => [e.event_type, e.applied])).toEqual([['ACCEPTED', true], ['OBJECTION_RECEIVED', true]]);
  expect(await eventsKeptTwice(ctx)).toEqual([]);
});

// ---------------------------------------------------------------------------------------------------
// 3. The event feed down for a while

it('the event feed down for a while (500s): nothing moves meanwhile, and once it is back every event is applied once', async () => {
  const points = take(2).flat();
  const set = ctx.startWorkers(['registration-events']);
  try {
    gateway.failEvents('down');
    const from = gateway.requests.length;
    const cursor0 = await registrationCursor(ctx);
    const eventsBefore = await registrationEvents();
    const accepted = gateway.push(points.map((p) => ({ request_id: p.requestId, type: 'ACCEPTED' as const })));
    gateway.push(points.map((p) => ({ request_id: p.requestId, type: 'SUPPLY_STARTED' as const })));
    gateway.push(accepted.map((e) => ({ ...e })));
    // Down for a while: several scheduled runs find it failing.
    await pollUntil(async () => gateway.requests.slice(from).filter((r) => r.path === '/events' && r.status === 500).length >= 5, { timeoutMs: 20_000, what: 'five polls to meet the failing feed' });
    expect(await registrationCursor(ctx)).toBe(cursor0);
    expect(await registrationEvents()).toBe(eventsBefore);
    expect([...(await pointsNow(points.map((p) => p.id))).values()].map((p) => p.status)).toEqual(points.map(() => RR));

    gateway.failEvents('up');
    await waitForFeedEnd('the feed back up');
  } finally {
    gateway.failEvents('up');
    await set.close();
  }
  const now = await pointsNow(points.map((p) => p.id));
  expect([...now.values()].map((p) => p.status)).toEqual(points.map(() => 'ON_SUPPLY'));
  const histories = await expectConsistentHistories(points);
  for (const p of points) expect(eventRows(histories.get(p.id)!).map((e) => [e.event_type, e.applied])).toEqual([['ACCEPTED', true], ['SUPPLY_STARTED', true]]);
  expect(await eventsKeptTwice(ctx)).toEqual([]);
});
