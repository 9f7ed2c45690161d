import type { Client } from 'pg';
import type { Account } from './herald';

/**
 * The send benchmarks' data, inserted set-based as the administrator of the benchmark's
 * database: a verified sender, an unsubscribe group, a custom field `plan`, and lists of
 * contacts `${prefix}<i>@<domain>` whose first name, and so every rendered subject, is known
 * from the address (see expectedFirstName).
 */
export interface Fixture {
  userId: number;
  senderId: number;
  groupId: number;
  fieldId: number;
  account: Account;
}

export const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Frances', 'John', 'Radia', 'Tim', 'Søren', 'Zoë', 'José', 'Anaïs'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Hamilton', 'Thompson', 'Allen', 'McCarthy', 'Perlman', 'Berners-Lee', "O'Brien", 'Müller', 'Dupont', 'Kowalski'];
const DOMAINS = ['gmail.com', 'yahoo.com', 'outlook.com', 'example.com', 'acme-corp.io', 'web.de', 'orange.fr'];
const sqlArray = (xs: string[]) => `ARRAY[${xs.map((x) => `'${x.replace(/'/g, "''")}'`).join(',')}]`;

export const SENDER = { name: 'Herald Bench News', email: 'news@bench-news.test', replyTo: 'reply@bench-news.test' };

/** The first name of contact `${prefix}<i>@…`, as makeList wrote it. */
export function expectedFirstName(address: string): string | undefined {
  const m = /^[a-z]+-(\d+)@/.exec(address);
  return m ? FIRST[Number(m[1]) % FIRST.length] : undefined;
}

export async function makeFixture(c: Client, account: Account): Promise<Fixture> {
  const userId = account.id;
  const gb = await c.query<{ id: number }>(`SELECT id FROM countries WHERE iso_code = 'GB'`);
  const sender = await c.query<{ id: number }>(
    `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, zip_code, nickname, is_verified, utr)
     VALUES ($1, $2, $3, $4, $5, '1 High Street', 'SW1A 1AA', 'bench', 1, substr(md5(random()::text), 1, 16))
     RETURNING id`,
    [userId, SENDER.name, SENDER.email, SENDER.replyTo, gb.rows[0].id],
  );
  const group = await c.query<{ id: number }>(
    `INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display)
     VALUES ($1, lpad((floor(random() * 1e10))::bigint::text, 10, '0'), 'Newsletter', 'The monthly newsletter', 1) RETURNING id`,
    [userId],
  );
  const field = await c.query<{ id: number }>(`INSERT INTO custom_fields (user_id, field_name, field_type) VALUES ($1, 'plan', 'text') RETURNING id`, [
    userId,
  ]);
  return { userId, senderId: sender.rows[0].id, groupId: group.rows[0].id, fieldId: field.rows[0].id, account };
}

/** A contact type with `count` contacts `${prefix}<i>@<domain>` (i = 1..count), inserted set-based. */
export async function makeList(c: Client, f: Fixture, name: string, prefix: string, count: number, extra?: { prefix: string; count: number }): Promise<number> {
  const type = await c.query<{ id: number }>(`INSERT INTO contact_types (user_id, name) VALUES ($1, $2) RETURNING id`, [f.userId, name]);
  const typeId = type.rows[0].id;
  const insert = (p: string, n: number) =>
    c.query(
      `WITH cs AS (SELECT array_agg(id ORDER BY id) AS ids FROM countries WHERE iso_code IN ('US', 'GB', 'DE', 'FR', 'IN', 'CA', 'AU', 'ES'))
       INSERT INTO contacts (user_id, contact_type_id, first_name, last_name, email, country_id, city, address_line1, postal_code, custom_fields)
       SELECT $1, $2,
         (${sqlArray(FIRST)})[1 + i % ${FIRST.length}],
         (${sqlArray(LAST)})[1 + (i / ${FIRST.length}) % ${LAST.length}],
         $3 || i || '@' || (${sqlArray(DOMAINS)})[1 + i % ${DOMAINS.length}],
         cs.ids[1 + i % array_length(cs.ids, 1)],
         'Springfield', (1 + i % 2000) || ' Main Street', lpad((i % 100000)::text, 5, '0'),
         jsonb_build_object($4::text, (ARRAY['free', 'starter', 'pro', 'enterprise'])[1 + i % 4])
       FROM generate_series(1, $5::int) AS g(i), cs`,
      [f.userId, typeId, p, String(f.fieldId), n],
    );
  await insert(prefix, count);
  if (extra) await insert(extra.prefix, extra.count);
  await c.query(`UPDATE contact_types SET contacts_version = contacts_version + 1 WHERE id = $1`, [typeId]);
  return typeId;
}

/** Half the `prefix` contacts become global unsubscribers, half join the group (upper-cased: matching is case-insensitive). */
export async function suppress(c: Client, f: Fixture, prefix: string, count: number): Promise<void> {
  await c.query(
    `INSERT INTO global_unsubscribers (user_id, email_address)
     SELECT $1, email FROM contacts WHERE user_id = $1 AND email LIKE $2 || '%' AND substring(email from length($2) + 1 for 20) ~ '^[0-9]*[02468]@'`,
    [f.userId, prefix],
  );
  await c.query(
    `INSERT INTO unsubscribe_group_recipients (user_id, unsubscribe_groups_id, email_address)
     SELECT $1, $2, upper(email) FROM contacts WHERE user_id = $1 AND email LIKE $3 || '%' AND substring(email from length($3) + 1 for 20) ~ '^[0-9]*[13579]@'`,
    [f.userId, f.groupId, prefix],
  );
  const n = await c.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM global_unsubscribers WHERE user_id = $1)::int + (SELECT count(*) FROM unsubscribe_group_recipients WHERE user_id = $1)::int AS n`,
    [f.userId],
  );
  if (n.rows[0].n !== count) throw new Error(`expected ${count} suppressed addresses, have ${n.rows[0].n}`);
}
