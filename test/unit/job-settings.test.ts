import { loadConfig } from '../../src/config';
import { notifications } from '../../src/events/notification-mail';
import { webhookBatches } from '../../src/webhooks/dispatch';

/** Each kind of job has settings of its own (src/jobs/runner.ts JobSettings), none borrowed from recipient rows. */
describe('job settings', () => {
  it('notification mail: NOTIFICATION_RETRY_BASE_MS, NOTIFICATION_MAX_ATTEMPTS, NOTIFICATION_CONCURRENCY, a lease past its SMTP conversations', () => {
    expect(notifications.settings(loadConfig({}))).toEqual({
      maxAttempts: 8,
      retryBaseMs: 60_000,
      retryMaxMs: 6 * 3600_000,
      leaseMs: 90_000,
      concurrency: 5,
    });
    const set = loadConfig({ NOTIFICATION_RETRY_BASE_MS: '5000', NOTIFICATION_MAX_ATTEMPTS: '3', NOTIFICATION_CONCURRENCY: '2', SMTP_TIMEOUT_MS: '10000' });
    expect(notifications.settings(set)).toMatchObject({ maxAttempts: 3, retryBaseMs: 5000, concurrency: 2, leaseMs: 60_000 });
    // The recipient rows' settings are theirs alone.
    const rows = loadConfig({ RETRY_BASE_MS: '1', MAX_ATTEMPTS: '99', SEND_LEASE_MS: '1000' });
    expect(notifications.settings(rows)).toMatchObject({ maxAttempts: 8, retryBaseMs: 60_000, leaseMs: 90_000 });
    expect(() => loadConfig({ NOTIFICATION_MAX_ATTEMPTS: '0' })).toThrow(/NOTIFICATION_MAX_ATTEMPTS="0"/);
  });

  it('webhook batches: the WEBHOOK_ settings, a lease of 3 × WEBHOOK_TIMEOUT_MS + 5 s', () => {
    expect(webhookBatches.settings(loadConfig({ WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_RETRY_BASE_MS: '200', WEBHOOK_MAX_ATTEMPTS: '6', WEBHOOK_CONCURRENCY: '3' }))).toEqual({
      maxAttempts: 6,
      retryBaseMs: 200,
      retryMaxMs: 8 * 3600_000,
      leaseMs: 11_000,
      concurrency: 3,
    });
  });
});
