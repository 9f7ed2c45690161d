import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { AUTH_REQUIRED, WRONG_KEYS } from './auth';
import { NOT_FOUND_1, NOT_FOUND_2 } from './envelope';
import type { FailureCode, RouteDef } from './routes';

/**
 * The API document, generated from the same route table and zod schemas that validate
 * requests: what /openapi.json says is what the service does.
 */
const failureResponses: Record<FailureCode, { status: number; description: string; errors: z.ZodType }> = {
  AUTH: {
    status: 401,
    description: 'A key header is missing (object) or the pair is wrong (string)',
    errors: z.union([
      z.object({
        PublicKey: z.array(z.literal(AUTH_REQUIRED.PublicKey)).optional(),
        SecretKey: z.array(z.literal(AUTH_REQUIRED.SecretKey)).optional(),
      }),
      z.literal(WRONG_KEYS),
    ]),
  },
  VAL: {
    status: 422,
    description: 'Validation failed: messages keyed by field',
    errors: z.record(z.string(), z.array(z.string())),
  },
  NF1: { status: 404, description: 'Not found (NF1)', errors: z.literal(NOT_FOUND_1) },
  NF2: { status: 404, description: 'Not found (NF2)', errors: z.literal(NOT_FOUND_2) },
  REFUSED: { status: 422, description: 'The operation is refused in the record’s current state', errors: z.string() },
  TOO_LARGE: { status: 413, description: 'The body or file is too large', errors: z.string() },
};

function envelope(key: 'message' | 'errors', status: 'success' | 'failed', schema: z.ZodType) {
  return z.object({ status: z.literal(status), [key]: schema });
}

type Content = Record<string, { schema: z.ZodType }>;
interface PublicOperation {
  method: 'get' | 'post' | 'options';
  path: string;
  tag: string;
  summary: string;
  description: string;
  /** Path parameters, each a string. */
  params?: string[];
  body?: { description: string; content: Content };
  responses: Record<number, { description: string; content?: Content; headers?: Record<string, { description: string; schema: { type: 'string' } }> }>;
}

const html = (description: string) => ({ description, content: { 'text/html': { schema: z.string() } } });
const json = (description: string, schema: z.ZodType) => ({ description, content: { 'application/json': { schema } } });
const failedJson = (description: string) => json(description, envelope('errors', 'failed', z.string()));
const NOT_RECOGNISED = html('The token is unknown, malformed or no longer valid: a page saying so');

const inbound = (provider: string, summary: string, check: string, contentType = 'application/json', more: PublicOperation['responses'] = {}): PublicOperation => ({
  method: 'post',
  path: `/inbound/${provider}`,
  tag: 'ESP webhooks',
  summary,
  description: `${check} Configure it in the provider as the README's "ESP webhooks" says; without its setting the endpoint answers 401.`,
  body: { description: 'The provider’s event payload, as it sends it', content: { [contentType]: { schema: z.unknown() } } },
  responses: {
    200: json('Verified: how many bounces, deferrals and complaints it held, and how many changed something', envelope('message', 'success', z.object({ received: z.number().int(), applied: z.number().int() }))),
    400: failedJson('Verified, but the events cannot be read'),
    401: failedJson('The check failed (a body that carries no signature among them), or the provider is not configured; nothing is recorded'),
    ...more,
  },
});

/**
 * What Herald serves outside the API route table, without API keys: health, the recipient pages
 * and tracking (the token in the link is the credential) and the ESP webhooks (the provider's
 * signature is). test/api/openapi.test.ts checks that every such route of the app is here.
 */
