import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';

/**
 * The interface's reference at /docs: Swagger UI (the maintained swagger-ui-dist build) over
 * /openapi.json, every asset served by the service itself, no inline script, so the page runs under
 * a CSP that allows only the service's own scripts. Open, like /openapi.json: it holds no data.
 */
const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  // Swagger UI sets style attributes on the elements it renders.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Data-import interface</title>
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <link rel="stylesheet" href="/docs/swagger-ui.css">
  <link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>
`;

const INIT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true, tryItOutEnabled: false });
});
`;

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

export function registerDocs(app: FastifyInstance): void {
  const dir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  // Read on first use, then kept: about 1.5 MB, asked for by each browser that opens the page.
  const cache = new Map<string, Buffer>();
  const asset = (name: string) => {
    let body = cache.get(name);
    if (!body) cache.set(name, (body = readFileSync(path.join(dir, name))));
    return body;
  };

  app.get('/docs', async (_req, reply) => reply.type('text/html; charset=utf-8').header('content-security-policy', PAGE_CSP).send(PAGE));
  app.get('/docs/init.js', async (_req, reply) => reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(INIT));
  for (const [name, type] of Object.entries(ASSETS)) {
    app.get(`/docs/${name}`, async (_req, reply) => reply.type(type).header('cache-control', 'public, max-age=86400').send(asset(name)));
  }
}
