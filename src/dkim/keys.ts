import { generateKeyPair } from 'node:crypto';
import { domainToASCII } from 'node:url';
import { promisify } from 'node:util';
import type { Knex } from 'knex';
import type { Config } from '../config';
import { KeyState, keyState, type DnsRecordStatus } from '../states';
import { masterKey, seal, unseal } from './master-key';

/**
 * DKIM keys per account (or the installation, `userId` null) and sending domain: making them,
 * reading the one that signs, rotating. See migrations/202611300100_dkim-keys.ts for the table;
 * a key's state and its DNS record's status are machines of src/states.ts.
 */

/** A rotation retires the pending key it replaces; a promotion retires the active key. */
const REPLACE_PENDING = keyState.move(KeyState.Pending, KeyState.Retired);
const RETIRE_ACTIVE = keyState.move(KeyState.Active, KeyState.Retired);
const PROMOTE = keyState.move(KeyState.Pending, KeyState.Active);

export interface KeyRow {
  id: number;
  user_id: number | null;
  domain: string;
  selector: string;
  algorithm: string;
  public_key: string;
  private_key: Buffer;
  state: KeyState;
  dns_status: DnsRecordStatus;
  checks: Record<string, DnsRecordStatus>;
  checked_at: string | null;
  verified_at: string | null;
}

type Owner = number | null;

const generate = promisify(generateKeyPair);

const asciiNames = new Map<string, string>();

/**
 * `domainToASCII` (IDNA; '' when it is not a domain), remembered: a send signs with one domain
 * millions of times, and the conversion costs microseconds a message.
 */
export function asciiDomain(name: string): string {
  let ascii = asciiNames.get(name);
  if (ascii === undefined) {
    if (asciiNames.size >= 1000) asciiNames.clear();
    asciiNames.set(name, (ascii = domainToASCII(name)));
  }
  return ascii;
}

/** The domain as DNS writes it: lower case, IDNs in punycode. '' when it is not a domain. */
export function signingDomain(emailOrDomain: string): string {
  return asciiDomain(emailOrDomain.slice(emailOrDomain.lastIndexOf('@') + 1).trim().toLowerCase());
}

const ownedBy = (q: Knex.QueryBuilder, userId: Owner) => (userId === null ? q.whereNull('user_id') : q.where('user_id', userId));

/** The account's keys of a domain that are not retired: the active one first. */
export async function liveKeys(db: Knex, userId: Owner, domain: string): Promise<KeyRow[]> {
  const rows = (await ownedBy(db('dkim_keys'), userId)
    .where({ domain })
    .whereIn('state', [KeyState.Active, KeyState.Pending])
    .orderByRaw(`state = ${keyState.sql.Active} DESC`)
    .select('*')) as KeyRow[];
  return rows;
}

/** `herald<yyyymm><n>`: n counts this domain's keys of the month, so selectors never repeat. */
async function nextSelector(db: Knex, domain: string): Promise<string> {
  const month = new Date().toISOString().slice(0, 7).replace('-', '');
  const prefix = `herald${month}`;
  const row = (await db('dkim_keys').where({ domain }).andWhere('selector', 'like', `${prefix}%`).count({ n: '*' }).first()) as { n: string };
  return `${prefix}${Number(row.n) + 1}`;
}

