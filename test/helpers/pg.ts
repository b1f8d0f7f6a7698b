import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** Local test server (trust auth). Override with TOLLGATE_TEST_DATABASE_URL. */
const CANDIDATE_URLS = ['postgres://postgres@127.0.0.1:5432/test', 'postgres://root@127.0.0.1:5432/test'];

export interface PgTestSchema {
  /** Connection string of the server (pass `schema` separately, e.g. to openPostgresStore). */
  url: string;
  schema: string;
  drop(): Promise<void>;
}

let reachableUrl: Promise<string> | undefined;

async function connectAny(urls: readonly string[]): Promise<string> {
  const failures: string[] = [];
  for (const url of urls) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
    try {
      await client.connect();
      await client.end();
      return url;
    } catch (error) {
      failures.push(`${url}: ${(error as Error).message}`);
      await client.end().catch(() => undefined);
    }
  }
  throw new Error(
    `no PostgreSQL test server reachable (is it running? pg_isready -h 127.0.0.1)\n${failures.join('\n')}`,
  );
}

/** The first test URL that accepts a connection (checked once per process). */
export function pgTestUrl(): Promise<string> {
  const fromEnv = process.env.TOLLGATE_TEST_DATABASE_URL;
  reachableUrl ??= connectAny(fromEnv ? [fromEnv] : CANDIDATE_URLS);
  return reachableUrl;
}

async function runAdmin(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A fresh, empty schema `tg_test_<random>`; `drop()` removes it with everything inside. */
export async function createPgTestSchema(): Promise<PgTestSchema> {
  const url = await pgTestUrl();
  const schema = `tg_test_${randomBytes(6).toString('hex')}`;
  await runAdmin(url, `CREATE SCHEMA ${schema}`);
  return {
    url,
    schema,
    drop: () => runAdmin(url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`),
  };
}
