import { createAccount } from '../../src/accounts/accounts.service';
import { accountRoutes, PinningError, setAccountRoutes } from '../../src/routes/pinning';
import type { RouteConfig } from '../../src/routes/types';
import { setupApp } from '../helpers/app';
import { runHerald } from '../helpers/cli';

/**
 * Pinning an account to delivery routes (src/routes/pinning.ts) and its command,
 * `herald account routes --id <n> --routes a,b | --all`, against the test database.
 */

const { db } = setupApp();

const PASSWORD = 'Pw-s3cret-63';
const ROUTES = [
  { name: 'ses', url: `smtp://AKIA:${PASSWORD}@email-smtp.eu-west-1.amazonaws.com:587`, streams: ['marketing'] },
  { name: 'own', url: `smtp://herald:${PASSWORD}@relay.example.net:25` },
  { name: 'notices', url: `smtp://herald:${PASSWORD}@notices.example.net:25`, streams: ['system'] },
];

/** `herald <args>` in-process with SMTP_ROUTES set; what it printed and its exit code. */
const herald = (...args: string[]) => runHerald(args, { SMTP_ROUTES: JSON.stringify(ROUTES) });

const newAccount = async (name: string) => (await createAccount(db, { name, email: `${name.toLowerCase()}@pin.test` })).id;

describe('herald account routes', () => {
  it('pins an account to routes by name and unpins it with --all, printing what is stored', async () => {
    const id = await newAccount('Pinned');
    expect(await accountRoutes(db, id)).toBeNull();

    const pinned = await herald('account', 'routes', '--id', String(id), '--routes', 'own, SES,own');
    expect(pinned).toEqual({ out: `${JSON.stringify({ id, routes: ['own', 'ses'] })}\n`, err: '', exitCode: 0 });
    expect(await accountRoutes(db, id)).toEqual(['own', 'ses']);
    expect((await db('accounts').where({ id }).first('routes')).routes).toEqual(['own', 'ses']);
    expect(pinned.out).not.toContain(PASSWORD);

    const unpinned = await herald('account', 'routes', '--id', String(id), '--all');
    expect(unpinned).toEqual({ out: `${JSON.stringify({ id, routes: null })}\n`, err: '', exitCode: 0 });
    expect(await accountRoutes(db, id)).toBeNull();
  });

  it('refuses an unknown route name, listing the configured ones, and changes nothing', async () => {
    const id = await newAccount('Unknown');
    await herald('account', 'routes', '--id', String(id), '--routes', 'own');
    const { out, err, exitCode } = await herald('account', 'routes', '--id', String(id), '--routes', 'own,sendgrid,mailgun');
    expect({ out, err, exitCode }).toEqual({ out: '', err: 'Unknown routes "sendgrid", "mailgun": the configured routes are ses, own, notices\n', exitCode: 1 });
    expect(err).not.toContain(PASSWORD);
    expect(await accountRoutes(db, id)).toEqual(['own']);
  });

  it('refuses routes that leave a stream without a route: the account’s mail of that stream would wait for good', async () => {
    const id = await newAccount('OneStream');
    const systemOnly = await herald('account', 'routes', '--id', String(id), '--routes', 'notices');
    expect(systemOnly).toEqual({ out: '', err: 'None of notices carries campaign mail (the "marketing" stream): add one of ses, own\n', exitCode: 1 });
    const marketingOnly = await herald('account', 'routes', '--id', String(id), '--routes', 'ses');
    expect(marketingOnly).toEqual({ out: '', err: 'None of ses carries Herald\'s own mail for the account (the "system" stream): add one of own, notices\n', exitCode: 1 });
    expect(await accountRoutes(db, id)).toBeNull();
    // SES for campaigns, a relay of its own for the rest.
    expect((await herald('account', 'routes', '--id', String(id), '--routes', 'ses,notices')).out).toBe(`${JSON.stringify({ id, routes: ['ses', 'notices'] })}\n`);
  });

  it('refuses an unknown account', async () => {
    expect(await herald('account', 'routes', '--id', '999999999', '--routes', 'own')).toEqual({ out: '', err: 'No account with id 999999999\n', exitCode: 1 });
    expect(await herald('account', 'routes', '--id', '999999999', '--all')).toEqual({ out: '', err: 'No account with id 999999999\n', exitCode: 1 });
  });

  it('needs --id and one of --routes and --all', async () => {
    await expect(herald('account', 'routes', '--routes', 'own')).rejects.toThrow(/--id/);
    await expect(herald('account', 'routes', '--id', '1')).rejects.toThrow(/give --routes <names> or --all/);
    await expect(herald('account', 'routes', '--id', '1', '--routes', 'own', '--all')).rejects.toThrow(/cannot be used with/);
    await expect(herald('account', 'routes', '--id', 'x', '--all')).rejects.toThrow(/positive integer/);
  });
});

describe('setAccountRoutes', () => {
  const config = { routes: [{ name: 'a', url: 'smtp://a.test', weight: 1, poolSize: 1, streams: ['marketing', 'system'] }] as RouteConfig[] };

  it('refuses an empty list, and any pinning when no route is configured', async () => {
    const id = await newAccount('Empty');
    await expect(setAccountRoutes(db, config, id, [])).rejects.toThrow(new PinningError('Name at least one route (or use --all to let the account use every route)'));
    await expect(setAccountRoutes(db, { routes: [] }, id, ['a'])).rejects.toThrow(/No delivery routes are configured/);
    expect(await setAccountRoutes(db, { routes: [] }, id, null)).toBeNull();
    expect(await setAccountRoutes(db, config, id, ['A'])).toEqual(['a']);
  });
});
