import type { Request, Response } from 'express';
import { ok } from '../../http/envelope';
import { route, type RouteDef } from '../../http/routes';
import { geographyMessage, geographyQuery } from './geography.schemas';
import * as service from './geography.service';
import type { GeographyBody } from './geography.service';

const tag = 'Geography';

/**
 * Writes the prebuilt envelope, or 304 when the client's copy is current. `no-cache` lets
 * clients keep the megabytes and revalidate each time (the keys are checked on every
 * request); `private` because the request is authenticated. compression (app.ts) gzips or
 * brotli-encodes the body for clients that accept it.
 */
function sendWithEtag(req: Request, res: Response, { body, etag }: GeographyBody): void {
  res.set({ ETag: etag, 'Cache-Control': 'private, no-cache' });
  if (req.fresh) {
    res.status(304).end();
    return;
  }
  res.status(200).type('application/json').send(body);
}

export const geographyRoutes: RouteDef[] = [
  route({
    method: 'get',
    path: '/get/country-state-city',
    tag,
    summary: 'Countries, states and cities (about 150,000 cities; compressed, with an ETag)',
    description:
      'Herald extensions: `?country_id=` narrows `states` and `cities` to that country; `?state_id=` narrows ' +
      '`cities` to that state and `states` to its country. An unknown id gives empty lists. The answer carries ' +
      'a strong ETag: send it back in `If-None-Match` to get 304 when nothing changed.',
    query: geographyQuery,
    list: false,
    response: geographyMessage,
    failures: ['AUTH', 'VAL'],
    permission: 'read',
    handle: async ({ ctx, query, req, res }) => {
      sendWithEtag(req, res, await service.geographyBody(ctx, query));
      // Already written; the framework sends nothing more once headers are out.
      return ok(null);
    },
  }),
];
