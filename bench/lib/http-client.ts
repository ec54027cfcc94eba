import { request } from 'node:http';
import type { Readable } from 'node:stream';

/** POSTs a stream as application/x-ndjson (chunked, with back-pressure) and reads the answer. */
export function postStream(url: string, token: string, body: Readable): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { authorization: `Token ${token}`, 'content-type': 'application/x-ndjson' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    body.on('error', (err) => req.destroy(err));
    body.pipe(req);
  });
}

/** A JSON call the way a supplier's script makes it (global fetch: keep-alive by default). */
export async function call(
  baseUrl: string,
  token: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Token ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text for the error report
  }
  return { status: res.status, body: parsed };
}
