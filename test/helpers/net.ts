import type http from 'node:http';
import net from 'node:net';

/** A TCP port nobody listens on right now (listen on 0, read it, close). */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port;
}

/**
 * `n` different TCP ports nobody listens on right now. All `n` are held open until each is read,
 * so two of them are never the same port (two `freePort()` calls in a row may answer the same
 * one: the first is closed before the second is asked for).
 */
export async function freePorts(n: number): Promise<number[]> {
  const servers: net.Server[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const srv = net.createServer();
      servers.push(srv);
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(0, '127.0.0.1', () => resolve());
      });
    }
    return servers.map((srv) => (srv.address() as net.AddressInfo).port);
  } finally {
    await Promise.all(servers.map((srv) => new Promise<void>((resolve) => (srv.listening ? srv.close(() => resolve()) : resolve()))));
  }
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
