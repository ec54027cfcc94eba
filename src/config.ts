import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * The published development-only token secret: used, with a warning, only when NODE_ENV is
 * `development` or `test` and TOKEN_SECRET is unset; refused as a TOKEN_SECRET anywhere else.
 */
export const DEVELOPMENT_TOKEN_SECRET = 'development-only-token-secret-change-me-0123456789';

const NODE_ENVS = ['development', 'production', 'test'] as const;
export type NodeEnv = (typeof NODE_ENVS)[number];

const optionalInt = (fallback: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .optional()
    .transform((v) => v ?? fallback);

/**
 * Which proxies in front of the service to believe about the client address (Fastify's trustProxy):
 * false (the default: X-Forwarded-For is ignored), true (believe every hop), a hop count, or the
 * proxies' addresses and CIDR ranges (and proxy-addr's names loopback, linklocal, uniquelocal).
 */
export type TrustProxy = boolean | number | readonly string[];

const PROXY_ADDRESS_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address, a CIDR range or one of proxy-addr's names, as Fastify's trustProxy accepts them. */
function isProxyAddress(entry: string): boolean {
  if (PROXY_ADDRESS_NAMES.has(entry)) return true;
  const [address = '', bits, ...rest] = entry.split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (version === 4 ? 32 : 128);
}

const trustProxySchema = z
  .string()
  .trim()
  .optional()
  .transform((raw, ctx): TrustProxy => {
    if (raw === undefined || /^false$/i.test(raw)) return false;
    if (/^true$/i.test(raw)) return true;
    if (/^\d+$/.test(raw)) return Number(raw) === 0 ? false : Number(raw);
    const entries = raw.split(',').map((e) => e.trim());
    const bad = entries.filter((e) => !isProxyAddress(e));
    if (bad.length > 0) {
      ctx.addIssue({
        code: 'custom',
        message: `must be true, false, a hop count, or a comma-separated list of proxy addresses or CIDR ranges (not ${bad.map((b) => JSON.stringify(b)).join(', ')})`,
      });
      return z.NEVER;
    }
    return Object.freeze(entries);
  });

const envSchema = z
  .object({
    /** Unset means production (fail closed): only `development` and `test` may use the development secret. */
    NODE_ENV: z.enum(NODE_ENVS, { error: 'must be development, test or production (unset means production)' }).optional(),
    PORT: optionalInt(3000).pipe(z.number().int().min(0).max(65535)),
    HOST: z.string().min(1).default('127.0.0.1'),
    DATABASE_URL: z
      .string()
      .url()
      .default('postgres://postgres@127.0.0.1:5432/data_import'),
    /** Connections each process keeps to PostgreSQL (the server allows 100 by default, for every process together). */
    DATABASE_POOL_SIZE: optionalInt(20).pipe(z.number().int().min(1).max(500)),
    /** Named prepared statements; 'false' behind a pooler in transaction mode that cannot keep them (PgBouncer before 1.21). */
    DATABASE_PREPARED_STATEMENTS: z.enum(['true', 'false']).default('true'),
    /** How often a worker process checks whether a table grew enough to ANALYZE it (0: never; leave it to autovacuum). */
    DATABASE_ANALYZE_INTERVAL_S: optionalInt(15).pipe(z.number().int().min(0).max(86_400)),
    REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
    /** Prefix of every Redis key this deployment owns (queues, semaphore, markers). */
    REDIS_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9_:{}-]+$/, 'letters, digits and _ : - { } only')
      .default('di'),
    TOKEN_SECRET: z.string().optional(),
    /** Unset or 0: no limit on simultaneous account processing. */
    PROCESS_CONCURRENCY_LIMIT: optionalInt(0),
    /** How long a processing permit lives without being refreshed, so a crashed process cannot hold it forever. */
    PROCESS_PERMIT_TTL_MS: optionalInt(30_000).pipe(z.number().int().min(100)),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** Local document folder: used when no S3 bucket is configured, so a fresh clone needs no cloud. */
    DOCUMENTS_DIR: z.string().min(1).default('var/documents'),
    S3_BUCKET: z.string().min(1).optional(),
    /** For S3-protocol servers other than AWS (MinIO, s3rver): path-style addressing is then used. */
    S3_ENDPOINT: z.string().url().optional(),
    S3_REGION: z.string().min(1).default('eu-west-2'),
    S3_FORCE_PATH_STYLE: z.enum(['true', 'false']).optional(),
    S3_ACCESS_KEY_ID: z.string().min(1).optional(),
    S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
    /** JSON: { "<vendor code>": { "base_url": "https://…", "api_key": "…" } }. */
    PAYMENT_VENDORS: z.string().optional(),
    PAYMENT_VENDOR_TIMEOUT_MS: optionalInt(5_000).pipe(z.number().int().min(1)),
    PAYMENT_VENDOR_RETRIES: optionalInt(3).pipe(z.number().int().min(0).max(10)),
    /** Cohort uploads: the longest line and the most lines one upload may have. */
    BATCH_MAX_LINE_BYTES: optionalInt(1024 * 1024).pipe(z.number().int().min(1024)),
    BATCH_MAX_LINES: optionalInt(1_000_000).pipe(z.number().int().min(1)),
    /** The most bytes one upload may have: 5 GiB, 1,000,000 lines of ~4.6 KB bundles and some room. */
    BATCH_MAX_BYTES: optionalInt(5 * 1024 ** 3).pipe(z.number().int().min(1024)),
    /** Slow requests: the whole of an upload, the body of any other request, and a silence within a body. */
    REQUEST_TIMEOUT_S: optionalInt(7_200).pipe(z.number().int().min(1).max(86_400)),
    BODY_TIMEOUT_S: optionalInt(60).pipe(z.number().int().min(1).max(86_400)),
    BODY_IDLE_TIMEOUT_S: optionalInt(60).pipe(z.number().int().min(1).max(86_400)),
    /**
     * Jobs each worker process holds at once, per stage. The jobs active together run as sets
     * (PIPELINE_SET_SIZE), so this is also the most a set can hold.
     */
    WORKER_CONCURRENCY_VALIDATE: optionalInt(100).pipe(z.number().int().min(1)),
    WORKER_CONCURRENCY_STAGE: optionalInt(100).pipe(z.number().int().min(1)),
    WORKER_CONCURRENCY_PROCESS: optionalInt(100).pipe(z.number().int().min(1)),
    WORKER_CONCURRENCY_EXTRAS: optionalInt(100).pipe(z.number().int().min(1)),
    WORKER_CONCURRENCY_EMAILS: optionalInt(5).pipe(z.number().int().min(1)),
    /** The registration gateway (decisions.md §8); unset: the sandbox in development, none elsewhere. */
    REGISTRATION_GATEWAY_URL: z.string().url().refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL').optional(),
    REGISTRATION_GATEWAY_KEY: z.string().min(16, 'must be at least 16 characters').regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces').optional(),
    /** Registration requests sent per second at most, over every worker (a BullMQ rate limit: the industry throttles). */
    REGISTRATION_RATE_PER_SECOND: optionalInt(20).pipe(z.number().int().min(1).max(10_000)),
    /** How often the gateway's events are read while any registration is open. */
    REGISTRATION_POLL_MS: optionalInt(30_000).pipe(z.number().int().min(100).max(3_600_000)),
    WORKER_CONCURRENCY_REGISTRATION: optionalInt(10).pipe(z.number().int().min(1)),
    /** The most jobs of one stage a worker runs as one set (one claim, one transaction, one enqueue). */
    PIPELINE_SET_SIZE: optionalInt(100).pipe(z.number().int().min(1).max(1000)),
    /** How long a set waits for more jobs after its first before it runs. */
    PIPELINE_SET_WAIT_MS: optionalInt(5).pipe(z.number().int().min(0).max(1000)),
    /** How long a job's lock lives: a killed worker's jobs run again (stalled) after about this long. */
    WORKER_LOCK_MS: optionalInt(30_000).pipe(z.number().int().min(1000)),
    /** Grace period for active jobs on SIGTERM before the process exits anyway. */
    WORKER_SHUTDOWN_GRACE_MS: optionalInt(30_000).pipe(z.number().int().min(0)),
    /** A worker process serves /metrics (job durations) on this port when set; the web process has its own. */
    WORKER_METRICS_PORT: z.string().regex(/^\d+$/).transform(Number).pipe(z.number().int().min(1).max(65535)).optional(),
    /** Whether `npm start` also runs the queue workers in the web process. */
    RUN_WORKERS: z.enum(['true', 'false']).default('true'),
    /** Where welcome e-mails are sent (smtp://user:pass@host:port); unset: e-mails wait unsent. */
    SMTP_URL: z.string().url().optional(),
    EMAIL_FROM: z.string().min(3).default('Accounts <accounts@example.com>'),
    /** Failed ObtainToken attempts allowed per client address within the window, before KT-CT-1199. */
    LOGIN_MAX_FAILURES: optionalInt(10).pipe(z.number().int().min(1)),
    LOGIN_FAILURE_WINDOW_S: optionalInt(900).pipe(z.number().int().min(1)),
    /** Proxies believed about the client address (X-Forwarded-For), for the sign-in and operator limits; unset: none. */
    TRUST_PROXY: trustProxySchema,
    OPERATOR_USER: z.string().regex(/^[^:]+$/, 'must not be empty nor contain ":" (HTTP Basic cannot carry it)').optional(),
    OPERATOR_PASSWORD: z.string().min(12, 'must be at least 12 characters').optional(),
    /** Console sessions end after this long without a request, and this long after sign-in whatever happens. */
    CONSOLE_SESSION_IDLE_MINUTES: optionalInt(30).pipe(z.number().int().min(1).max(24 * 60)),
    CONSOLE_SESSION_MAX_HOURS: optionalInt(12).pipe(z.number().int().min(1).max(7 * 24)),
    /** A bearer token Prometheus may scrape /metrics with, instead of the operator credentials. */
    METRICS_TOKEN: z.string().min(32, 'must be at least 32 characters').regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces').optional(),
  })
  .superRefine((env, ctx) => {
    if (env.TOKEN_SECRET !== undefined && Buffer.byteLength(env.TOKEN_SECRET) < 32) {
      ctx.addIssue({ code: 'custom', path: ['TOKEN_SECRET'], message: 'must be at least 32 bytes' });
    }
    if ((env.S3_ACCESS_KEY_ID === undefined) !== (env.S3_SECRET_ACCESS_KEY === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['S3_ACCESS_KEY_ID'], message: 'and S3_SECRET_ACCESS_KEY must be set together' });
    }
    if (env.PAYMENT_VENDORS !== undefined) {
      let json: unknown;
      try {
        json = JSON.parse(env.PAYMENT_VENDORS);
      } catch {
        ctx.addIssue({ code: 'custom', path: ['PAYMENT_VENDORS'], message: 'is not valid JSON' });
        return;
      }
      const vendors = vendorsSchema.safeParse(json);
      for (const issue of vendors.error?.issues ?? []) {
        ctx.addIssue({ code: 'custom', path: ['PAYMENT_VENDORS', ...issue.path.map(String)], message: issue.message });
      }
    }
    if ((env.REGISTRATION_GATEWAY_URL === undefined) !== (env.REGISTRATION_GATEWAY_KEY === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['REGISTRATION_GATEWAY_URL'], message: 'and REGISTRATION_GATEWAY_KEY must be set together' });
    }
    if ((env.OPERATOR_USER === undefined) !== (env.OPERATOR_PASSWORD === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['OPERATOR_USER'], message: 'and OPERATOR_PASSWORD must be set together' });
    }
  });

