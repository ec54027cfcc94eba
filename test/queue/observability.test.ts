import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { LONG, linesOf, ndjsonOf } from './helpers.js';
import { createPipelineContext, type PipelineContext } from './setup.js';

// Observability (issue 13, part 7): what the pipeline counts as it runs a batch, the build and
// dependency gauges, and the dashboard and alert rules under ops/ that read them.

const ROOT = path.resolve(import.meta.dirname, '../..');
const SUPPLIER = 'OBS';
let ctx: PipelineContext;

beforeAll(async () => {
  ctx = await createPipelineContext();
  await ctx.createSupplier(SUPPLIER, { documentsRoot: 'obs' });
  await ctx.createTeam('Obs Team');
});
afterAll(async () => ctx?.close());

const scrape = () => ctx.built.metrics.registry.metrics();
/** The value of one series in Prometheus text, or undefined when absent. */
const valueOf = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe('a batch, counted as it runs', () => {
  it('counts each account at each stage it passes, the one that failed with its code, and the batch duration once', async () => {
    const { ndjson } = await ctx.cohort({ count: 5, supplier: SUPPLIER, prefix: 'OB', seed: 8 });
    const lines = linesOf(ndjson);
    const bad = JSON.parse(lines[4]!) as { account: Record<string, unknown> };
    bad.account.billing_email = 'not an e-mail';
    lines[4] = JSON.stringify(bad);
    const before = await scrape();
    expect(valueOf(before, `di_batch_duration_seconds_count{supplier="${SUPPLIER}",state="COMPLETED_WITH_ERRORS"}`)).toBeUndefined();

    const workers = ctx.startWorkers();
    try {
      const { batch_id } = await ctx.upload(ndjsonOf(lines), { supplier: SUPPLIER, team: 'Obs Team' });
      // Scraped while it runs: at least one batch running, both dependencies up.
      const during = await scrape();
      expect(valueOf(during, 'di_batches_running')).toBeGreaterThanOrEqual(1);
      expect(await ctx.waitForEnd(batch_id, LONG)).toMatchObject({ state: 'COMPLETED_WITH_ERRORS', succeeded: 4, failed: 1 });
    } finally {
      await workers.close(5_000);
    }
    const text = await scrape();
    const items = (stage: string, outcome: string, code = '') => valueOf(text, `di_items_total{supplier="${SUPPLIER}",stage="${stage}",outcome="${outcome}",code="${code}",dry_run="false"}`);
    expect([items('validate', 'passed'), items('stage', 'passed'), items('process', 'passed'), items('extras', 'succeeded')]).toEqual([4, 4, 4, 4]);
    expect(items('validate', 'failed', 'account_failed_validation')).toBe(1);
    expect(valueOf(text, `di_batch_duration_seconds_count{supplier="${SUPPLIER}",state="COMPLETED_WITH_ERRORS"}`)).toBe(1);
    expect(valueOf(text, 'di_batches_running')).toBe(0);
    expect(valueOf(text, 'di_dependency_up{dependency="postgres"}')).toBe(1);
    expect(valueOf(text, 'di_dependency_up{dependency="redis"}')).toBe(1);
    const version = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    expect(text).toMatch(new RegExp(`^di_build_info\\{version="${version.replaceAll('.', '\\.')}",commit="[^"]+",node_version="${process.version}"\\} 1$`, 'm'));
  }, LONG);
});

/** Every metric name a PromQL expression mentions (identifiers followed by a selector, a range or an operator). */
function metricNames(expr: string): string[] {
  const words = expr.replace(/"[^"]*"/g, '""').match(/[a-zA-Z_:][a-zA-Z0-9_:]*/g) ?? [];
  const promql = new Set(['sum', 'max', 'min', 'count', 'avg', 'by', 'without', 'rate', 'increase', 'histogram_quantile', 'clamp_min', 'and', 'or', 'unless', 'vector', 'le', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool']);
  return words.filter((w) => /^(di_|process_|nodejs_|up$)/.test(w) && !promql.has(w));
}

describe('ops/: the dashboard and the alert rules', () => {
  const known = async (): Promise<Set<string>> => {
    const names = new Set((await ctx.built.metrics.registry.getMetricsAsJSON()).map((m) => m.name));
    // Histograms expose these series; `up` is Prometheus's own.
    for (const n of [...names]) for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${n}${suffix}`);
    names.add('up');
    return names;
  };

  it('the Grafana dashboard is valid JSON whose every panel queries metrics the service exports', async () => {
    const dash = JSON.parse(readFileSync(path.join(ROOT, 'ops/grafana/data-import.json'), 'utf8')) as {
      uid: string;
      title: string;
      panels: Array<{ id: number; title: string; type: string; gridPos: { x: number; y: number; w: number; h: number }; targets: Array<{ refId: string; expr: string }> }>;
    };
    expect(dash.uid).toBe('data-import');
    expect(dash.panels.length).toBeGreaterThan(8);
    expect(new Set(dash.panels.map((p) => p.id)).size).toBe(dash.panels.length);
    const names = await known();
    for (const p of dash.panels) {
      expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
      expect(p.targets.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets) {
        const used = metricNames(t.expr);
        expect(used.length, `${p.title}: ${t.expr}`).toBeGreaterThan(0);
        for (const n of used) expect(names.has(n), `${p.title}: ${n}`).toBe(true);
      }
    }
  });

  it('the alert rules parse, name what an operator needs, and query metrics the service exports; promtool agrees where installed', async () => {
    const file = path.join(ROOT, 'ops/prometheus/alerts.yml');
    const rules = parse(readFileSync(file, 'utf8')) as { groups: Array<{ name: string; rules: Array<{ alert: string; expr: string; for: string; labels: { severity: string }; annotations: { summary: string } }> }> };
    const all = rules.groups.flatMap((g) => g.rules);
    expect(all.map((r) => r.alert).sort()).toEqual(
      ['DataImportBatchStuck', 'DataImportDependencyDown', 'DataImportFailedJobsPiling', 'DataImportFailureRate', 'DataImportQueueBacklog', 'DataImportRegistrationStuck', 'DataImportTargetDown'].sort(),
    );
    const names = await known();
    for (const r of all) {
      expect(r.for, r.alert).toMatch(/^\d+[smh]$/);
      expect(['critical', 'warning', 'info'], r.alert).toContain(r.labels.severity);
      expect(r.annotations.summary.length, r.alert).toBeGreaterThan(10);
      for (const n of metricNames(r.expr)) expect(names.has(n), `${r.alert}: ${n}`).toBe(true);
    }
    const promtool = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8' });
    if (promtool.error) {
      // Not installed on this machine: the checks above stand in for it.
      expect((promtool.error as NodeJS.ErrnoException).code).toBe('ENOENT');
    } else {
      expect(promtool.status, promtool.stdout + promtool.stderr).toBe(0);
    }
  });
});
