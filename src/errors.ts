/** One problem inside an error envelope: `attr` is a dot path into the request (`customers.0.landline`), or null. */
export interface ErrorItem {
  detail: string;
  code: string;
  attr: string | null;
}

/** The interface's error envelope, with optional extra top-level fields (already-imported carries two). */
export interface ErrorEnvelope {
  detail: string;
  code: string;
  errors: ErrorItem[];
  [extra: string]: unknown;
}

/**
 * A failure the caller should see as a response: status, stable code, envelope.
 * Services throw it; the HTTP layer and the queue workers map it without knowing its origin.
 */
export class AppError extends Error {
  override readonly name = 'AppError';
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly errors: ErrorItem[] = [],
    /** Fields placed beside detail/code/errors in the body. */
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
    options?: { cause?: unknown },
  ) {
    super(detail, options);
  }

  /** The response body. A subclass may replace it (transactions use their own 400 shape). */
  body(): Record<string, unknown> {
    return { detail: this.detail, code: this.code, errors: this.errors, ...this.extra };
  }
}

export const item = (code: string, detail: string, attr: string | null): ErrorItem => ({ detail, code, attr });

/** 400 whose only problem is one field: the item repeats the top-level code with its attr. */
export function badRequest(code: string, detail: string, attr: string | null = null, extra: Record<string, unknown> = {}): AppError {
  return new AppError(400, code, detail, attr === null ? [] : [item(code, detail, attr)], extra);
}

export const notFound = (code: string, detail: string): AppError => new AppError(404, code, detail);

/** Joins a path of keys and indexes into the interface's dot form. */
export const attrOf = (path: readonly PropertyKey[]): string | null =>
  path.length === 0 ? null : path.map((p) => String(p)).join('.');
