import { randomUUID } from 'node:crypto';
import path from 'node:path';
import compression from 'compression';
import express, { type Express } from 'express';
import { pinoHttp } from 'pino-http';
import type { Deps } from './context';
import { mountDocs } from './http/docs';
import { ok } from './http/envelope';
import { unavailable } from './http/errors';
import { errorHandler } from './http/error-handler';
import { buildOpenApi } from './http/openapi';
import { mountRoutes } from './http/routes';
import { ASSETS_DIR, VERSION } from './paths';
import { mountPublic } from './public';
import { apiRoutes } from './resources';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,100}$/;

/** The express app, without listen(): server.ts serves it and the tests drive it with supertest. */
export function createApp(deps: Deps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('json replacer', undefined);

  app.use(
    pinoHttp({
      logger: deps.logger,
      genReqId: (req, res) => {
        const given = req.headers['x-request-id'];
        const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
        res.setHeader('X-Request-Id', id);
        return id;
      },
      customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : 'info'),
      // Health probes every few seconds would drown the log.
      autoLogging: { ignore: (req) => req.url === '/healthz' },
    }),
  );
  app.use(compression({ threshold: 1024 }));

  app.get('/healthz', async (_req, res) => {
    try {
      await deps.db.raw('SELECT 1').timeout(2000, { cancel: true });
      res.json(ok('ok'));
    } catch {
      throw unavailable();
    }
  });

  let openapi: object | undefined;
  app.get('/openapi.json', (_req, res) => {
    openapi ??= buildOpenApi(apiRoutes, { version: VERSION, serverUrl: deps.config.publicUrl });
    res.json(openapi);
  });
  mountDocs(app);
  app.use(
    '/images',
    express.static(path.join(ASSETS_DIR, 'images'), { index: false, maxAge: '7d', dotfiles: 'deny', fallthrough: true }),
  );

  mountPublic(app, deps);
  mountRoutes(app, apiRoutes, deps);
  app.use(errorHandler(deps.logger));
  return app;
}
