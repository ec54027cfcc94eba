import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { GraphQLError, GraphQLScalarType, type ValidationContext, type ValidationRule } from 'graphql';
// The CommonJS entry, the copy mercurius builds the schema with: a bundler-style resolver (vitest's)
// would take 'graphql' to its .mjs build, a second copy whose type checks refuse the schema's types.
import { NoSchemaIntrospectionCustomRule } from 'graphql/index.js';
import mercurius from 'mercurius';
import { blockFieldSuggestionsPlugin } from '@escape.tech/graphql-armor-block-field-suggestions';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { verifyApiKey, isApiKeyActive } from '../auth/api-keys.js';
import type { TokenService } from '../auth/tokens.js';
import type { Executor } from '../db/database.js';
import { AppError } from '../errors.js';
import { toAppError } from '../app-errors.js';
import { isRedisUnavailable } from '../redis.js';

/** The mutation existing clients call (decisions §4); field and type names follow theirs. */
export const schema = /* GraphQL */ `
  scalar GenericScalar

  input ObtainJSONWebTokenInput {
    APIKey: String
    refreshToken: String
  }

  type ObtainJSONWebToken {
    token: String!
    payload: GenericScalar!
    refreshToken: String
    refreshExpiresIn: Int
  }

  type Query {
    "Always 'ok'; GraphQL requires a query type."
    ping: String!
  }

  type Mutation {
    obtainKrakenToken(input: ObtainJSONWebTokenInput!): ObtainJSONWebToken
  }
`;

const invalidData = (errorCode: 'KT-CT-1134' | 'KT-CT-1135', detail: string) =>
  new mercurius.ErrorWithProps('Invalid data.', { errorCode, errorType: 'VALIDATION', errorDescription: detail });

interface ObtainInput {
  APIKey?: string | null;
  refreshToken?: string | null;
}

/** Where the mutation is served. */
export const GRAPHQL_PATH = '/v1/graphql/';

/**
 * What one GraphQL request may be. ObtainToken is a few hundred bytes, about 30 tokens, depth 2 and no
 * alias; these bounds leave room for any client's formatting while keeping parsing, validation and
 * execution of one request to well under a millisecond (an unbounded document of 200,000 aliases blocked
 * the event loop for seconds).
 */
export const GRAPHQL_LIMITS = {
  /** Bytes of a request body; a bigger one is refused (413) before it is read. */
  bodyBytes: 8 * 1024,
  /** Lexical tokens of a document; parsing stops at the first one over. */
  tokens: 1000,
  aliases: 15,
  depth: 6,
} as const;

/**
 * graphql-armor's block-field-suggestions is an envelop plugin; mercurius has no envelop, so its
 * onValidate-end hook is driven here by hand on the errors about to be answered. It rewrites
 * "Did you mean …?" (which would let anyone enumerate fields and types) to a mask.
 */
type SuggestionMasker = (args: { valid: boolean; result: readonly unknown[]; setResult: (errors: readonly unknown[]) => void }) => void;
const suggestionMasker = (blockFieldSuggestionsPlugin() as unknown as { onValidate: () => SuggestionMasker }).onValidate();
function hideSuggestions(errors: readonly unknown[]): void {
  // The plugin rewrites each GraphQLError's message in place (and leaves anything else alone), so the
  // array it passes to setResult holds the very same errors.
  suggestionMasker({ valid: false, result: errors, setResult: () => undefined });
  for (const e of errors) {
    // mercurius wraps validation errors: MER_ERR_GQL_VALIDATION carries them in `errors` (itself or as originalError).
    for (const nested of [(e as { errors?: unknown }).errors, (e as { originalError?: { errors?: unknown } }).originalError?.errors]) {
      if (Array.isArray(nested)) hideSuggestions(nested);
    }
  }
}

/** An armor rule reports its refusal as a validation error (instead of throwing out of graphql's validate), so it answers 400 like other invalid documents. */
const reportingRule =
  (rule: (options: { onReject: Array<(ctx: ValidationContext | null, error: GraphQLError) => void>; propagateOnRejection: false }) => ValidationRule): ValidationRule =>
    rule({ onReject: [(ctx, error) => ctx?.reportError(error)], propagateOnRejection: false });

export interface GraphqlOptions {
  /** Whether `__schema`/`__type` queries are answered (development and test only). */
  introspection: boolean;
}

export interface LoginLimits {
  redis: Redis;
  prefix: string;
  maxFailures: number;
  windowS: number;
}

