import request from 'supertest';
import { MAX_NESTING } from '../../src/http/form';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';

/**
 * Input nested past MAX_NESTING (src/http/form.ts) is refused with the envelope — 400, the same
 * sentence for a JSON body, a urlencoded form and a multipart form — before any handler runs,
 * so nothing is stored. 5,000 levels used to exhaust the stack: a 500.
 */
const { app, db } = setupApp();
let a: TestAccount;

beforeAll(async () => {
  a = await makeAccount(db, 'Deep');
});

const DEEP = 5_000;
const TOO_DEEP = { status: 'failed', errors: `The request nests objects or arrays more than ${MAX_NESTING} levels deep.` };

/** `{"k":{"k":…"x"}}` or `[[…"x"]]`, `levels` containers deep, as JSON text (built without recursion). */
const nestedJson = (levels: number, kind: 'object' | 'array') =>
  kind === 'object' ? `${'{"k":'.repeat(levels)}"x"${'}'.repeat(levels)}` : `${'['.repeat(levels)}"x"${']'.repeat(levels)}`;

/** Rows of the account in the tables the two routes write. */
async function rows() {
  const [types, groups] = await Promise.all([
    db('contact_types').where({ user_id: a.id }).count('* as n'),
    db('unsubscribe_groups').where({ user_id: a.id }).count('* as n'),
  ]);
  return { types: Number(types[0].n), groups: Number(groups[0].n) };
}

const ROUTES = [
  { path: '/contacts-type/add', field: 'name' },
  { path: '/unsubscribes-groups/save', field: 'group_name' },
];

describe.each(ROUTES)('$path', ({ path, field }) => {
  const post = () => request(app).post(path).set(a.headers);

  it.each(['object', 'array'] as const)('a JSON body with a value nested 5,000 levels (%s) answers 400 with the envelope and stores nothing', async (kind) => {
    const before = await rows();
    const res = await post()
      .type('json')
      .send(`{"${field}":${nestedJson(DEEP, kind)},"description":"d","is_display":1}`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: TOO_DEEP });
    expect(await rows()).toEqual(before);
  });

  it('a JSON body that is itself 5,000 levels deep answers 400 with the envelope', async () => {
    const before = await rows();
    for (const kind of ['object', 'array'] as const) {
      const res = await post().type('json').send(nestedJson(DEEP, kind));
      // A top-level array is no object of fields: it is read as no fields at all (then VAL).
      expect({ kind, status: res.status, failed: res.body.status }).toEqual({ kind, status: kind === 'object' ? 400 : 422, failed: 'failed' });
      if (kind === 'object') expect(res.body).toEqual(TOO_DEEP);
    }
    expect(await rows()).toEqual(before);
  });

  it('a urlencoded form with a key of 5,000 brackets answers 400 with the envelope', async () => {
    const before = await rows();
    const res = await post()
      .type('form')
      .send(`${field}${'[k]'.repeat(DEEP)}=x&description=d&is_display=1`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: TOO_DEEP });
    expect(await rows()).toEqual(before);
  });

  it('a multipart form with a key of 5,000 brackets answers 400 with the envelope', async () => {
    const before = await rows();
    const res = await post().field(`${field}${'[k]'.repeat(DEEP)}`, 'x').field('description', 'd').field('is_display', '1');
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: TOO_DEEP });
    expect(await rows()).toEqual(before);
  });

  it(`at the limit (${MAX_NESTING} levels) the body is read and validated as usual: a nested value is no name (422)`, async () => {
    const res = await post()
      .type('json')
      .send(`{"${field}":${nestedJson(MAX_NESTING - 1, 'object')}}`);
    expect(res.status).toBe(422);
    expect(res.body.errors[field]).toBeDefined();
    const past = await post()
      .type('json')
      .send(`{"${field}":${nestedJson(MAX_NESTING, 'object')}}`);
    expect({ status: past.status, body: past.body }).toEqual({ status: 400, body: TOO_DEEP });
  });
});

it('the routes still take ordinary input', async () => {
  const res = await api(app, a).form('/contacts-type/add', { name: 'Shallow' });
  expect(res.status).toBe(200);
});
