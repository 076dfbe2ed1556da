import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join } from 'node:path';
import { VdiError } from '../errors.js';

const contentTypes: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

// The page's own script and styles only; noVNC draws its cursor from data: URLs, xterm.js sets inline styles;
// IronRDP compiles its WASM, which it carries inline as a data: URL.
const pagePolicy = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self' data:",
  "frame-ancestors 'none'",
].join('; ');

// The element fills the window below the sign-out bar, so a console reaches the window's edges.
const pageStyle = `html, body { margin: 0; height: 100%; }
      body { display: flex; flex-direction: column; }
      corral-desktops { flex: 1; min-height: 0; }
      .corral-sign-out { display: flex; justify-content: flex-end; padding: 0.25rem 0.75rem; margin: 0; }`;

// Posted, not linked: a page elsewhere cannot sign the user out with an image or a link.
const signOutForm = `<form method="post" action="/auth/logout" class="corral-sign-out">
      <button type="submit">Sign out</button>
    </form>`;

const indexHtml = (signOut: boolean) => `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Desktops</title>
    <!-- an empty icon inline, so the browser asks for no /favicon.ico the broker does not serve -->
    <link rel="icon" href="data:,">
    <style>
      ${pageStyle}
    </style>
    <script type="module" src="/ui/page.js"></script>
  </head>
  <body>${
    signOut
      ? `
    ${signOutForm}
  `
      : ''
  }</body>
</html>
`;

/** Serves one request for the Desktops page; `false` when the path is not the page's. */
export type DesktopsPageHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

/**
 * Serves the built Desktops page (`dist/ui` of this package): the page at `/` and its bundle under `/ui/`. Only
 * the files present at start-up are served, by exact name, so no path reaches outside the folder. With
 * `signOut`, the page has a Sign out button for the broker's own sign-in.
 *
 * @throws {@link VdiError} `INVALID_INPUT` when the folder holds no built page (`page.js`).
 */
export function createDesktopsPage(
  directory: string,
  options: { signOut: boolean } = { signOut: false },
): DesktopsPageHandler {
  const html = indexHtml(options.signOut);
  let names: string[];
  try {
    names = readdirSync(directory).filter((name) => contentTypes[extname(name)] !== undefined);
  } catch {
    names = [];
  }
  if (!names.includes('page.js')) {
    throw new VdiError(
      'INVALID_INPUT',
      `The Desktops page is not built in ${directory}; run npm run build (tsup) first.`,
      { details: { directory } },
    );
  }
  const files = new Map(names.map((name) => [`/ui/${name}`, join(directory, name)]));
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const file = files.get(path);
    if (path !== '/' && file === undefined) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' });
      res.end('Use GET.\n');
      return true;
    }
    const common = { 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' };
    if (file === undefined) {
      res.writeHead(200, {
        ...common,
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': pagePolicy,
      });
      res.end(req.method === 'HEAD' ? undefined : html);
      return true;
    }
    readFile(file).then(
      (body) => {
        res.writeHead(200, { ...common, 'content-type': contentTypes[extname(file)] as string });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      () => {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('Not found.\n');
      },
    );
    return true;
  };
}