export async function registerGraphql(
  app: FastifyInstance,
  db: Executor,
  tokens: TokenService,
  limits: LoginLimits,
  options: GraphqlOptions = { introspection: false },
): Promise<void> {
  // Sign-in attempts per client address, counted in Redis so the limit holds across every instance.
  // Each attempt takes a point before it runs and a successful one gives it back, so what stays counted
  // is failures, and simultaneous attempts cannot all slip in under the limit before any of them fails.
  const failures = new RateLimiterRedis({
    storeClient: limits.redis,
    keyPrefix: `${limits.prefix}:login-failures`,
    points: limits.maxFailures,
    duration: limits.windowS,
  });
  const tooMany = () =>
    new mercurius.ErrorWithProps('Too many requests.', { errorCode: 'KT-CT-1199', errorType: 'TOO_MANY_REQUESTS', errorDescription: 'Too many failed attempts from this address; try again later.' });
  /** Runs a sign-in: counts it against the address first (refusing once over the limit), refunds it when it succeeds. */
  const unavailable = () =>
    new mercurius.ErrorWithProps(
      'Service unavailable.',
      { code: 'service_unavailable', errorType: 'SERVICE_UNAVAILABLE', errorDescription: 'A backing service is unreachable; retry shortly.' },
      503,
    );
  const guarded = async <T>(ip: string, attempt: () => Promise<T>): Promise<T> => {
    try {
      await failures.consume(ip);
    } catch (limited) {
      if (limited instanceof RateLimiterRes) throw tooMany();
      // Redis away: no attempt is made uncounted; the client is told to come back (503, within 2 s).
      if (isRedisUnavailable(limited)) throw unavailable();
      throw limited;
    }
    const result = await attempt();
    // The refund is a courtesy: a sign-in that succeeded is not failed because Redis blinked.
    await failures.reward(ip).catch(() => undefined);
    return result;
  };
  const obtain = async (input: ObtainInput) => {
    const given = [input.APIKey, input.refreshToken].filter((v) => v !== undefined && v !== null);
    if (given.length !== 1) throw invalidData('KT-CT-1134', 'Provide exactly one of APIKey or refreshToken.');
    if (typeof input.APIKey === 'string') {
      const keyId = await verifyApiKey(db, input.APIKey);
      if (keyId === null) throw invalidData('KT-CT-1134', 'The API key is not valid.');
      const access = await tokens.issue(keyId, 'access');
      const refresh = await tokens.issue(keyId, 'refresh');
      return { token: access.token, payload: access.claims, refreshToken: refresh.token, refreshExpiresIn: refresh.claims.exp };
    }
    const verified = await tokens.verify(String(input.refreshToken), 'refresh');
    if (!verified.ok || !(await isApiKeyActive(db, verified.claims.sub))) {
      throw invalidData('KT-CT-1135', 'The refresh token is not valid or has expired.');
    }
    // The refresh token is not rolled: it lives 7 days from the API-key sign-in, then the key is needed again.
    const access = await tokens.issue(verified.claims.sub, 'access');
    return {
      token: access.token,
      payload: access.claims,
      refreshToken: String(input.refreshToken),
      refreshExpiresIn: verified.claims.exp,
    };
  };
  const resolvers = {
    GenericScalar: new GraphQLScalarType({ name: 'GenericScalar', serialize: (v: unknown) => v }),
    Query: { ping: () => 'ok' },
    Mutation: {
      obtainKrakenToken: async (_root: unknown, { input }: { input: ObtainInput }, context: { reply: FastifyReply }) =>
        guarded(context.reply.request.ip, () => obtain(input)),
    },
  };
  // Registered before mercurius so it sees mercurius's routes: the GraphQL route gets its own, small body limit.
  app.addHook('onRoute', (route) => {
    if (route.url.replace(/\/+$/, '') === GRAPHQL_PATH.replace(/\/+$/, '')) route.bodyLimit = GRAPHQL_LIMITS.bodyBytes;
  });
  const validationRules: ValidationRule[] = [
    reportingRule((o) => maxAliasesRule({ ...o, n: GRAPHQL_LIMITS.aliases })),
    // Introspection counts too: a nested `__schema { types { fields { type { fields … } } } }` multiplies at each level.
    reportingRule((o) => maxDepthRule({ ...o, n: GRAPHQL_LIMITS.depth, ignoreIntrospection: false })),
    ...(options.introspection ? [] : [NoSchemaIntrospectionCustomRule]),
  ];
  await app.register(mercurius, {
    schema,
    resolvers,
    path: GRAPHQL_PATH,
    graphiql: false,
    graphql: { parseOptions: { maxTokens: GRAPHQL_LIMITS.tokens } },
    validationRules,
    // Errors found while running (variables that do not fit the input type, …) lose their suggestions too.
    errorFormatter: (execution, context) => {
      hideSuggestions(execution.errors);
      const formatted = mercurius.defaultErrorFormatter(execution, context);
      // A resolver's error is normally a 200 with partial data; Redis being away is the service's, not the client's: 503.
      const unavailable = execution.errors?.some((e) => (e as { extensions?: { code?: unknown } }).extensions?.code === 'service_unavailable');
      return unavailable ? { ...formatted, statusCode: 503 } : formatted;
    },
    // Errors before GraphQL runs (a malformed or oversized body) answer in GraphQL's own response format,
    // with at least one error, instead of an empty error list.
    errorHandler: (error, request, reply) => {
      const raw: unknown = error;
      if ((raw as { code?: unknown }).code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
        const message = `The request body is larger than ${GRAPHQL_LIMITS.bodyBytes} bytes.`;
        void reply.code(413).send({ data: null, errors: [{ message, extensions: { code: 'payload_too_large' } }] });
        return;
      }
      if (raw instanceof AppError || String((raw as { code?: unknown }).code).startsWith('FST_ERR_CTP')) {
        const e = toAppError(raw);
        void reply.code(e.status).send({ data: null, errors: [{ message: e.detail, extensions: { code: e.code } }] });
        return;
      }
      // Anything else (a query that is not a string, an invalid document, …) keeps mercurius's own formatting.
      hideSuggestions([error]);
      const wrapped = error instanceof GraphQLError ? error : new GraphQLError(error.message, { originalError: error });
      const { statusCode, response } = mercurius.defaultErrorFormatter({ errors: [wrapped] }, { reply, app: request.server } as never);
      // An invalid document (a limit exceeded, introspection refused, …) is a 400 however many errors it has;
      // mercurius answers 400 for one and 200 for several.
      void reply.code((error as { code?: unknown }).code === 'MER_ERR_GQL_VALIDATION' ? 400 : statusCode).send(response);
    },
  });
}
