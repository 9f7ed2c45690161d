/**
 * Automation entry at scale: a custom automation going live on 1,000,000 contacts. Times the
 * engine's entry scan (one set-based INSERT … SELECT … ON CONFLICT DO NOTHING), which is what
 * stands between "set live" and every contact having its first email scheduled.
 *
 *   npx tsx bench/automation.ts [--contacts 1000000]
 *
 * Target (issue 5): all entered in under 10 s.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createAccount } from '../src/accounts/accounts.service';
import { loadConfig } from '../src/config';
import { createDb } from '../src/db/knex';
import { scanEntries } from '../src/delivery/automation-engine';
import { outboxMailer } from '../src/delivery/mailer';
import { createLogger } from '../src/logger';
import { createAutomation, setLive } from '../src/resources/automations/automations.service';
import { createSchedule } from '../src/resources/automations/schedules.service';
import { prepareDatabase } from '../src/server';
import { dropDatabase, recreateDatabase } from './lib/pg';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};

async function main(): Promise<void> {
  const contacts = arg('contacts', 1_000_000);
  const name = 'herald_bench_automation';
  const url = await recreateDatabase(name);
  const db = createDb({ url, poolMax: 4, queryTimeoutMs: 0 });
  const logger = createLogger('warn');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-auto-'));
  const config = loadConfig({ DATABASE_URL: url, DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
  try {
    await prepareDatabase(db, logger);
    const account = await createAccount(db, { name: 'Bench', email: 'bench@example.com' });
    const ctx = { userId: account.id, db };
    const [type] = await db('contact_types').insert({ user_id: account.id, name: 'Everyone' }).returning('id');
    let t = Date.now();
    await db.raw(
      `INSERT INTO contacts (user_id, contact_type_id, email, first_name, last_name)
       SELECT ?, ?, 'c' || g || '@example.com', 'First' || g, 'Last' || g FROM generate_series(1, ?) g`,
      [account.id, type.id, contacts],
    );
    await db.raw('ANALYZE contacts');
    console.log(`loaded ${contacts.toLocaleString()} contacts in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    const gb = await db('countries').where({ iso_code: 'GB' }).first('id');
    const [group] = await db('unsubscribe_groups')
      .insert({ user_id: account.id, rand_id: '1234567890', group_name: 'News', description: 'News', is_display: 1 })
      .returning('id');
    const [sender] = await db('senders')
      .insert({
        user_id: account.id,
        from_name: 'Bench',
        from_email: 'bench@acme.test',
        reply_to_email: 'bench@acme.test',
        country_id: gb.id,
        company_address: '1 High Street',
        nickname: 'bench',
        is_verified: 1,
        utr: 'a1b2c3d4e5f60718',
      })
      .returning('id');
    const utr = await createAutomation(ctx, {
      type: 'custom',
      automation_for: `contacts_${type.id}`,
      automation_name: 'Onboarding',
      unsubscribe_group_id: group.id,
    });
    await createSchedule(ctx, {
      utr,
      sender_id: sender.id,
      subject: 'Hello ((first_name))',
      waiting_period: 1,
      waiting_type: 'days',
      template_id: 3,
      preview_img: 'template-welcome.png',
    });
    const deps = { config, db, logger, mailer: outboxMailer(path.join(dataDir, 'outbox')) };
    await setLive(deps, ctx, utr);
    t = Date.now();
    const entered = await scanEntries(deps);
    const seconds = (Date.now() - t) / 1000;
    const rows = await db('automation_contacts').where({ state: 'active' }).count<{ n: number }[]>({ n: '*' }).first();
    const result = {
      date: new Date().toISOString(),
      contacts,
      entered,
      active_rows: Number(rows?.n),
      entry_seconds: seconds,
      target_seconds: 10,
      machine: `${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB`,
    };
    console.log(`entered ${entered.toLocaleString()} contacts in ${seconds.toFixed(2)} s (target < 10 s)`);
    fs.mkdirSync(path.join(__dirname, 'out'), { recursive: true });
    fs.writeFileSync(path.join(__dirname, 'out', 'automation.json'), JSON.stringify(result, null, 2));
    if (result.active_rows !== contacts) throw new Error(`expected ${contacts} entered, found ${result.active_rows}`);
  } finally {
    await db.destroy();
    await dropDatabase(name);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
