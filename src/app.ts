import path from 'node:path';
import compression from 'compression';
import express, { type Express } from 'express';
import type { Deps } from './context';
import { mountDocs } from './http/docs';
import { ok } from './http/envelope';
import { unavailable } from './http/errors';
import { errorHandler } from './http/error-handler';
import { buildOpenApi } from './http/openapi';
import { requestLog } from './http/request-log';
import { mountFallbacks, mountRoutes } from './http/routes';
import { ASSETS_DIR, VERSION } from './paths';
import { httpMetrics, metricsEnabled, mountMetrics } from './metrics';
import { mountDashboard } from './dashboard';
import { mountPublic } from './public';
import { apiRoutes } from './resources';

/** The express app, without listen(): server.ts serves it and the tests drive it with supertest. */
export function createApp(deps: Deps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('json replacer', undefined);
  // TRUST_PROXY: who may name the client in X-Forwarded-For (req.ip); off by default.
  if (deps.config.trustProxy !== '' && deps.config.trustProxy !== 0) app.set('trust proxy', deps.config.trustProxy);

  // Health probes every few seconds would drown the log.
  app.use(requestLog(deps.logger, (req) => req.url === '/healthz'));
  // Request durations by route pattern, only when /metrics is served (METRICS_TOKEN).
  if (metricsEnabled(deps.config)) app.use(httpMetrics());
  // Only clients that ask for it get a compressed body; the others skip the middleware, which
  // costs ≈35 µs per response even when it compresses nothing. Vary tells caches either way.
  const compress = compression({ threshold: 1024 });
  app.use((req, res, next) => {
    if (req.headers['accept-encoding']) {
      compress(req, res, next);
      return;
    }
    res.setHeader('Vary', 'Accept-Encoding');
    next();
  });

  // The API first: it is what almost every request is for, and its paths are fixed strings
  // that no page below shares.
  mountRoutes(app, apiRoutes, deps);

  app.get('/healthz', async (_req, res) => {
    try {
      await deps.db.raw('SELECT 1').timeout(2000, { cancel: true });
      res.json(ok('ok'));
    } catch {
      throw unavailable();
    }
  });

  mountMetrics(app, deps);

  let openapi: object | undefined;
  app.get('/openapi.json', (_req, res) => {
    openapi ??= buildOpenApi(apiRoutes, { version: VERSION, serverUrl: deps.config.publicUrl });
    res.json(openapi);
  });
  mountDocs(app, deps.config.publicUrl);
  app.use(
    '/images',
    express.static(path.join(ASSETS_DIR, 'images'), { index: false, maxAge: '7d', dotfiles: 'deny', fallthrough: true }),
  );

  mountPublic(app, deps);
  mountDashboard(app, deps);
  mountFallbacks(app, apiRoutes);
  app.use(errorHandler(deps.logger));
  return app;
}