const PUBLIC_OPERATIONS: PublicOperation[] = [
  {
    method: 'get',
    path: '/healthz',
    tag: 'Service',
    summary: 'Health',
    description: 'Answers once the database answers (2 s at most); for load balancers and probes.',
    responses: { 200: json('The database answers', envelope('message', 'success', z.literal('ok'))), 503: failedJson('The database cannot be reached') },
  },
  {
    method: 'get',
    path: '/metrics',
    tag: 'Service',
    summary: 'Prometheus metrics',
    description:
      'Off unless METRICS_TOKEN is set (then it answers like an unknown path); with it, `Authorization: Bearer <METRICS_TOKEN>` is required. ' +
      'Prometheus text: herald_messages_total{route,outcome}, herald_deferrals_total{reason}, herald_queue_depth, herald_queue_oldest_seconds, ' +
      'herald_route_status{route,status}, herald_http_request_duration_seconds{method,route,status}. A standalone `herald worker` serves the same on METRICS_PORT.',
    responses: {
      200: { description: 'Prometheus text exposition format 0.0.4', content: { 'text/plain': { schema: z.string() } } },
      401: failedJson('The bearer token is missing or wrong'),
      404: failedJson('Metrics are off (METRICS_TOKEN is not set): `Route not found`'),
      503: failedJson('The database cannot be reached'),
    },
  },
  {
    method: 'get',
    path: '/t/open/{file}',
    tag: 'Recipient pages',
    summary: 'Open pixel',
    description: '`<token>.gif`, the image at the end of every tracked message: records `opened`. Always the GIF, also for an unknown token.',
    params: ['file'],
    responses: { 200: { description: 'A transparent 1×1 GIF (43 bytes), never cached', content: { 'image/gif': { schema: z.string().meta({ format: 'binary' }) } } } },
  },
  {
    method: 'get',
    path: '/t/click/{token}',
    tag: 'Recipient pages',
    summary: 'Click redirect',
    description: 'A tracked link (TRACK_CLICKS): records `clicked` and sends the person on to the link as written in the design.',
    params: ['token'],
    responses: {
      302: { description: 'To the link’s URL', headers: { Location: { description: 'The link as written in the design', schema: { type: 'string' } } } },
      404: NOT_RECOGNISED,
    },
  },
  {
    method: 'get',
    path: '/unsubscribe/{token}',
    tag: 'Recipient pages',
    summary: 'Unsubscribe preferences page',
    description: 'The page the footer’s unsubscribe link opens: the message’s group and every displayed group, each with a checkbox.',
    params: ['token'],
    responses: { 200: html('The preferences form'), 404: NOT_RECOGNISED },
  },
  {
    method: 'post',
    path: '/unsubscribe/{token}',
    tag: 'Recipient pages',
    summary: 'Unsubscribe (one-click or the preferences form)',
    description:
      '`List-Unsubscribe=One-Click` (RFC 8058, what mail clients send) or any post without `action=save` unsubscribes from the message’s group ' +
      '(the global list when it has none); `action=save` applies the form: the groups in `keep[]` stay subscribed, the others are left, ' +
      'and `all=1` unsubscribes from everything (without it, an earlier global unsubscribe is lifted).',
    params: ['token'],
    body: {
      description: 'Form fields',
      content: {
        'application/x-www-form-urlencoded': {
          schema: z.object({ 'List-Unsubscribe': z.literal('One-Click').optional(), action: z.literal('save').optional(), 'keep[]': z.array(z.number().int()).optional(), all: z.literal('1').optional() }),
        },
      },
    },
    responses: { 200: html('Unsubscribed, or the preferences saved'), 404: NOT_RECOGNISED },
  },
  {
    method: 'get',
    path: '/subscribe/{id}',
    tag: 'Signup forms',
    summary: 'The hosted signup form',
    description: 'The form `GET /forms/details` names by its `public_id`: its fields, the lists to choose when there are several, the consent checkbox and, with `captcha=proof_of_work`, the proof-of-work widget (served from this origin).',
    params: ['id'],
    responses: { 200: html('The form'), 404: html('No such form (deleted, or an id this installation did not sign); `Record Not Found` in the envelope with `Accept: application/json`') },
  },
  {
    method: 'post',
    path: '/subscribe/{id}',
    tag: 'Signup forms',
    summary: 'Subscribe (the hosted form, a pasted snippet, or JSON)',
    description:
      'Form fields as the snippet posts them, or JSON; `Accept: application/json` answers the envelope (any origin may call it: CORS without credentials). ' +
      'Double opt-in: a pending subscription and one confirmation mail (never a contact until confirmed); single opt-in: the contact at once. ' +
      'The answer is the same whether the address is new, pending, subscribed or suppressed. A filled honeypot (`website`) is answered alike and dropped. ' +
      'Each client address may submit `SUBSCRIBE_LIMIT_PER_HOUR` times per clock hour.',
    params: ['id'],
    body: {
      description: 'The form’s fields: `email`, reserved field names, `custom_field[<name>]`, `contact_type_ids[]` (when the form has several lists), `consent=1`, `altcha` (proof of work), `website` (honeypot, empty)',
      content: {
        'application/x-www-form-urlencoded': { schema: z.record(z.string(), z.unknown()) },
        'application/json': { schema: z.record(z.string(), z.unknown()) },
      },
    },
    responses: {
      200: { description: 'Accepted: the “check your inbox” page, or the envelope', content: { 'text/html': { schema: z.string() }, 'application/json': { schema: envelope('message', 'success', z.string()) } } },
      303: { description: 'Accepted, to the form’s `success_url`', headers: { Location: { description: 'success_url', schema: { type: 'string' } } } },
      400: failedJson('The JSON body could not be read'),
      404: html('No such form'),
      422: { description: 'The page again with each message beside its field, or the envelope with messages keyed by field', content: { 'text/html': { schema: z.string() }, 'application/json': { schema: envelope('errors', 'failed', z.record(z.string(), z.array(z.string()))) } } },
      429: { description: 'Past SUBSCRIBE_LIMIT_PER_HOUR for this client address (`Retry-After`)', content: { 'text/html': { schema: z.string() }, 'application/json': { schema: envelope('errors', 'failed', z.literal('Too Many Requests')) } } },
    },
  },
  {
    method: 'options',
    path: '/subscribe/{id}',
    tag: 'Signup forms',
    summary: 'CORS preflight of the JSON endpoint',
    description: 'Any origin, `POST` with `Content-Type` and `Accept`; never credentials.',
    params: ['id'],
    responses: { 204: { description: 'The CORS headers' } },
  },
  {
    method: 'get',
    path: '/subscribe/{id}/challenge',
    tag: 'Signup forms',
    summary: 'A proof-of-work challenge (ALTCHA)',
    description: 'For a form with `captcha=proof_of_work`: a signed challenge valid 10 minutes, as the widget fetches it; its solution is accepted once.',
    params: ['id'],
    responses: { 200: json('The challenge', z.record(z.string(), z.unknown())), 404: failedJson('No such form, or it has no proof of work') },
  },
  {
    method: 'options',
    path: '/subscribe/{id}/challenge',
    tag: 'Signup forms',
    summary: 'CORS preflight of the challenge',
    description: 'Any origin; never credentials.',
    params: ['id'],
    responses: { 204: { description: 'The CORS headers' } },
  },
  {
    method: 'get',
    path: '/subscribe/confirm/{token}',
    tag: 'Signup forms',
    summary: 'The confirmation page of a double opt-in link',
    description: 'Shows a Confirm button that posts to the same path. Opening it confirms nothing, so a mail scanner that fetches every link subscribes no one.',
    params: ['token'],
    responses: { 200: html('The Confirm button'), 404: NOT_RECOGNISED, 410: html('The link expired (with a button for a new mail) or was used already') },
  },
  {
    method: 'post',
    path: '/subscribe/confirm/{token}',
    tag: 'Signup forms',
    summary: 'Confirm a subscription (once)',
    description: 'Adds the contact to the form’s lists with its consent record, starts the lists’ welcome automations and records `contact.confirmed`.',
    params: ['token'],
    responses: {
      200: html('Confirmed'),
      303: { description: 'Confirmed, to the form’s `confirm_url`', headers: { Location: { description: 'confirm_url', schema: { type: 'string' } } } },
      404: NOT_RECOGNISED,
      410: html('The link expired or was used already'),
    },
  },
  {
    method: 'post',
    path: '/subscribe/resend/{token}',
    tag: 'Signup forms',
    summary: 'A new confirmation mail for an expired link',
    description: 'Queued when the subscription still waits and was not mailed in the last 10 minutes; the page is the same either way. Counts toward SUBSCRIBE_LIMIT_PER_HOUR.',
    params: ['token'],
    responses: { 200: html('“Check your inbox”'), 404: NOT_RECOGNISED, 429: html('Past SUBSCRIBE_LIMIT_PER_HOUR for this client address') },
  },
  {
    method: 'post',
    path: '/unsubscribe/{token}/my-data',
    tag: 'Recipient pages',
    summary: 'Get my data: mail a one-time link to the export',
    description: 'The preferences page’s “Get my data”: mails the message’s address a link to /my-data/{token} (24 hours, used once) and records `contact.data_requested`.',
    params: ['token'],
    responses: { 200: html('“Check your inbox”'), 404: NOT_RECOGNISED },
  },
  {
    method: 'get',
    path: '/unsubscribe/{token}/forget',
    tag: 'Recipient pages',
    summary: 'Forget me: the confirmation page',
    description: 'Shows what an erasure removes and a button that posts to the same path; opening it erases nothing.',
    params: ['token'],
    responses: { 200: html('The confirmation page'), 404: NOT_RECOGNISED },
  },
  {
    method: 'post',
    path: '/unsubscribe/{token}/forget',
    tag: 'Recipient pages',
    summary: 'Forget me: erase the address',
    description: 'Erases the message’s address in its account as POST /contacts/erase does (by `recipient`); the link stops working with it.',
    params: ['token'],
    responses: { 200: html('“Your data is erased”'), 404: NOT_RECOGNISED },
  },
  {
    method: 'get',
    path: '/my-data/{token}',
    tag: 'Recipient pages',
    summary: 'My data: the download page',
    description: 'The page of a “Get my data” link, with a Download button that posts to the same path; opening it spends nothing.',
    params: ['token'],
    responses: { 200: html('The download page'), 410: html('The link expired or was used') },
  },
  {
    method: 'post',
    path: '/my-data/{token}',
    tag: 'Recipient pages',
    summary: 'My data: download the export (once)',
    description: 'Everything the account holds about the address, as GET /contacts/export-person answers it, as a JSON attachment; spends the link.',
    params: ['token'],
    responses: {
      200: { description: 'my-data.json (attachment)', content: { 'application/json': { schema: z.record(z.string(), z.unknown()) } } },
      410: html('The link expired or was used'),
    },
  },
  {
    method: 'get',
    path: '/senders/verify/{token}',
    tag: 'Recipient pages',
    summary: 'Verify a sender address',
    description: 'The link in a sender’s verification mail; HEAD checks it without using it up.',
    params: ['token'],
    responses: { 200: html('The sender is verified'), 404: html('The link is invalid or has expired') },
  },
  {
    method: 'get',
    path: '/design/{utr}',
    tag: 'Recipient pages',
    summary: 'An automation email’s design',
    description: 'The `design_url` of an automation email: its HTML as designed, served with `Content-Security-Policy: sandbox`.',
    params: ['utr'],
    responses: { 200: html('The design'), 404: html('No such design') },
  },
  inbound('sendgrid', 'SendGrid Event Webhook', 'Signed Event Webhook: the ECDSA signature of timestamp and body (SENDGRID_WEBHOOK_PUBLIC_KEY), timestamp within 5 minutes.'),
  inbound('mailgun', 'Mailgun webhooks', 'HMAC-SHA256 of timestamp and token (MAILGUN_WEBHOOK_SIGNING_KEY), timestamp within 5 minutes, a token not seen before.'),
  inbound('postmark', 'Postmark Bounce and Spam Complaint webhooks', 'Basic auth from the webhook URL (POSTMARK_WEBHOOK_USER, POSTMARK_WEBHOOK_PASSWORD).'),
  inbound(
    'ses',
    'Amazon SES through SNS',
    'An SNS message of a topic in SES_SNS_TOPIC_ARNS, its signature checked against the certificate at SigningCertURL; subscription confirmations are confirmed.',
    'text/plain',
    { 502: failedJson('The SNS subscription could not be confirmed (SNS sends the confirmation again)') },
  ),
];

