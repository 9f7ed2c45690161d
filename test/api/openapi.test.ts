import request from 'supertest';
import { apiRoutes } from '../../src/resources';
import { setupApp } from '../helpers/app';

const { app } = setupApp();

describe('GET /openapi.json', () => {
  it('documents every operation of the route table, with its failures', async () => {
    const res = await request(app).get('/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers[0].url).toBe('http://herald.test');
    for (const def of apiRoutes) {
      for (const method of [def.method, ...(def.alsoMethods ?? [])]) {
        const op = doc.paths[def.path]?.[method];
        expect({ path: def.path, method, documented: Boolean(op) }).toEqual({ path: def.path, method, documented: true });
        expect(op.responses['200']).toBeDefined();
        if (def.failures.includes('AUTH')) expect(op.responses['401']).toBeDefined();
        if (def.failures.includes('VAL')) expect(op.responses['422']).toBeDefined();
        if (def.failures.some((f) => f === 'NF1' || f === 'NF2')) expect(op.responses['404']).toBeDefined();
        // The one permission the route checks, named where a reader of /docs looks (README "Your team").
        expect({ path: def.path, method, ends: String(op.description).endsWith(`Permission: \`${def.permission}\`.`) }).toEqual({ path: def.path, method, ends: true });
      }
    }
    expect(doc.components.securitySchemes.PublicKey).toEqual({ type: 'apiKey', in: 'header', name: 'PublicKey' });
  });

  it('describes form fields from the validating schemas', async () => {
    const doc = (await request(app).get('/openapi.json')).body;
    const body = doc.paths['/notification-recipient/save'].post.requestBody.content['multipart/form-data'].schema;
    expect(Object.keys(body.properties)).toEqual(expect.arrayContaining(['email_address', 'email_owner']));
    expect(body.required).toEqual(expect.arrayContaining(['email_address', 'email_owner']));
  });
});

describe('GET /docs', () => {
  it('serves an offline Swagger UI page and its assets', async () => {
    const page = await request(app).get('/docs');
    expect(page.status).toBe(200);
    expect(page.text).toContain('/docs/assets/swagger-ui-bundle.js');
    const bundle = await request(app).get('/docs/assets/swagger-ui-bundle.js');
    expect(bundle.status).toBe(200);
    expect(bundle.headers['content-type']).toMatch(/javascript/);
    expect((await request(app).get('/docs/init.js')).text).toContain('/openapi.json');
  });

  it('the page and each file it loads carry a strict CSP (no framing, no inline script, no other origin but PUBLIC_URL) and nosniff', async () => {
    for (const path of ['/docs', '/docs/', '/docs/init.js', '/docs/assets/swagger-ui.css', '/docs/assets/swagger-ui-bundle.js']) {
      const res = await request(app).get(path);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      const csp = String(res.headers['content-security-policy']).split('; ');
      expect({ path, csp }).toEqual({
        path,
        csp: [
          "default-src 'none'",
          "script-src 'self'",
          "style-src 'self'",
          "img-src 'self' data:",
          // "Try it out" sends requests to the server /openapi.json names: PUBLIC_URL.
          "connect-src 'self' http://herald.test",
          "form-action 'self'",
          "frame-ancestors 'none'",
          "base-uri 'none'",
        ],
      });
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    }
    // The page itself has no inline script: every <script> names a file.
    const page = (await request(app).get('/docs')).text;
    expect(page.match(/<script[^>]*>/g)).toEqual(['<script src="/docs/assets/swagger-ui-bundle.js">', '<script src="/docs/init.js">']);
    expect(page).not.toMatch(/<script[^>]*>[^<]/);
  });

  it('the init script keeps no authorisation (no localStorage) and sends nothing to a validator', async () => {
    const init = (await request(app).get('/docs/init.js')).text;
    expect(init).not.toMatch(/persistAuthorization/);
    expect(init).toMatch(/validatorUrl: null/);
    expect(init).not.toMatch(/https?:/);
  });

  it('serves only the files the page uses: the package’s index.html, oauth2-redirect.html and the rest are the API’s 404', async () => {
    for (const file of ['index.html', 'oauth2-redirect.html', 'oauth2-redirect.js', 'swagger-initializer.js', 'index.js', 'index.css', 'package.json', 'swagger-ui.js', 'swagger-ui-bundle.js.map', 'favicon-32x32.png', '', '../package.json']) {
      const res = await request(app).get(`/docs/assets/${file}`);
      expect({ file, status: res.status, body: res.body }).toEqual({ file, status: 404, body: { status: 'failed', errors: 'Route not found' } });
    }
    for (const path of ['/docs/index.html', '/docs/oauth2-redirect.html', '/docs/swagger-initializer.js']) {
      expect({ path, status: (await request(app).get(path)).status }).toEqual({ path, status: 404 });
    }
  });
});

describe('the endpoints outside the route table', () => {
  /** Every route the app itself mounts (express's own table), as OpenAPI writes its path. */
  function mountedRoutes(): Array<{ path: string; method: string }> {
    const stack = (app as unknown as { router: { stack: Array<{ route?: { path: string | string[]; methods: Record<string, boolean> } }> } }).router.stack;
    return stack.flatMap((layer) =>
      layer.route
        ? [layer.route.path]
            .flat()
            .flatMap((path) => Object.keys(layer.route!.methods).map((method) => ({ path: path.replace(/:(\w+)/g, '{$1}'), method })))
        : [],
    );
  }

  it('are documented, every one the app mounts (recipient pages, tracking, unsubscribe, ESP webhooks, health), without keys', async () => {
    const doc = (await request(app).get('/openapi.json')).body;
    const mounted = mountedRoutes().filter((r) => !r.path.startsWith('/docs') && r.path !== '/openapi.json');
    expect(mounted.map((r) => `${r.method} ${r.path}`)).toEqual(
      expect.arrayContaining(['get /t/open/{file}', 'get /t/click/{token}', 'get /unsubscribe/{token}', 'post /unsubscribe/{token}', 'post /inbound/ses', 'post /inbound/mailgun']),
    );
    for (const { path, method } of mounted) {
      const op = doc.paths[path]?.[method];
      expect({ path, method, documented: Boolean(op) }).toEqual({ path, method, documented: true });
      expect({ path, security: op.security }).toEqual({ path, security: [] });
    }
    expect(Object.keys(doc.paths['/inbound/mailgun'].post.responses).sort()).toEqual(['200', '400', '401']);
    expect(doc.paths['/t/open/{file}'].get.responses['200'].content['image/gif']).toBeDefined();
    expect(doc.paths['/t/click/{token}'].get.parameters).toEqual([expect.objectContaining({ name: 'token', in: 'path', required: true })]);
  });
});
