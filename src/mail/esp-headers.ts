import type { EspProvider } from '../config';

/**
 * The metadata headers that make an ESP's event name Herald's recipient row: each provider
 * echoes its own header's values in its webhook events (SendGrid's unique args, Mailgun's
 * user variables, Postmark's metadata). Amazon SES echoes no metadata but, with "include
 * original headers" on, reports the message's headers — and replaces Message-ID — so SES gets
 * a neutral `X-Herald-Recipient`. The value is the recipient token (HMAC-signed), which names
 * one row and nothing else, so a forged event can at most name a row it already knows.
 */
export const HERALD_METADATA_KEY = 'herald';
export const RECIPIENT_HEADER = 'X-Herald-Recipient';

const writers: Record<EspProvider, (token: string) => [string, string]> = {
  sendgrid: (t) => ['X-SMTPAPI', `{"unique_args":{"${HERALD_METADATA_KEY}":"${t}"}}`],
  mailgun: (t) => ['X-Mailgun-Variables', `{"${HERALD_METADATA_KEY}":"${t}"}`],
  postmark: (t) => [`X-PM-Metadata-${HERALD_METADATA_KEY}`, t],
  ses: (t) => [RECIPIENT_HEADER, t],
};

/** A function writing the chosen providers' headers for one token (tokens are hex: no escaping needed). */
export function espHeaderWriter(providers: readonly EspProvider[]): ((token: string) => Record<string, string>) | undefined {
  if (providers.length === 0) return undefined;
  const chosen = providers.map((p) => writers[p]);
  return (token) => Object.fromEntries(chosen.map((w) => w(token)));
}
