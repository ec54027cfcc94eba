import { randomUUID } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import { LRUCache } from 'lru-cache';

export const ACCESS_TOKEN_TTL_S = 60 * 60;
export const REFRESH_TOKEN_TTL_S = 7 * 24 * 60 * 60;
const ALG = 'HS256';
const ISSUER = 'data-import-service';

export type TokenUse = 'access' | 'refresh';

export interface Claims {
  sub: string;
  iat: number;
  exp: number;
}

export type VerifyResult =
  | { ok: true; claims: Claims }
  | { ok: false; reason: 'expired' | 'invalid' };

/** How many verified tokens each process remembers (about 300 bytes each). */
const VERIFIED_CACHE_SIZE = 10_000;

/**
 * Signs and verifies our HS256 tokens. The algorithm is pinned: `alg: none` and others are refused.
 * A client sends the same access token on every request for an hour, so a token whose signature
 * was verified is remembered (by its exact text) with its claims: a repeat skips the HMAC, but its
 * expiry is checked against the clock every time, as is the key's revocation (by the caller).
 */
export class TokenService {
  private readonly key: Uint8Array;
  private readonly verified = new LRUCache<string, { claims: Claims; use: unknown }>({ max: VERIFIED_CACHE_SIZE });

  constructor(secret: string, private readonly now: () => Date) {
    if (Buffer.byteLength(secret) < 32) throw new Error('token secret must be at least 32 bytes');
    this.key = new TextEncoder().encode(secret);
  }

  async issue(subject: string, use: TokenUse): Promise<{ token: string; claims: Claims }> {
    const iat = Math.floor(this.now().getTime() / 1000);
    const exp = iat + (use === 'access' ? ACCESS_TOKEN_TTL_S : REFRESH_TOKEN_TTL_S);
    const token = await new SignJWT({ use })
      .setProtectedHeader({ alg: ALG, typ: 'JWT' })
      .setSubject(subject)
      .setIssuer(ISSUER)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .setJti(randomUUID())
      .sign(this.key);
    return { token, claims: { sub: subject, iat, exp } };
  }

  async verify(token: string, use: TokenUse): Promise<VerifyResult> {
    const known = this.verified.get(token);
    if (known) {
      if (known.use !== use) return { ok: false, reason: 'invalid' };
      // jose's own rule, with clockTolerance 0: expired once now >= exp.
      if (Math.floor(this.now().getTime() / 1000) >= known.claims.exp) return { ok: false, reason: 'expired' };
      return { ok: true, claims: known.claims };
    }
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: [ALG],
        issuer: ISSUER,
        currentDate: this.now(),
        clockTolerance: 0,
        requiredClaims: ['sub', 'iat', 'exp'],
      });
      const claims = { sub: payload.sub!, iat: payload.iat!, exp: payload.exp! };
      const tokenUse = (payload as JWTPayload & { use?: unknown }).use;
      // Dropped once it expires (by the wall clock: only to free the slot; expiry is decided above).
      this.verified.set(token, { claims, use: tokenUse }, { ttl: Math.max(1, claims.exp * 1000 - Date.now()) });
      if (tokenUse !== use) return { ok: false, reason: 'invalid' };
      return { ok: true, claims };
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) return { ok: false, reason: 'expired' };
      return { ok: false, reason: 'invalid' };
    }
  }
}