function registerPublic(registry: OpenAPIRegistry): void {
  for (const op of PUBLIC_OPERATIONS) {
    registry.registerPath({
      method: op.method,
      path: op.path,
      tags: [op.tag],
      summary: op.summary,
      description: op.description,
      security: [],
      request: {
        params: op.params ? z.object(Object.fromEntries(op.params.map((p) => [p, z.string()]))) : undefined,
        body: op.body && { description: op.body.description, content: op.body.content },
      },
      responses: op.responses,
    });
  }
}

export function buildOpenApi(defs: RouteDef[], info: { version: string; serverUrl: string }): object {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'PublicKey', { type: 'apiKey', in: 'header', name: 'PublicKey' });
  registry.registerComponent('securitySchemes', 'SecretKey', { type: 'apiKey', in: 'header', name: 'SecretKey' });

  for (const def of defs) {
    const responses: Record<number, { description: string; content: Record<string, { schema: z.ZodType }> }> = {
      200: {
        description: 'Success',
        content: {
          'application/json': {
            schema: envelope(def.inErrors ? 'errors' : 'message', 'success', def.response),
          },
        },
      },
    };
    for (const code of def.failures) {
      const f = failureResponses[code];
      const existing = responses[f.status];
      const schema = envelope('errors', 'failed', f.errors);
      responses[f.status] = existing
        ? { description: `${existing.description}; ${f.description}`, content: { 'application/json': { schema: z.union([existing.content['application/json'].schema, schema]) } } }
        : { description: f.description, content: { 'application/json': { schema } } };
    }
    const queryShape: Record<string, z.ZodType> = {};
    if (def.id) queryShape[def.id.name] = def.id.kind === 'utr' ? z.string() : z.number().int();
    if (def.list) {
      queryShape.page = z.number().int().min(1).optional();
      queryShape.per_page = z.number().int().min(1).max(1000).optional();
    }
    if (def.query && def.query instanceof z.ZodObject) Object.assign(queryShape, def.query.shape);
    const form = def.body ?? (def.file ? z.object({}) : undefined);
    const bodySchema =
      def.file && form instanceof z.ZodObject
        ? form.extend({ [def.file.field]: z.string().meta({ format: 'binary' }) })
        : form;
    for (const method of [def.method, ...(def.alsoMethods ?? [])]) {
      registry.registerPath({
        method,
        path: def.path,
        tags: [def.tag],
        summary: def.summary,
        // The one permission the route checks (README "Your team"): the keys have every one; a dashboard user's role may not.
        description: [def.description, `Permission: \`${def.permission}\`.`].filter(Boolean).join('\n\n'),
        security: [{ PublicKey: [], SecretKey: [] }],
        request: {
          query: Object.keys(queryShape).length ? z.object(queryShape) : undefined,
          body:
            bodySchema && method === 'post'
              ? {
                  content: {
                    'multipart/form-data': { schema: bodySchema },
                    ...(def.file
                      ? {}
                      : {
                          'application/x-www-form-urlencoded': { schema: bodySchema },
                          'application/json': { schema: bodySchema },
                        }),
                  },
                }
              : undefined,
        },
        responses,
      });
    }
  }
  registerPublic(registry);
  const generator = new OpenApiGeneratorV31(registry.definitions);
  return generator.generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Herald API',
      version: info.version,
      description:
        'Email campaign management. Every API call carries the PublicKey and SecretKey headers; every API response is ' +
        'the JSON envelope `{status, message}` or `{status: "failed", errors}`. The recipient pages, tracking, ESP webhooks ' +
        'and health check need no keys.',
    },
    servers: [{ url: info.serverUrl }],
  });
}
