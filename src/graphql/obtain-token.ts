import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { GraphQLError, GraphQLScalarType } from 'graphql';
import mercurius from 'mercurius';
import { verifyApiKey, isApiKeyActive } from '../auth/api-keys.js';
import type { TokenService } from '../auth/tokens.js';
import type { Executor } from '../db/database.js';
import { AppError } from '../errors.js';
import { toAppError } from '../http/app-errors.js';

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

export interface LoginLimits {
  redis: Redis;
  prefix: string;
  maxFailures: number;
  windowS: number;
}

export async function registerGraphql(app: FastifyInstance, db: Executor, tokens: TokenService, limits: LoginLimits): Promise<void> {
  // Failed sign-ins per client address, counted in Redis so the limit holds across every instance.
  const failures = new RateLimiterRedis({
    storeClient: limits.redis,
    keyPrefix: `${limits.prefix}:login-failures`,
    points: limits.maxFailures,
    duration: limits.windowS,
  });
  const tooMany = () =>
    new mercurius.ErrorWithProps('Too many requests.', { errorCode: 'KT-CT-1199', errorType: 'TOO_MANY_REQUESTS', errorDescription: 'Too many failed attempts from this address; try again later.' });
  /** Runs a sign-in, refusing a blocked address first and counting a failure against it. */
  const guarded = async <T>(ip: string, attempt: () => Promise<T>): Promise<T> => {
    const seen = await failures.get(ip);
    if (seen !== null && seen.consumedPoints >= limits.maxFailures) throw tooMany();
    try {
      return await attempt();
    } catch (err) {
      try {
        await failures.consume(ip);
      } catch (limited) {
        if (limited instanceof RateLimiterRes) throw tooMany();
        throw limited;
      }
      throw err;
    }
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
  await app.register(mercurius, {
    schema,
    resolvers,
    path: '/v1/graphql/',
    graphiql: false,
    // Errors before GraphQL runs (a malformed or oversized body) answer in GraphQL's own response format,
    // with at least one error, instead of an empty error list.
    errorHandler: (error, request, reply) => {
      const raw: unknown = error;
      if (raw instanceof AppError || String((raw as { code?: unknown }).code).startsWith('FST_ERR_CTP')) {
        const e = toAppError(raw);
        void reply.code(e.status).send({ data: null, errors: [{ message: e.detail, extensions: { code: e.code } }] });
        return;
      }
      // Anything else (a query that is not a string, …) keeps mercurius's own formatting.
      const wrapped = error instanceof GraphQLError ? error : new GraphQLError(error.message, { originalError: error });
      const { statusCode, response } = mercurius.defaultErrorFormatter({ errors: [wrapped] }, { reply, app: request.server } as never);
      void reply.code(statusCode).send(response);
    },
  });
}
