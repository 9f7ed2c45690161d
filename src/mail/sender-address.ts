import type { Knex } from 'knex';

/** A sender's postal address as `senders` keeps it: places by id. */
export interface AddressFields {
  company_address: string;
  company_address2: string | null;
  zip_code: string | null;
  country_id: number;
  state_id: number | null;
  city_id: number | null;
}

/** The address on one line from its parts (names of places, not ids); empty parts are left out. */
export function formatSenderAddress(parts: {
  company_address: string;
  company_address2?: string | null;
  city?: string | null;
  state?: string | null;
  zip_code?: string | null;
  country?: string | null;
}): string {
  const stateZip = [parts.state, parts.zip_code].filter(Boolean).join(' ');
  const locality = [parts.city, stateZip].filter(Boolean).join(', ');
  return [parts.company_address, parts.company_address2, locality, parts.country].filter(Boolean).join(', ');
}

/**
 * `((sender_address))`: the sender's postal address on one line, with the names of its
 * places looked up, e.g. `1 Market St, Suite 200, San Francisco, California 94105, United States`.
 * Here, below resources and delivery, because a single send copies it when it is saved and an
 * automation email reads it when its design is compiled (src/sources).
 */
export async function senderAddress(db: Knex, sender: AddressFields): Promise<string> {
  const names = (await db
    .select({
      country: db('countries').select('name').where('id', sender.country_id),
      state: sender.state_id === null ? db.raw('NULL') : db('states').select('name').where('id', sender.state_id),
      city: sender.city_id === null ? db.raw('NULL') : db('cities').select('name').where('id', sender.city_id),
    })
    .first()) as { country: string | null; state: string | null; city: string | null };
  return formatSenderAddress({ ...sender, ...names });
}
