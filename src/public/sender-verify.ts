import type { Express, Request, Response } from 'express';
import type { Deps } from '../context';
import { confirmSender, isCurrentToken } from '../resources/senders/senders.service';
import { escapeHtml, sendPage } from './page';

/** Our tokens are an account id, a dot and 43 base64url characters (older ones: those alone); anything else is not worth a query. */
const TOKEN = /^(\d{1,10}\.)?[A-Za-z0-9_-]{32,200}$/;

const INVALID_TITLE = 'Invalid link';
const INVALID_BODY = '<h1>Invalid link</h1><p>This verification link is invalid or has expired.</p>';

function invalidLink(res: Response): void {
  sendPage(res, 404, INVALID_TITLE, INVALID_BODY);
}

/**
 * `GET /senders/verify/<token>`, the link in a sender's verification mail (no API keys).
 * A HEAD request (link checkers) answers like GET would but does not use the link up.
 */
export function mountSenderVerify(app: Express, deps: Deps): void {
  app.get('/senders/verify/:token', async (req: Request, res: Response) => {
    const token = String(req.params.token);
    if (!TOKEN.test(token)) return invalidLink(res);
    try {
      if (req.method === 'HEAD') {
        if (await isCurrentToken(deps.db, token)) sendPage(res, 200, 'Verify sender', '');
        else invalidLink(res);
        return;
      }
      const sender = await confirmSender(deps.db, token);
      if (!sender) return invalidLink(res);
      sendPage(
        res,
        200,
        'Sender verified',
        `<h1 class="ok">Sender verified</h1>
<p><strong>${escapeHtml(sender.from_name)}</strong> &lt;${escapeHtml(sender.from_email)}&gt; is verified.</p>
<p class="muted">Single sends and automation emails can now be sent from this address.</p>`,
      );
    } catch (err) {
      req.log?.error({ err }, 'sender verification failed');
      sendPage(res, 503, 'Try again later', '<h1>Try again later</h1><p>The link could not be checked just now. Please open it again in a few minutes.</p>');
    }
  });
}
