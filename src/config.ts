import { z } from 'zod';

/** The development-only token secret; refused when NODE_ENV=production. */
export const DEVELOPMENT_TOKEN_SECRET = 'development-only-token-secret-change-me-0123456789';

const optionalInt = (fallback: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .optional()
    .transform((v) => v ?? fallback);

const envSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
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
    /** Jobs each worker process runs at once, per stage. */
    WORKER_CONCURRENCY_VALIDATE: optionalInt(20).pipe(z.number().int().min(1)),
    WORKER_CONCURRENCY_STAGE: optionalInt(10).pipe(z.number().int().min(1)),
    WORKER_CONCURRENCY_PROCESS: optionalInt(10).pipe(z.number().int().min(1)),
    WORKER_CONCURRENCY_EXTRAS: optionalInt(10).pipe(z.number().int().min(1)),
    WORKER_CONCURRENCY_EMAILS: optionalInt(5).pipe(z.number().int().min(1)),
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
    OPERATOR_USER: z.string().regex(/^[^:]+$/, 'must not be empty nor contain ":" (HTTP Basic cannot carry it)').optional(),
    OPERATOR_PASSWORD: z.string().min(12, 'must be at least 12 characters').optional(),
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
    if ((env.OPERATOR_USER === undefined) !== (env.OPERATOR_PASSWORD === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['OPERATOR_USER'], message: 'and OPERATOR_PASSWORD must be set together' });
    }
    if (env.NODE_ENV === 'production' && env.TOKEN_SECRET === undefined) {
      ctx.addIssue({ code: 'custom', path: ['TOKEN_SECRET'], message: 'is required when NODE_ENV=production' });
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
  readonly nodeEnv: 'development' | 'production' | 'test';
  readonly port: number;
  readonly host: string;
  readonly databaseUrl: string;
  readonly databasePoolSize: number;
  readonly databasePreparedStatements: boolean;
  readonly databaseAnalyzeIntervalMs: number;
  readonly redisUrl: string;
  readonly redisPrefix: string;
  readonly tokenSecret: string;
  /** True when TOKEN_SECRET was not set and the development secret is in use. */
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
  readonly workerConcurrency: Readonly<Record<'validate' | 'stage' | 'process' | 'extras' | 'emails', number>>;
  readonly workerLockMs: number;
  readonly workerShutdownGraceMs: number;
  readonly runWorkers: boolean;
  readonly workerMetricsPort: number | undefined;
  readonly smtpUrl: string | undefined;
  readonly emailFrom: string;
  readonly loginMaxFailures: number;
  readonly loginFailureWindowS: number;
  /** Operator credentials for the dashboard and /metrics; unset: those routes refuse everyone. */
  readonly operator: { readonly user: string; readonly password: string } | undefined;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Reads the environment once; throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // Treat empty strings as unset, as shells and .env files commonly produce them.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ');
    throw new ConfigError(`invalid configuration: ${problems}`);
  }
  const e = parsed.data;
  return Object.freeze({
    nodeEnv: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    databasePreparedStatements: e.DATABASE_PREPARED_STATEMENTS === 'true',
    databaseAnalyzeIntervalMs: e.DATABASE_ANALYZE_INTERVAL_S * 1000,
    redisUrl: e.REDIS_URL,
    redisPrefix: e.REDIS_PREFIX,
    tokenSecret: e.TOKEN_SECRET ?? DEVELOPMENT_TOKEN_SECRET,
    usingDevelopmentSecret: e.TOKEN_SECRET === undefined,
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
    workerConcurrency: Object.freeze({
      validate: e.WORKER_CONCURRENCY_VALIDATE,
      stage: e.WORKER_CONCURRENCY_STAGE,
      process: e.WORKER_CONCURRENCY_PROCESS,
      extras: e.WORKER_CONCURRENCY_EXTRAS,
      emails: e.WORKER_CONCURRENCY_EMAILS,
    }),
    workerLockMs: e.WORKER_LOCK_MS,
    workerShutdownGraceMs: e.WORKER_SHUTDOWN_GRACE_MS,
    runWorkers: e.RUN_WORKERS === 'true',
    workerMetricsPort: e.WORKER_METRICS_PORT,
    smtpUrl: e.SMTP_URL,
    loginMaxFailures: e.LOGIN_MAX_FAILURES,
    loginFailureWindowS: e.LOGIN_FAILURE_WINDOW_S,
    emailFrom: e.EMAIL_FROM,
    operator:
      e.OPERATOR_USER !== undefined && e.OPERATOR_PASSWORD !== undefined
        ? Object.freeze({ user: e.OPERATOR_USER, password: e.OPERATOR_PASSWORD })
        : undefined,
  });
}
