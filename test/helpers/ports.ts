import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { once } from 'node:events';

/**
 * The kernel's range for ephemeral ports: every outgoing connection (to PostgreSQL, to Redis, of
 * every test file running in parallel) takes its local port from it. A port the kernel handed out
 * for `listen(0)` is in that range, so between our closing it and a child process binding it, a
 * new outgoing connection may take it (CI failed once this way: EADDRINUSE on 127.0.0.1:37919).
 */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return [low!, high!];
  } catch {
    // Not Linux: the IANA dynamic range.
  }
  return [49152, 65535];
}

async function canListen(port: number): Promise<boolean> {
  const srv = createServer();
  srv.listen(port, '127.0.0.1');
  try {
    await Promise.race([once(srv, 'listening'), once(srv, 'error').then(([e]) => Promise.reject(e as Error))]);
  } catch {
    return false;
  }
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return true;
}

/**
 * A loopback port for a child process to listen on: free now, and outside the ephemeral range so
 * no outgoing connection takes it before the child binds it. Chosen at random among 10,000 ports,
 * so two test files in parallel rarely try the same one (and a port in use is skipped).
 */
export async function freePort(): Promise<number> {
  const [low, high] = ephemeralRange();
  const [from, to] = low > 20_000 ? [low - 10_000, low - 1] : [high + 1, Math.min(high + 10_000, 65_535)];
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = from + Math.floor(Math.random() * (to - from + 1));
    if (await canListen(port)) return port;
  }
  throw new Error(`no free loopback port between ${from} and ${to} after 50 tries`);
}
