import { Webhook } from 'standardwebhooks';

// One delivery attempt over HTTP: the event signed the Standard Webhooks way (HMAC-SHA256 over
// `id.timestamp.body`, in the webhook-id, webhook-timestamp and webhook-signature headers), POSTed
// with Node's fetch. Never throws: every outcome, a network failure included, is an answer.

/** How much of the receiver's answer is kept for operators. */
export const RESPONSE_EXCERPT_BYTES = 1024;

export interface SendInput {
  url: string;
  /** whsec_<base64>: used to sign, never logged. */
  secret: string;
  /** The event's id: the same on every attempt, so the receiver can drop a repeat. */
  eventId: string;
  /** The exact bytes sent and signed. */
  body: string;
  timeoutMs: number;
  /** The attempt's time, signed in webhook-timestamp (receivers refuse one more than 5 minutes off). */
  now: Date;
  userAgent: string;
}

export type SendOutcome =
  /** 2xx. */
  | { kind: 'delivered'; statusCode: number; response: string }
  /** A 4xx other than 408 and 429: the receiver refuses this event, and asking again will not help. */
  | { kind: 'refused'; statusCode: number; response: string; error: string }
  /** 5xx, 408, 429, a redirect (not followed), a timeout or a connection failure: worth another attempt. */
  | { kind: 'retry'; statusCode: number | null; response: string | null; error: string };

export async function sendWebhook(input: SendInput): Promise<SendOutcome> {
  const signature = new Webhook(input.secret).sign(input.eventId, input.now, input.body);
  let res: Response;
  try {
    res = await fetch(input.url, {
      method: 'POST',
      body: input.body,
      headers: {
        'content-type': 'application/json',
        'user-agent': input.userAgent,
        'webhook-id': input.eventId,
        'webhook-timestamp': String(Math.floor(input.now.getTime() / 1000)),
        'webhook-signature': signature,
      },
      // A redirect could send the payload somewhere the supplier never registered.
      redirect: 'manual',
      signal: AbortSignal.timeout(input.timeoutMs),
    });
  } catch (err) {
    return { kind: 'retry', statusCode: null, response: null, error: describe(err, input.timeoutMs) };
  }
  let response: string;
  try {
    response = await readExcerpt(res, RESPONSE_EXCERPT_BYTES);
  } catch (err) {
    // The status arrived; a body cut short (or too slow) still leaves the answer known.
    response = `(answer unreadable: ${describe(err, input.timeoutMs)})`;
  }
  const s = res.status;
  if (s >= 200 && s < 300) return { kind: 'delivered', statusCode: s, response };
  if (s >= 400 && s < 500 && s !== 408 && s !== 429) return { kind: 'refused', statusCode: s, response, error: `HTTP ${s}` };
  return { kind: 'retry', statusCode: s, response, error: s >= 300 && s < 400 ? `HTTP ${s} (redirects are not followed)` : `HTTP ${s}` };
}

/** At most `max` bytes of the body, as text; the rest is never read (the connection is let go). */
async function readExcerpt(res: Response, max: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < max) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  const bytes = Buffer.concat(chunks).subarray(0, max);
  // A character cut at the end becomes U+FFFD: an excerpt, not data.
  return new TextDecoder('utf-8', { fatal: false }).decode(bytes);
}

function describe(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `timed out after ${timeoutMs} ms`;
  const cause = e.cause?.code ?? e.cause?.message;
  return cause ? `${e.message ?? 'request failed'}: ${cause}` : (e.message ?? String(err));
}
