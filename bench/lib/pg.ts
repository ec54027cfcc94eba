import pg from 'pg';

/**
 * node-postgres emits 'error' on a client whose connection dies, and a pool listens only on its
 * idle clients: with no listener that is an uncaught exception. The bench's own connections can
 * die legitimately (its cleanup drops a database WITH (FORCE) while a scenario is being interrupted),
 * so every client it opens gets a listener; the query in flight still rejects.
 */
const ignore = (): void => undefined;

export function pgClient(config: pg.ClientConfig): pg.Client {
  const client = new pg.Client(config);
  client.on('error', ignore);
  return client;
}

export function guardPool(pool: pg.Pool): pg.Pool {
  pool.on('error', ignore);
  pool.on('connect', (client) => client.on('error', ignore));
  return pool;
}

export function pgPool(config: pg.PoolConfig): pg.Pool {
  return guardPool(new pg.Pool(config));
}