/** A fresh RSA-2048 key pair: the public key as `openssl rsa -pubout` writes it (SPKI), base64 only. */
async function newKeyPair(config: Pick<Config, 'masterKey' | 'dataDir'>): Promise<{ publicKey: string; sealed: Buffer }> {
  const { publicKey, privateKey } = await generate('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { publicKey: publicKey.toString('base64'), sealed: seal(masterKey(config), Buffer.from(privateKey)) };
}

const isUniqueClash = (err: unknown) => (err as { code?: string })?.code === '23505';

/**
 * Inserts a key in `state`. A clash (a concurrent caller made the same selector, or the active
 * or pending key the partial unique indexes allow once) is retried with a new selector, or
 * answered with undefined when the slot is taken.
 */
async function insertKey(db: Knex, config: Pick<Config, 'masterKey' | 'dataDir'>, userId: Owner, domain: string, state: KeyState): Promise<KeyRow | undefined> {
  const pair = await newKeyPair(config);
  for (let attempt = 1; ; attempt += 1) {
    const selector = await nextSelector(db, domain);
    try {
      const [row] = (await db('dkim_keys')
        .insert({ user_id: userId, domain, selector, algorithm: 'rsa-sha256', public_key: pair.publicKey, private_key: pair.sealed, state })
        .returning('*')) as KeyRow[];
      return row;
    } catch (err) {
      if (!isUniqueClash(err)) throw err;
      if ((err as { constraint?: string }).constraint !== 'dkim_keys_domain_selector_unique') return undefined;
      if (attempt >= 5) throw err;
    }
  }
}

/** The active key of the account and domain, made now when there is none. */
export async function ensureKey(db: Knex, config: Pick<Config, 'masterKey' | 'dataDir'>, userId: Owner, domain: string): Promise<KeyRow> {
  for (let attempt = 1; attempt <= 3; attempt += 1) {
    const [first] = await liveKeys(db, userId, domain);
    if (first?.state === KeyState.Active) return first;
    const made = await insertKey(db, config, userId, domain, KeyState.Active);
    if (made) return made;
  }
  throw new Error(`no DKIM key could be made for ${domain}`);
}

/**
 * A new pending key (its selector to publish). The active key keeps signing until a check finds
 * the new record published (promotePending). A rotation while one is pending replaces it (the
 * pending key, which never signed anything, is retired).
 */
export async function rotateKey(db: Knex, config: Pick<Config, 'masterKey' | 'dataDir'>, userId: Owner, domain: string): Promise<KeyRow> {
  await ensureKey(db, config, userId, domain);
  // Retired, not deleted: its selector stays taken, so no later key reuses a name resolvers may have cached.
  await ownedBy(db('dkim_keys'), userId).where({ domain }).whereIn('state', REPLACE_PENDING.from).update({ state: REPLACE_PENDING.to });
  const made = await insertKey(db, config, userId, domain, KeyState.Pending);
  if (!made) throw new Error(`a rotation of ${domain} is already under way`);
  return made;
}

/** The pending key becomes the active one, the active one retired; the domain's check results move along. */
export async function promotePending(db: Knex, pending: KeyRow): Promise<void> {
  await db.transaction(async (trx) => {
    // Still pending? Two checks at once promote it once: the second finds it active already.
    const still = await trx('dkim_keys').where({ id: pending.id }).whereIn('state', PROMOTE.from).forUpdate().first('id');
    if (!still) return;
    const active = (await ownedBy(trx('dkim_keys'), pending.user_id)
      .where({ domain: pending.domain, state: KeyState.Active })
      .forUpdate()
      .first('id', 'checks')) as Pick<KeyRow, 'id' | 'checks'> | undefined;
    if (active) await trx('dkim_keys').where({ id: active.id }).update({ state: RETIRE_ACTIVE.to });
    await trx('dkim_keys')
      .where({ id: pending.id })
      .whereIn('state', PROMOTE.from)
      .update({ state: PROMOTE.to, checks: JSON.stringify(active?.checks ?? {}) });
  });
}

/**
 * The private key, decrypted. Every process of an installation must have the same master key:
 * a key sealed under another one cannot be read (and mail of its domain cannot be signed, so it
 * is retried until that is fixed, or until a rotation's new key takes over).
 */
export function privateKeyPem(config: Pick<Config, 'masterKey' | 'dataDir'>, row: Pick<KeyRow, 'private_key'> & Partial<Pick<KeyRow, 'selector' | 'domain'>>): string {
  try {
    return unseal(masterKey(config), row.private_key).toString('utf8');
  } catch {
    throw new Error(
      `DKIM key ${row.selector ?? ''}${row.domain ? ` of ${row.domain}` : ''} cannot be decrypted with this master key ` +
        '(HERALD_MASTER_KEY, or DATA_DIR/master.key): every Herald process must use the one it was made with',
    );
  }
}
