import type { AddressInfo, Server, Socket } from 'node:net';

export interface LoopbackListening {
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  /**
   * Stops: no new connection is taken, every open one is destroyed (a kept-alive client would
   * otherwise hold the close forever), and resolves once the server has closed. Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Listens on 127.0.0.1 (a free port unless one is given) and keeps track of the connections, for
 * the sandboxes the service runs in development and the tests run as fakes (the payment vendor,
 * the registration gateway).
 */
export async function listenOnLoopback(server: Server, port = 0): Promise<LoopbackListening> {
  const sockets = new Set<Socket>();
  let closing: Promise<void> | undefined;
  server.on('connection', (socket: Socket) => {
    if (closing) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}`,
    port: bound,
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const socket of sockets) socket.destroy();
        await closed;
      })();
      return closing;
    },
  };
}
