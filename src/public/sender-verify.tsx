import type { Express, Request, Response } from 'express';
import type { Deps } from '../context';
import { confirmSender, isCurrentToken } from '../resources/senders/senders.service';
import { Heading, Note, sendRecipientMessage, sendRecipientPage, Text } from '../dashboard/recipient';

/** Our tokens are an account id, a dot and 43 base64url characters (older ones: those alone); anything else is not worth a query. */
const TOKEN = /^(\d{1,10}\.)?[A-Za-z0-9_-]{32,200}$/;

function invalidLink(res: Response): void {
  sendRecipientMessage(res, 404, 'Invalid link', 'This verification link is invalid or has expired.');
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
        if (await isCurrentToken(deps.db, token)) sendRecipientPage(res, 200, { title: 'Verify sender', body: <></> });
        else invalidLink(res);
        return;
      }
      const sender = await confirmSender(deps.db, token);
      if (!sender) return invalidLink(res);
      sendRecipientPage(res, 200, {
        title: 'Sender verified',
        body: (
          <>
            <Heading ok>Sender verified</Heading>
            <Text>
              <strong>{sender.from_name}</strong> {`<${sender.from_email}>`} is verified.
            </Text>
            <Note>Single sends and automation emails can now be sent from this address.</Note>
          </>
        ),
      });
    } catch (err) {
      req.log?.error({ err }, 'sender verification failed');
      sendRecipientMessage(res, 503, 'Try again later', 'The link could not be checked just now. Please open it again in a few minutes.');
    }
  });
}
