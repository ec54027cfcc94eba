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
  })
  .superRefine((env, ctx) => {
    if (env.TOKEN_SECRET !== undefined && Buffer.byteLength(env.TOKEN_SECRET) < 32) {
      ctx.addIssue({ code: 'custom', path: ['TOKEN_SECRET'], message: 'must be at least 32 bytes' });
    }
    if (env.NODE_ENV === 'production' && env.TOKEN_SECRET === undefined) {
      ctx.addIssue({ code: 'custom', path: ['TOKEN_SECRET'], message: 'is required when NODE_ENV=production' });
    }
  });

export interface Config {
  readonly nodeEnv: 'development' | 'production' | 'test';
  readonly port: number;
  readonly host: string;
  readonly databaseUrl: string;
  readonly redisUrl: string;
  readonly redisPrefix: string;
  readonly tokenSecret: string;
  /** True when TOKEN_SECRET was not set and the development secret is in use. */
  readonly usingDevelopmentSecret: boolean;
  readonly processConcurrencyLimit: number;
  readonly processPermitTtlMs: number;
  readonly logLevel: string;
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
    redisUrl: e.REDIS_URL,
    redisPrefix: e.REDIS_PREFIX,
    tokenSecret: e.TOKEN_SECRET ?? DEVELOPMENT_TOKEN_SECRET,
    usingDevelopmentSecret: e.TOKEN_SECRET === undefined,
    processConcurrencyLimit: e.PROCESS_CONCURRENCY_LIMIT,
    processPermitTtlMs: e.PROCESS_PERMIT_TTL_MS,
    logLevel: e.LOG_LEVEL,
  });
}
