import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { SupplierScope } from '../auth/supplier-scope.js';

export interface ResponseSpec {
  description: string;
  /** Omitted: the interface's error envelope (for 4xx/5xx) or no body. */
  schema?: z.ZodType;
  /** The body is one of these (the document says `oneOf`); instead of `schema`. */
  oneOf?: z.ZodType[];
  /** Other media types the same answer comes in (`text/csv` with Accept: text/csv), with what each holds. */
  alternatives?: Record<string, string>;
  headers?: Record<string, string>;
}

/** A request body that is not JSON: its media type, and the schema of each item (an NDJSON line). */
export interface StreamBody {
  mediaType: string;
  description: string;
  itemSchema: z.ZodType;
}

/**
 * One endpoint, declared once: the router, the authentication hook and the OpenAPI document
 * are all built from these, so none of them can drift from the others.
 */
export interface RouteDef {
  method: 'GET' | 'POST';
  url: string;
  operationId: string;
  summary: string;
  tags: string[];
  /** 'token': the data-import token. 'none': open (health, spec). Other kinds come with later routes. */
  auth: 'token' | 'none';
  body?: z.ZodType;
  /** A streamed body (the cohort upload); the route reads it itself. */
  streamBody?: StreamBody;
  query?: z.ZodType;
  params?: z.ZodType;
  responses: Record<number, ResponseSpec>;
  handler: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}

export const defineRoutes = (routes: RouteDef[]): RouteDef[] => routes;

/** The suppliers the request's API key reaches (set by the token hook; every token route has one). */
export function scopeOf(req: FastifyRequest): SupplierScope {
  if (req.supplierScope === undefined) throw new Error(`${req.method} ${req.routeOptions.url}: no token hook set a supplier scope`);
  return req.supplierScope;
}
