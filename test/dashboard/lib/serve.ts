import type { Express } from 'express';
import type { AddressInfo } from 'node:net';

/** The app on a loopback port for a browser: its base URL, and `close()` (which cuts open connections). */
export interface Served {
  base: string;
  close(): Promise<void>;
}

export async function serve(app: Express): Promise<Served> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
