import express, { type Express, type Request, type Response } from 'express';
import type { Deps } from '../context';
import { applyOutcomes } from '../bounces/apply';
import type { InboundRequest, Received } from '../bounces/esp/common';
import { receiveMailgun } from '../bounces/esp/mailgun';
import { receivePostmark } from '../bounces/esp/postmark';
import { receiveSendgrid } from '../bounces/esp/sendgrid';
import { receiveSes } from '../bounces/esp/ses';
import { failed, ok } from '../http/envelope';

/**
 * POST /inbound/<provider>: ESP event webhooks (public: the provider's signature or
 * credentials are the authentication). A request that fails its check — a body too broken to
 * carry a signature among them — or reaches a provider Herald is not configured for, gets 401
 * and records nothing; only a verified one that cannot be read gets 400. Verified bounces, deferrals and complaints go to applyOutcomes, the same path
 * as Herald's own DSN parser; every other event type is acknowledged and ignored.
 */
type Receiver = (deps: Deps, req: InboundRequest) => Received | Promise<Received>;

const receivers: Record<string, Receiver> = {
  sendgrid: (deps, req) => receiveSendgrid(deps.config, req),
  mailgun: (deps, req) => receiveMailgun(deps.config, deps.db, req),
  postmark: (deps, req) => receivePostmark(deps.config, req),
  ses: (deps, req) => receiveSes(deps.config, deps.logger, req),
};

/** Largest body accepted: SendGrid batches events up to ≈ 768 KB per request. */
const MIN_LIMIT = 2 * 1024 * 1024;

export function mountInboundEsp(app: Express, deps: Deps): void {
  // The raw bytes are what SendGrid signs; every provider's body is read the same way.
  const raw = express.raw({ type: () => true, limit: Math.max(deps.config.bodyLimitBytes, MIN_LIMIT) });
  for (const [provider, receive] of Object.entries(receivers)) {
    app.post(`/inbound/${provider}`, raw, async (req: Request, res: Response) => {
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const received = await receive(deps, { headers: req.headers, body });
      if ('refused' in received) {
        req.log?.warn({ provider, why: received.refused }, 'ESP webhook refused');
        res.status(401).json(failed(received.refused));
        return;
      }
      if ('malformed' in received) {
        res.status(400).json(failed(received.malformed));
        return;
      }
      const applied = received.outcomes.length ? await applyOutcomes(deps, received.outcomes) : 0;
      res.json(ok({ received: received.outcomes.length, applied }));
    });
  }
}
