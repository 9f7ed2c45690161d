import { generateKeyPairSync } from 'node:crypto';
import os from 'node:os';
import { simpleParser } from 'mailparser';
import { ConfigError, loadConfig } from '../../src/config';
import { compileDesign, type DesignSource } from '../../src/render/render';
import { mailboxTarget } from '../../src/bounces/imap-follower';

/** The bounce mailbox and ESP webhook settings, and the metadata headers they put on outgoing mail. */
const spki = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
const TOPIC = 'arn:aws:sns:us-east-1:123456789012:ses-bounces';

describe('ESP and bounce mailbox settings', () => {
  it('are off by default', () => {
    expect(loadConfig({})).toMatchObject({
      bounceImapUrl: undefined,
      bounceImapDoneFolder: 'Herald/Processed',
      bounceImapPollMs: 60_000,
      espMetadataHeaders: [],
      sendgridWebhookPublicKey: undefined,
      mailgunWebhookSigningKey: undefined,
      postmarkWebhook: undefined,
      sesSnsTopicArns: [],
      sesSnsTestCertPem: undefined,
    });
  });

  it('add the metadata headers of the providers whose webhook is configured, unless ESP_METADATA_HEADERS says otherwise', () => {
    const all = {
      SENDGRID_WEBHOOK_PUBLIC_KEY: spki,
      MAILGUN_WEBHOOK_SIGNING_KEY: 'key-0123456789',
      POSTMARK_WEBHOOK_USER: 'pm',
      POSTMARK_WEBHOOK_PASSWORD: 'password-1',
      SES_SNS_TOPIC_ARNS: TOPIC,
    };
    expect(loadConfig(all).espMetadataHeaders).toEqual(['sendgrid', 'mailgun', 'postmark', 'ses']);
    expect(loadConfig({ MAILGUN_WEBHOOK_SIGNING_KEY: 'key-0123456789' }).espMetadataHeaders).toEqual(['mailgun']);
    expect(loadConfig({ ...all, ESP_METADATA_HEADERS: 'none' }).espMetadataHeaders).toEqual([]);
    expect(loadConfig({ ESP_METADATA_HEADERS: 'postmark, ses' }).espMetadataHeaders).toEqual(['postmark', 'ses']);
    expect(() => loadConfig({ ESP_METADATA_HEADERS: 'sparkpost' })).toThrow(/ESP_METADATA_HEADERS="sparkpost": "sparkpost" is not one of/);
  });

  it('refuse a SendGrid key that is not one, half of Postmark’s pair, a malformed topic ARN, a non-IMAP URL, an unreadable CA file', () => {
    expect(() => loadConfig({ SENDGRID_WEBHOOK_PUBLIC_KEY: 'not-a-key' })).toThrow(ConfigError);
    expect(() => loadConfig({ POSTMARK_WEBHOOK_USER: 'pm' })).toThrow(/set both or neither/);
    expect(() => loadConfig({ SES_SNS_TOPIC_ARNS: `${TOPIC},arn:nope` })).toThrow(/"arn:nope" is not an SNS topic ARN/);
    expect(() => loadConfig({ BOUNCE_IMAP_URL: 'https://mail.example.com/' })).toThrow(/BOUNCE_IMAP_URL/);
    expect(() => loadConfig({ BOUNCE_IMAP_CA_FILE: '/nonexistent/ca.pem' })).toThrow(/BOUNCE_IMAP_CA_FILE="\/nonexistent\/ca.pem": cannot read that file/);
    expect(() => loadConfig({ BOUNCE_IMAP_CA_FILE: os.tmpdir() })).toThrow(/BOUNCE_IMAP_CA_FILE/);
    expect(loadConfig({ SENDGRID_WEBHOOK_PUBLIC_KEY: spki }).sendgridWebhookPublicKey).toBe(spki);
  });

  it('honour the SNS test certificate only when NODE_ENV=test', () => {
    expect(loadConfig({ SES_SNS_TEST_CERT_PEM: 'PEM' }).sesSnsTestCertPem).toBeUndefined();
    expect(loadConfig({ SES_SNS_TEST_CERT_PEM: 'PEM', NODE_ENV: 'test' }).sesSnsTestCertPem).toBe('PEM');
  });

  it('read the mailbox, credentials and row key from BOUNCE_IMAP_URL (never the password in the key)', () => {
    expect(mailboxTarget('imaps://bounce%40example.com:p%3Ass@imap.example.com/Bounces%2FHerald')).toEqual({
      host: 'imap.example.com',
      port: 993,
      secure: true,
      user: 'bounce@example.com',
      pass: 'p:ss',
      mailbox: 'Bounces/Herald',
      key: 'imap.example.com:993/bounce@example.com/Bounces/Herald',
    });
    expect(mailboxTarget('imap://u:p@127.0.0.1:1143')).toMatchObject({ port: 1143, secure: false, mailbox: 'INBOX' });
  });
});

describe('metadata headers on outgoing mail', () => {
  const source = (providers: DesignSource['espMetadataHeaders']): DesignSource => ({
    subject: 'Hello',
    preheader: '',
    html: '<html><body><p>Hi</p></body></html>',
    fromName: 'Acme',
    fromEmail: 'news@acme.test',
    replyTo: '',
    senderAddress: 'Street 1',
    publicUrl: 'https://herald.test',
    customFields: new Map(),
    espMetadataHeaders: providers,
  });
  const token = 'ab'.repeat(28);

  it('name the recipient token in each chosen provider’s header', async () => {
    const raw = compileDesign(source(['sendgrid', 'mailgun', 'postmark', 'ses'])).render({ email: 'r@example.com', token, fields: {} }, `<${token}@acme.test>`).raw;
    const parsed = await simpleParser(raw);
    expect(JSON.parse(parsed.headers.get('x-smtpapi') as string)).toEqual({ unique_args: { herald: token } });
    expect(JSON.parse(parsed.headers.get('x-mailgun-variables') as string)).toEqual({ herald: token });
    expect(parsed.headers.get('x-pm-metadata-herald')).toBe(token);
    expect(parsed.headers.get('x-herald-recipient')).toBe(token);
    expect(raw).toMatch(/^List-Unsubscribe: <https:\/\/herald.test\/unsubscribe\/ab/m);
  });

  it('add nothing by default', () => {
    const raw = compileDesign(source(undefined)).render({ email: 'r@example.com', token, fields: {} }, `<${token}@acme.test>`).raw;
    expect(raw).not.toMatch(/X-SMTPAPI|X-Mailgun|X-PM-Metadata|X-Herald-Recipient/i);
    const mailgunOnly = compileDesign(source(['mailgun'])).render({ email: 'r@example.com', token, fields: {} }, `<${token}@acme.test>`).raw;
    expect(mailgunOnly).toMatch(/^X-Mailgun-Variables: /m);
    expect(mailgunOnly).not.toMatch(/X-SMTPAPI|X-PM-Metadata|X-Herald-Recipient/i);
  });
});
