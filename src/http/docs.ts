import path from 'node:path';
import express, { type Express } from 'express';

/**
 * GET /docs: Swagger UI from the swagger-ui-dist package, served locally (works offline),
 * pointed at /openapi.json.
 */
export function mountDocs(app: Express): void {
  const dist = path.dirname(require.resolve('swagger-ui-dist/package.json'));
  const page = `<!doctype html>
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
  const init = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true, persistAuthorization: true });`;
  app.get(['/docs', '/docs/'], (_req, res) => {
    res.type('html').send(page);
  });
  app.get('/docs/init.js', (_req, res) => {
    res.type('application/javascript').send(init);
  });
  app.use('/docs/assets', express.static(dist, { index: false, maxAge: '1d', fallthrough: true }));
}
