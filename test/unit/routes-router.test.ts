import { credentialStripper } from '../../src/routes/router';
import type { RouteConfig } from '../../src/routes/types';

/** What the router stores (route_state.last_error, route_blocks.last_error) and logs: never a route's credentials. */
const route = (name: string, url: string): RouteConfig => ({ name, url, weight: 1, poolSize: 1, streams: ['marketing', 'system'] });

describe('credentialStripper', () => {
  const strip = credentialStripper([route('ses', 'smtps://AKIAEXAMPLE:p%40ss%2Fw0rd@email-smtp.eu-west-1.amazonaws.com:465'), route('own', 'smtp://relay.test:25')]);

  test('removes a URL’s user information', () => {
    expect(strip('connect to smtps://AKIAEXAMPLE:p%40ss%2Fw0rd@email-smtp.eu-west-1.amazonaws.com:465 failed')).toBe(
      'connect to smtps://email-smtp.eu-west-1.amazonaws.com:465 failed',
    );
    expect(strip('smtp://someone:else@host.test')).toBe('smtp://host.test');
  });

  test('removes the routes’ user names and passwords anywhere, as written and decoded', () => {
    const out = strip('535 Authentication Credentials Invalid for AKIAEXAMPLE (password p@ss/w0rd, p%40ss%2Fw0rd)');
    expect(out).not.toMatch(/AKIAEXAMPLE|p@ss\/w0rd|p%40ss%2Fw0rd/);
    expect(out).toBe('535 Authentication Credentials Invalid for *** (password ***, ***)');
  });

  test('leaves other text alone and bounds its length', () => {
    expect(strip('454 Throttling failure: Maximum sending rate exceeded.')).toBe('454 Throttling failure: Maximum sending rate exceeded.');
    expect(strip('x'.repeat(5000))).toHaveLength(1000);
  });
});
