import type { Request, Response } from 'express';
import { findWebhook, listBatches, listWebhooks, testWebhook } from '../../resources/webhooks/webhooks.service';
import { Section, Table } from '../components';
import { count, when } from '../format';
import { Layout, PostButton } from '../layout';
import { sendPage, type PageContext } from '../respond';
import { allowed, auditAction } from '../permissions';

/** Webhook endpoints (GET /webhooks/list), their batches (GET /webhooks/deliveries), "send test" (POST /webhooks/test). */
type Webhook = Awaited<ReturnType<typeof listWebhooks>>[number];
type Batch = Awaited<ReturnType<typeof listBatches>>['rows'][number];

function state(w: Pick<Webhook, 'is_active' | 'failing_since'>): string {
  if (w.failing_since) return w.is_active ? 'failing' : 'disabled after failing';
  return w.is_active ? 'active' : 'paused';
}

const webhookId = (req: Request) => (/^\d{1,9}$/.test(String(req.params.id)) ? Number(req.params.id) : 0);

const TestButton = ({ id, url, csrf }: { id: number; url: string; csrf: string }) => <PostButton action={`/app/webhooks/${id}/test`} csrf={csrf} label="Send test" name={url} />;

export async function webhooksPage(_req: Request, res: Response, p: PageContext): Promise<void> {
  const hooks = await listWebhooks(p.ctx);
  sendPage(
    res,
    200,
    <Layout title="Webhooks" csrf={p.session.csrf} active="webhooks">
      <h1>Webhooks</h1>
      <Section title="Endpoints" id="endpoints">
        <Table<Webhook>
          name="webhooks"
          caption="Endpoints, newest first"
          rows={hooks}
          empty="No webhook endpoints (POST /webhooks/save adds one)."
          columns={[
            { label: 'URL', cell: (w) => <a class="url" href={`/app/webhooks/${w.id}`}>{w.url}</a> },
            { label: 'Events', cell: (w) => (w.event_types.length ? w.event_types.join(', ') : 'all') },
            { label: 'State', cell: (w) => <span data-state={state(w)}>{state(w)}</span> },
            { label: 'Failing since', cell: (w) => (w.failing_since ? <time dateTime={w.failing_since}>{when(w.failing_since, p.tz)}</time> : '–') },
            { label: 'Action', cell: (w) => (allowed(p, 'settings:manage') ? <TestButton id={w.id} url={w.url} csrf={p.session.csrf} /> : '–') },
          ]}
        />
      </Section>
    </Layout>,
  );
}

export async function webhookPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const id = webhookId(req);
  const [hook, batches] = await Promise.all([findWebhook(p.ctx, id), listBatches(p.ctx, id)]);
  const failures = batches.rows.filter((b) => b.status === 'failed' || b.error);
  const columns = [
    { label: 'Created', cell: (b: Batch) => <time dateTime={b.created_at}>{when(b.created_at, p.tz)}</time> },
    { label: 'Type', cell: (b: Batch) => b.type },
    { label: 'Events', numeric: true, cell: (b: Batch) => count(b.event_ids.length) },
    { label: 'Status', cell: (b: Batch) => b.status },
    { label: 'Attempts', numeric: true, cell: (b: Batch) => count(b.attempt) },
    { label: 'Answer', cell: (b: Batch) => (b.http_status === null ? '–' : String(b.http_status)) },
    { label: 'Error', cell: (b: Batch) => <span class="url">{b.error ?? '–'}</span> },
  ];
  sendPage(
    res,
    200,
    <Layout title={`Webhook ${hook.url}`} csrf={p.session.csrf} active="webhooks">
      <h1 class="url">{hook.url}</h1>
      <p class="muted">
        {state(hook)} · {hook.description || 'no description'}
        {allowed(p, 'settings:manage') ? (
          <>
            {' · '}
            <TestButton id={hook.id} url={hook.url} csrf={p.session.csrf} />
          </>
        ) : null}
      </p>
      <Section title="Failures" id="failures">
        <Table name="failures" caption="Recent batches that failed or are being retried" rows={failures} empty="No failures among the recent batches." columns={columns} />
      </Section>
      <Section title="Recent batches" id="batches">
        <Table name="batches" caption="The newest 100 batches" rows={batches.rows} empty="Nothing sent yet." columns={columns} />
      </Section>
    </Layout>,
  );
}

/** Sends a `webhook.test` event now and shows what the endpoint answered. */
export async function testWebhookAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const id = webhookId(req);
  const hook = await findWebhook(p.ctx, id);
  const outcome = await testWebhook(p.ctx, p.deps.config, id);
  await auditAction(p, { action: 'webhook.tested', objectKind: 'webhook', objectId: id, summary: outcome.status === null ? 'webhook.test sent: no answer' : `webhook.test sent: HTTP ${outcome.status}` });
  const ok = outcome.status !== null && outcome.status >= 200 && outcome.status < 300;
  sendPage(
    res,
    200,
    <Layout title="Test sent" csrf={p.session.csrf} active="webhooks">
      <h1>Test event sent</h1>
      <p class={ok ? 'notice' : 'error'} role="status" data-test-result={ok ? 'ok' : 'failed'}>
        <span class="url">{hook.url}</span>{' '}
        {outcome.status !== null ? `answered ${outcome.status}` : 'did not answer'}
        {outcome.error ? `: ${outcome.error}` : '.'}
      </p>
      <p>
        <a href={`/app/webhooks/${id}`}>Back to the webhook</a>
      </p>
    </Layout>,
  );
}
