import path from 'node:path';
import express, { type Express } from 'express';
import { pageHeaders } from './page-headers';

/**
 * GET /docs: Swagger UI from the swagger-ui-dist package, served locally (works offline),
 * pointed at /openapi.json.
 *
 * /docs shares its origin with the dashboard, so a script running here could read /app pages
 * with the session cookie. Hence: only the two files the page loads are served (not the
 * package's folder, whose stock index.html fetches petstore.swagger.io and whose
 * oauth2-redirect.html runs script from the query string); the page runs under the dashboard's
 * strict CSP (scripts and styles from these files only, no framing); the SecretKey a reader
 * types into "Authorize" stays in the page's memory (no persistAuthorization, which would keep
 * it in localStorage); and no document is sent to validator.swagger.io.
 */
const ASSETS = ['swagger-ui.css', 'swagger-ui-bundle.js'];

/**
 * The page's own script, as a file (the CSP allows no inline script). `queryConfigEnabled` is
 * off by default, so `?url=` cannot point the page at another document.
 */
const INIT = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true, validatorUrl: null });\n`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Herald API</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>`;

/**
 * Mounts /docs. `publicUrl` is the API's address in /openapi.json ("Try it out" sends requests
 * there), so it is the one origin besides this one the page may connect to.
 */
export function mountDocs(app: Express, publicUrl: string): void {
  const dist = path.dirname(require.resolve('swagger-ui-dist/package.json'));
  // swagger-ui.css draws its icons as data: images.
  const headers = pageHeaders({ 'img-src': 'data:', 'connect-src': new URL(publicUrl).origin });
  const docs = express.Router({ strict: false });
  docs.use((_req, res, next) => {
    res.set(headers);
    next();
  });
  docs.get('/', (_req, res) => {
    res.type('html').send(PAGE);
  });
  docs.get('/init.js', (_req, res) => {
    res.type('application/javascript').send(INIT);
  });
  for (const file of ASSETS) {
    docs.get(`/assets/${file}`, (_req, res) => {
      res.sendFile(path.join(dist, file), { maxAge: '1d', headers: { 'Cache-Control': 'public, max-age=86400' } });
    });
  }
  app.use('/docs', docs);
}
