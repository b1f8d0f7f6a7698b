/**
 * Which external services the suite can use (docs/architecture.md, "Tests"). With `CI=true` both
 * PostgreSQL and Redis are required, and a missing one fails the suites that need it. Elsewhere (a
 * laptop without them) the suites that need a missing service are left out, with one line saying
 * which, and the shared targets (store, limiter, hold store) drop their PostgreSQL or Redis variant, so
 * the embedded and in-memory halves of those suites still run.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';

export const NO_POSTGRES = 'TOLLGATE_TEST_NO_POSTGRES';
export const NO_REDIS = 'TOLLGATE_TEST_NO_REDIS';

/** Whether something accepts a TCP connection at `url`'s host and port within `timeoutMs`. */
export function reachable(url: string, defaultPort: number, timeoutMs = 500): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = createConnection({ host: hostname || '127.0.0.1', port: Number(port || defaultPort) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Test files that import a service's helpers directly (not through a filtered target list). */
const NEEDS: Record<'postgres' | 'redis', RegExp> = {
  postgres: /\b(postgresTarget|createPgTestSchema|startPrivatePostgres|pgTestUrl)\b/,
  redis: /\b(REDIS_TEST_URL|redisTarget|redisHoldTarget|startPrivateRedis|RedisRateLimiter|RedisHoldStore)\b/,
};

export function filesNeeding(root: string, service: 'postgres' | 'redis'): string[] {
  const files = readdirSync(join(root, 'test'), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.test.ts'))
    .map((e) => join(e.parentPath, e.name));
  const imports = (file: string) => (readFileSync(file, 'utf8').match(/^import [^;]*;/gms) ?? []).join('\n');
  return files.filter((file) => NEEDS[service].test(imports(file))).map((file) => file.slice(root.length + 1));
}

/** The environment and exclusions for this run; prints one line when suites are left out. */
export async function serviceAvailability(root: string): Promise<{ env: Record<string, string>; exclude: string[] }> {
  const ci = process.env.CI === 'true';
  const pgUrl = process.env.TOLLGATE_TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432';
  const redisUrl = process.env.TOLLGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const [pg, redis] = ci ? [true, true] : await Promise.all([reachable(pgUrl, 5432), reachable(redisUrl, 6379)]);
  const env: Record<string, string> = {};
  const exclude = new Set<string>();
  const missing: string[] = [];
  if (!pg) {
    env[NO_POSTGRES] = '1';
    missing.push('PostgreSQL');
    for (const file of filesNeeding(root, 'postgres')) exclude.add(file);
  }
  if (!redis) {
    env[NO_REDIS] = '1';
    missing.push('Redis');
    for (const file of filesNeeding(root, 'redis')) exclude.add(file);
  }
  if (missing.length > 0) {
    console.log(
      `skipped service suites (${missing.join(' and ')} not reachable; CI=true requires them): ${[...exclude].sort().join(', ')}`,
    );
  }
  return { env, exclude: [...exclude] };
}
