import { Readable } from 'node:stream';
import { utcDate } from '../../src/clock.js';
import { generateCohort } from '../../src/cohort/generate.js';
import { TEAM, VENDOR_CODE, type BenchEnv } from './env.js';
import { postStream } from './http-client.js';
import { Meter, type CpuSeconds } from './meter.js';
import { perUnit, settledCounters, type PerUnit } from './pgstats.js';
import { mb, readMemory, resetPeak } from './procfs.js';
import { round } from './stats.js';

export interface UploadResult {
  lines: number;
  bytes: number;
  accepted: number;
  seconds: number;
  lines_per_s: number;
  mb_per_s: number;
  rss_before_mb: number;
  rss_peak_mb: number;
  rss_growth_mb: number;
  /** RSS 3 s after the 202: what the upload left behind. */
  rss_after_mb: number;
  /** [MB sent, API RSS MB] every ~10% of the upload: flat means streaming, a slope means retention. */
  rss_timeline: Array<[number, number]>;
  cpu_s: CpuSeconds;
  pg_per_line: PerUnit;
  problems: string[];
}

const TEMPLATES = 200;

/**
 * NDJSON of `lines` realistic bundles, produced on demand (the bench never holds the file): a few
 * hundred generated bundles are cycled with a unique external account number per line.
 */
function ndjsonStream(supplier: string, lines: number): { stream: Readable; bytes: () => number } {
  const templates = [...generateCohort({ count: TEMPLATES, supplier, prefix: 'UPLOAD', seed: 99, vendor: VENDOR_CODE, today: utcDate(new Date()) })].map(({ bundle }) => {
    const marker = '\u0000EXT\u0000';
    const ext = String(bundle.account.external_account_number);
    const text = JSON.stringify(bundle).split(JSON.stringify(ext)).join(JSON.stringify(marker));
    return text.split(JSON.stringify(marker));
  });
  let bytes = 0;
  function* chunks(): Generator<string> {
    let chunk = '';
    for (let i = 0; i < lines; i++) {
      const parts = templates[i % TEMPLATES]!;
      chunk += `${parts.join(`"U-${String(i + 1).padStart(7, '0')}"`)}\n`;
      if (chunk.length >= 64 * 1024) {
        bytes += Buffer.byteLength(chunk);
        yield chunk;
        chunk = '';
      }
    }
    if (chunk) {
      bytes += Buffer.byteLength(chunk);
      yield chunk;
    }
  }
  return { stream: Readable.from(chunks(), { objectMode: false }), bytes: () => bytes };
}

/** A large upload with the workers stopped: how fast lines are accepted, and whether the API streams them. */
export async function runUpload(env: BenchEnv, token: string, supplier: string, lines: number, settleMs: number): Promise<UploadResult> {
  const api = env.api;
  if (!api) throw new Error('the API is not running');
  const { stream, bytes } = ndjsonStream(supplier, lines);
  const pgBefore = await settledCounters(env.databaseUrl, settleMs);
  const before = readMemory(api.pid);
  const peakReset = resetPeak(api.pid);
  let sampled = before?.rssKb ?? 0;
  const timeline: Array<[number, number]> = [];
  const expectedBytes = lines * 4_700;
  const sampler = setInterval(() => {
    const m = readMemory(api.pid);
    if (!m) return;
    sampled = Math.max(sampled, m.rssKb);
    const sent = bytes();
    if (timeline.length === 0 || sent - timeline.at(-1)![0] * 1e6 >= expectedBytes / 10) timeline.push([round(sent / 1e6, 1), round(mb(m.rssKb), 1)]);
  }, 50);
  const meter = new Meter({ api: api.pid });
  meter.start();
  const t0 = performance.now();
  let res;
  try {
    res = await postStream(`${env.apiUrl}/v1/data-import/batches/?import_supplier=${encodeURIComponent(supplier)}&operations_team_name=${encodeURIComponent(TEAM)}`, token, stream);
  } finally {
    clearInterval(sampler);
  }
  const seconds = (performance.now() - t0) / 1000;
  const measured = meter.stop();
  const after = readMemory(api.pid);
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const settled = readMemory(api.pid);
  const pgAfter = await settledCounters(env.databaseUrl, settleMs);
  const peakKb = Math.max(sampled, peakReset && after ? after.hwmKb : 0);
  const problems: string[] = [];
  let accepted = 0;
  if (res.status !== 202) problems.push(`upload answered ${res.status}: ${res.text.slice(0, 500)}`);
  else {
    accepted = (JSON.parse(res.text) as { total_items: number }).total_items;
    if (accepted !== lines) problems.push(`upload accepted ${accepted} lines, sent ${lines}`);
  }
  const rssBefore = before ? mb(before.rssKb) : NaN;
  return {
    lines,
    bytes: bytes(),
    accepted,
    seconds: round(seconds),
    lines_per_s: round(accepted / seconds, 0),
    mb_per_s: round(bytes() / 1e6 / seconds, 1),
    rss_before_mb: round(rssBefore, 1),
    rss_peak_mb: round(mb(peakKb), 1),
    rss_growth_mb: round(mb(peakKb) - rssBefore, 1),
    rss_after_mb: settled ? round(mb(settled.rssKb), 1) : NaN,
    rss_timeline: timeline,
    cpu_s: measured.cpu,
    pg_per_line: perUnit(pgBefore, pgAfter, lines),
    problems,
  };
}
