import type { Knex } from 'knex';
import { hashSecret, newKeyPair, secretMatches } from './keys';

export interface NewAccount {
  id: number;
  public_key: string;
  secret_key: string;
}

/** Creates an account; the secret is returned here once and only its digest is stored. */
export async function createAccount(db: Knex, input: { name: string; email: string }): Promise<NewAccount> {
  const { publicKey, secretKey } = newKeyPair();
  const [row] = await db('accounts')
    .insert({ name: input.name, email: input.email, public_key: publicKey, secret_key_hash: hashSecret(secretKey) })
    .returning(['id']);
  return { id: row.id as number, public_key: publicKey, secret_key: secretKey };
}

/** Replaces an account's key pair; the old pair stops working at once. */
export async function rotateKeys(db: Knex, id: number): Promise<NewAccount | undefined> {
  const { publicKey, secretKey } = newKeyPair();
  const [row] = await db('accounts')
    .where({ id })
    .update({ public_key: publicKey, secret_key_hash: hashSecret(secretKey), updated_at: db.fn.now() })
    .returning(['id']);
  return row ? { id: row.id as number, public_key: publicKey, secret_key: secretKey } : undefined;
}

/** The account owning this key pair, or undefined. */
export async function authenticate(db: Knex, publicKey: string, secretKey: string): Promise<number | undefined> {
  const row = await db('accounts').where({ public_key: publicKey }).first('id', 'secret_key_hash');
  // Hash even when the public key is unknown, so timing does not reveal which half was wrong.
  if (!row) {
    secretMatches(secretKey, hashSecret(''));
    return undefined;
  }
  return secretMatches(secretKey, row.secret_key_hash as Buffer) ? (row.id as number) : undefined;
}

export async function countAccounts(db: Knex): Promise<number> {
  const row = await db('accounts').count<{ count: number }[]>({ count: '*' }).first();
  return Number(row?.count ?? 0);
}
