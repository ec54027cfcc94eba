import type { FastifyRequest } from 'fastify';
import { createApiKeyScopes } from '../auth/api-keys.js';
import type { SupplierScope } from '../auth/supplier-scope.js';
import type { TokenService } from '../auth/tokens.js';
import type { Executor } from '../db/database.js';
import { AppError } from '../errors.js';

const unauthorized = (code: string, detail: string) =>
  new AppError(401, code, detail, [], {}, { 'WWW-Authenticate': 'Token' });

/**
 * `Authorization: Token <access token>`: verifies the token (signature, algorithm, expiry) and that
 * the API key it was issued for is still active, so revoking a key locks its tokens out at once.
 * Resolves to the API key id and the suppliers it reaches; throws a 401 envelope otherwise.
 */
export function createTokenAuthenticator(db: Executor, tokens: TokenService) {
  const scopeOf = createApiKeyScopes(db);
  return async (req: FastifyRequest): Promise<{ apiKeyId: string; scope: SupplierScope }> => {
    const header = req.headers.authorization;
    if (header === undefined || header.trim() === '') {
      throw unauthorized('not_authenticated', 'Authentication credentials were not provided.');
    }
    const m = /^Token\s+(\S+)\s*$/i.exec(header);
    if (!m) throw unauthorized('authentication_failed', "Invalid Authorization header; expected 'Token <access token>'.");
    const result = await tokens.verify(m[1]!, 'access');
    if (!result.ok) {
      throw result.reason === 'expired'
        ? unauthorized('token_expired', 'The token has expired; obtain a new one.')
        : unauthorized('authentication_failed', 'Invalid token.');
    }
    const scope = await scopeOf(result.claims.sub);
    if (scope === undefined) {
      throw unauthorized('authentication_failed', 'The API key behind this token is no longer valid.');
    }
    return { apiKeyId: result.claims.sub, scope };
  };
}