const vendorsSchema = z.record(
  z.string().regex(/^[A-Za-z0-9_-]+$/, 'vendor codes are letters, digits, _ and -'),
  z.strictObject({ base_url: z.string().url(), api_key: z.string().min(1) }),
);

export interface PaymentVendorConfig {
  readonly baseUrl: string;
  readonly apiKey: string;
}

export type DocumentsConfig =
  | { readonly kind: 'local'; readonly dir: string }
  | {
      readonly kind: 's3';
      readonly bucket: string;
      readonly endpoint: string | undefined;
      readonly region: string;
      readonly forcePathStyle: boolean;
      readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string } | undefined;
    };

export interface Config {
  /** `production` when NODE_ENV is unset. */
  readonly nodeEnv: NodeEnv;
  readonly port: number;
  readonly host: string;
  readonly databaseUrl: string;
  readonly databasePoolSize: number;
  readonly databasePreparedStatements: boolean;
  readonly databaseAnalyzeIntervalMs: number;
  readonly redisUrl: string;
  readonly redisPrefix: string;
  readonly tokenSecret: string;
  /** True when the published development secret is in use (NODE_ENV development or test only). */
  readonly usingDevelopmentSecret: boolean;
  readonly processConcurrencyLimit: number;
  readonly processPermitTtlMs: number;
  readonly logLevel: string;
  readonly documents: DocumentsConfig;
  readonly paymentVendors: Readonly<Record<string, PaymentVendorConfig>>;
  readonly paymentVendorTimeoutMs: number;
  readonly paymentVendorRetries: number;
  readonly batchMaxLineBytes: number;
  readonly batchMaxLines: number;
  readonly batchMaxBytes: number;
  /** How long requests may take to arrive (src/http/request-timeouts.ts). */
  readonly requestTimeouts: { readonly requestMs: number; readonly bodyMs: number; readonly bodyIdleMs: number };
  readonly workerConcurrency: Readonly<Record<'validate' | 'stage' | 'process' | 'extras' | 'emails' | 'registration', number>>;
  /** The registration gateway; undefined: none configured (development runs the sandbox instead). */
  readonly registrationGateway: { readonly url: string; readonly key: string } | undefined;
  readonly registration: { readonly ratePerSecond: number; readonly pollMs: number };
  readonly pipelineSet: Readonly<{ size: number; waitMs: number }>;
  readonly workerLockMs: number;
  readonly workerShutdownGraceMs: number;
  readonly runWorkers: boolean;
  readonly workerMetricsPort: number | undefined;
  readonly smtpUrl: string | undefined;
  readonly emailFrom: string;
  readonly loginMaxFailures: number;
  readonly loginFailureWindowS: number;
  /** Passed to Fastify's trustProxy, so request.ip is the client behind a load balancer. */
  readonly trustProxy: TrustProxy;
  /** Console sessions (/admin/): idle timeout and absolute lifetime, in ms. */
  readonly consoleSession: { readonly idleMs: number; readonly maxMs: number };
  /** HTTP Basic credentials for /metrics (the console has operator accounts of its own); unset: only METRICS_TOKEN. */
  readonly operator: { readonly user: string; readonly password: string } | undefined;
  /** Bearer token for /metrics (Prometheus `authorization: { credentials }`); undefined: only the operator credentials. */
  readonly metricsToken: string | undefined;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export interface LoadConfigOptions {
  /**
   * False for a process that neither signs nor verifies tokens (importctl, the worker processes):
   * TOKEN_SECRET is then not required, and when unset its place is taken by a random secret that
   * nothing else knows. A TOKEN_SECRET that is set is checked all the same. Default true.
   */
  readonly signsTokens?: boolean;
}

/**
 * The problems with TOKEN_SECRET for this NODE_ENV (fail closed): outside `development` and `test`,
 * a process that signs tokens needs a secret of its own, and the published development secret is
 * refused. An unknown NODE_ENV is left to the schema, which names it.
 */
function tokenSecretProblems(nodeEnv: string | undefined, secret: string | undefined, signsTokens: boolean): string[] {
  if (nodeEnv === 'development' || nodeEnv === 'test') return [];
  if (nodeEnv !== undefined && nodeEnv !== 'production') return [];
  const where = nodeEnv === undefined ? 'NODE_ENV is unset, which means production' : `NODE_ENV=${nodeEnv}`;
  if (secret === DEVELOPMENT_TOKEN_SECRET) {
    return [`TOKEN_SECRET is the published development secret, refused unless NODE_ENV is development or test (${where}); set a secret of your own`];
  }
  if (secret === undefined && signsTokens) {
    return [`TOKEN_SECRET is required unless NODE_ENV is development or test (${where})`];
  }
  return [];
}

/** Reads the environment once; throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, opts: LoadConfigOptions = {}): Config {
  // Treat empty strings as unset, as shells and .env files commonly produce them.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(cleaned);
  const problems = [
    ...(parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`)),
    ...tokenSecretProblems(cleaned.NODE_ENV, cleaned.TOKEN_SECRET, opts.signsTokens ?? true),
  ];
  if (!parsed.success || problems.length > 0) {
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  const e = parsed.data;
  const nodeEnv = e.NODE_ENV ?? 'production';
  const tokenSecret =
    e.TOKEN_SECRET ?? (opts.signsTokens === false ? randomBytes(32).toString('base64url') : DEVELOPMENT_TOKEN_SECRET);
  return Object.freeze({
    nodeEnv,
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    databasePreparedStatements: e.DATABASE_PREPARED_STATEMENTS === 'true',
    databaseAnalyzeIntervalMs: e.DATABASE_ANALYZE_INTERVAL_S * 1000,
    redisUrl: e.REDIS_URL,
    redisPrefix: e.REDIS_PREFIX,
    tokenSecret,
    usingDevelopmentSecret: tokenSecret === DEVELOPMENT_TOKEN_SECRET,
    processConcurrencyLimit: e.PROCESS_CONCURRENCY_LIMIT,
    processPermitTtlMs: e.PROCESS_PERMIT_TTL_MS,
    logLevel: e.LOG_LEVEL,
    documents:
      e.S3_BUCKET === undefined
        ? { kind: 'local' as const, dir: e.DOCUMENTS_DIR }
        : {
            kind: 's3' as const,
            bucket: e.S3_BUCKET,
            endpoint: e.S3_ENDPOINT,
            region: e.S3_REGION,
            forcePathStyle: e.S3_FORCE_PATH_STYLE === undefined ? e.S3_ENDPOINT !== undefined : e.S3_FORCE_PATH_STYLE === 'true',
            credentials:
              e.S3_ACCESS_KEY_ID !== undefined && e.S3_SECRET_ACCESS_KEY !== undefined
                ? { accessKeyId: e.S3_ACCESS_KEY_ID, secretAccessKey: e.S3_SECRET_ACCESS_KEY }
                : undefined,
          },
    paymentVendors: Object.fromEntries(
      Object.entries(e.PAYMENT_VENDORS === undefined ? {} : vendorsSchema.parse(JSON.parse(e.PAYMENT_VENDORS))).map(([code, v]) => [
        code,
        Object.freeze({ baseUrl: v.base_url, apiKey: v.api_key }),
      ]),
    ),
    paymentVendorTimeoutMs: e.PAYMENT_VENDOR_TIMEOUT_MS,
    paymentVendorRetries: e.PAYMENT_VENDOR_RETRIES,
    batchMaxLineBytes: e.BATCH_MAX_LINE_BYTES,
    batchMaxLines: e.BATCH_MAX_LINES,
    batchMaxBytes: e.BATCH_MAX_BYTES,
    requestTimeouts: Object.freeze({ requestMs: e.REQUEST_TIMEOUT_S * 1000, bodyMs: e.BODY_TIMEOUT_S * 1000, bodyIdleMs: e.BODY_IDLE_TIMEOUT_S * 1000 }),
    workerConcurrency: Object.freeze({
      validate: e.WORKER_CONCURRENCY_VALIDATE,
      stage: e.WORKER_CONCURRENCY_STAGE,
      process: e.WORKER_CONCURRENCY_PROCESS,
      extras: e.WORKER_CONCURRENCY_EXTRAS,
      emails: e.WORKER_CONCURRENCY_EMAILS,
      registration: e.WORKER_CONCURRENCY_REGISTRATION,
    }),
    pipelineSet: Object.freeze({ size: e.PIPELINE_SET_SIZE, waitMs: e.PIPELINE_SET_WAIT_MS }),
    workerLockMs: e.WORKER_LOCK_MS,
    workerShutdownGraceMs: e.WORKER_SHUTDOWN_GRACE_MS,
    runWorkers: e.RUN_WORKERS === 'true',
    workerMetricsPort: e.WORKER_METRICS_PORT,
    smtpUrl: e.SMTP_URL,
    loginMaxFailures: e.LOGIN_MAX_FAILURES,
    loginFailureWindowS: e.LOGIN_FAILURE_WINDOW_S,
    trustProxy: e.TRUST_PROXY,
    emailFrom: e.EMAIL_FROM,
    metricsToken: e.METRICS_TOKEN,
    registrationGateway:
      e.REGISTRATION_GATEWAY_URL !== undefined && e.REGISTRATION_GATEWAY_KEY !== undefined
        ? Object.freeze({ url: e.REGISTRATION_GATEWAY_URL.replace(/\/+$/, ''), key: e.REGISTRATION_GATEWAY_KEY })
        : undefined,
    registration: Object.freeze({ ratePerSecond: e.REGISTRATION_RATE_PER_SECOND, pollMs: e.REGISTRATION_POLL_MS }),
    consoleSession: Object.freeze({ idleMs: e.CONSOLE_SESSION_IDLE_MINUTES * 60_000, maxMs: e.CONSOLE_SESSION_MAX_HOURS * 3_600_000 }),
    operator:
      e.OPERATOR_USER !== undefined && e.OPERATOR_PASSWORD !== undefined
        ? Object.freeze({ user: e.OPERATOR_USER, password: e.OPERATOR_PASSWORD })
        : undefined,
  });
}
