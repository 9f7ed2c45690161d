import type http from 'node:http';
import net from 'node:net';

/** A TCP port nobody listens on right now (listen on 0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Starts an HTTP server on a free port of 127.0.0.1; resolves with its base URL. */
export async function listenLocal(server: http.Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

/** Closes HTTP servers (those started at all), their open connections first. */
export async function closeServers(...servers: Array<http.Server | undefined>): Promise<void> {
  for (const s of servers) {
    if (!s) continue;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
}
