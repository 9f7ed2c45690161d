import { restoreConstraintName } from '../../src/db/citus';

/** What Citus relays of a shard's integrity error, and what Herald's error handling gets back (src/db/citus.ts). */
describe('restoreConstraintName', () => {
  const restored = (err: Record<string, unknown>) => {
    restoreConstraintName(err);
    return { code: err.code, constraint: err.constraint };
  };

  it('takes the table’s constraint from a shard’s error message, without the shard number', () => {
    expect(restored({ code: '23505', message: 'duplicate key value violates unique constraint "contacts_type_email_unique_102041"' })).toEqual({
      code: '23505',
      constraint: 'contacts_type_email_unique',
    });
    expect(
      restored({ code: '23503', message: 'insert or update on table "contacts_102008" violates foreign key constraint "contacts_contact_type_id_foreign_102008"' }),
    ).toEqual({ code: '23503', constraint: 'contacts_contact_type_id_foreign' });
  });

  it('takes the shard number off a Citus-local table’s constraint field (dkim_keys: the field is there, with its shard’s name)', () => {
    const message = 'new row for relation "dkim_keys_102130" violates check constraint "dkim_keys_state_check_102130"';
    expect(restored({ code: '23514', constraint: 'dkim_keys_state_check_102130', message })).toEqual({ code: '23514', constraint: 'dkim_keys_state_check' });
    // One PostgreSQL's own names are left alone.
    expect(restored({ code: '23514', constraint: 'dkim_keys_state_check', message: 'new row for relation "dkim_keys" violates check constraint "dkim_keys_state_check"' })).toEqual({
      code: '23514',
      constraint: 'dkim_keys_state_check',
    });
  });

  it('gives a COPY’s error its code back (Citus relays it as XX000)', () => {
    expect(restored({ code: 'XX000', message: 'duplicate key value violates unique constraint "contacts_type_email_unique_102039"' })).toEqual({
      code: '23505',
      constraint: 'contacts_type_email_unique',
    });
    expect(restored({ code: 'XX000', message: 'new row for relation "x_102" violates check constraint "x_state_check_102"' })).toEqual({
      code: '23514',
      constraint: 'x_state_check',
    });
  });

  it('leaves alone an error that has its fields (always on one PostgreSQL) and errors that are no violation', () => {
    expect(restored({ code: '23505', constraint: 'senders_utr_unique', message: 'duplicate key value violates unique constraint "senders_utr_unique"' })).toEqual({
      code: '23505',
      constraint: 'senders_utr_unique',
    });
    expect(restored({ code: 'XX000', message: 'could not connect to server' })).toEqual({ code: 'XX000', constraint: undefined });
    expect(restored({ code: '57014', message: 'canceling statement due to statement timeout' })).toEqual({ code: '57014', constraint: undefined });
  });
});
