/**
 * The dashboard's built files (`npm run build` → `dist/web/`), read once at boot and served from
 * memory: the folder is small, and nothing on the request path touches the disk. A missing folder
 * (tests or a checkout before the first build) is not an error: the pages then answer 503.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface WebFile {
  body: Buffer;
  contentType: string;
}

export interface WebBundle {
  /** index.html, or null when the dashboard was not built. */
  index: Buffer | null;
  /** Files under `assets/` by file name (Vite names them by content hash). */
  assets: ReadonlyMap<string, WebFile>;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

/** The media types an asset may have (for the OpenAPI document). */
export const ASSET_MEDIA_TYPES: readonly string[] = [
  ...new Set(Object.values(CONTENT_TYPES).map((type) => type.split(';')[0]!)),
];

/** `dist/web` of the package: this module sits two folders deep both as source (src/http/) and built (dist/http/). */
export function defaultWebDir(): string {
  return fileURLToPath(new URL('../../dist/web', import.meta.url));
}

export function loadWebBundle(dir: string): WebBundle {
  const indexPath = join(dir, 'index.html');
  if (!existsSync(indexPath)) return { index: null, assets: new Map() };
  const assets = new Map<string, WebFile>();
  const assetDir = join(dir, 'assets');
  if (existsSync(assetDir)) {
    for (const name of readdirSync(assetDir)) {
      const path = join(assetDir, name);
      // Source maps stay on disk: they would publish the dashboard's sources for no user benefit.
      if (!statSync(path).isFile() || name.endsWith('.map')) continue;
      const contentType = CONTENT_TYPES[extname(name).toLowerCase()];
      if (contentType) assets.set(name, { body: readFileSync(path), contentType });
    }
  }
  return { index: readFileSync(indexPath), assets };
}
