/**
 * Reads TOLLGATE_CONFIG (YAML, `${VAR}` interpolated from the environment) and the environment,
 * validates everything at once and returns a frozen Config, or throws ConfigError listing every problem.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { parseMasterKey } from '../auth/secret-box.js';
import { demoFileConfig } from './demo-catalog.js';
import { crossReferenceProblems, fileConfigSchema, type Config } from './schema.js';
import { moderationReferenceProblems } from './moderation-schema.js';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

const MASTER_KEY_HINT = 'must be 32 bytes as 64 hex characters or base64 (e.g. `openssl rand -hex 32`)';

function isMasterKey(text: string): boolean {
  try {
    parseMasterKey(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * A bearer secret from the environment (admin and metrics tokens). Surrounding whitespace (a trailing
 * newline from a secrets file) is dropped; what remains must be 16+ characters with no whitespace
 * inside, since `Authorization: Bearer <token>` cannot carry a space and a blank token guards nothing.
 */
const bearerSecret = z
  .string()
  .transform((text) => text.trim())
  .refine(
    (text) => text.length >= 16 && !/\s/.test(text),
    'must be at least 16 characters with no whitespace inside (surrounding whitespace is trimmed)',
  );

const CONNECTION_URL_HINT =
  'is not a URL that can be read (a port from 1 to 65535, nothing after #); percent-encode special characters in the user name and password (@ # / ? : % as %40 %23 %2F %3F %3A %25)';

/**
 * A connection URL the drivers can read as written: not one `new URL` refuses ("Invalid URL" at boot,
 * naming nothing), nor one whose password holds an unencoded `#` (read as a fragment: the host then
 * is part of the password, and a DNS error names it in the log). Read as the pg driver reads it
 * (pg-connection-string: spaces encoded, an empty host allowed, a socket in `?host=`), so no URL the
 * driver takes is refused here.
 */
function connectionUrlReadable(text: string): boolean {
  if (text.includes('#')) return false;
  const encoded = / |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(text) ? encodeURI(text).replace(/%25(\d\d)/g, '%$1') : text;
  for (const candidate of [encoded, encoded.replace('@/', '@___DUMMY___/')]) {
    try {
      new URL(candidate);
      return true;
    } catch {
      // the next reading, as the driver tries it
    }
  }
  return false;
}

const envSchema = z.object({
  // Digits only: `PORT=` (an empty line in an env file) read as 0 would listen on a random port.
  PORT: z
    .string()
    .regex(/^\s*\d{1,5}\s*$/, 'must be a port number from 0 to 65535')
    .transform((text) => Number(text.trim()))
    .pipe(z.number().max(65535, 'must be a port number from 0 to 65535'))
    .default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  TOLLGATE_DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .refine(connectionUrlReadable, CONNECTION_URL_HINT)
    .optional(),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// URL')
    .refine(connectionUrlReadable, CONNECTION_URL_HINT)
    .optional(),
  TOLLGATE_ADMIN_TOKEN: bearerSecret.optional(),
  TOLLGATE_METRICS_TOKEN: bearerSecret.optional(),
  TOLLGATE_MASTER_KEY: z.string().refine(isMasterKey, MASTER_KEY_HINT).optional(),
  TOLLGATE_MASTER_KEY_PREVIOUS: z
    .string()
    .refine((list) => list.split(',').every((k) => k.trim() === '' || isMasterKey(k)), MASTER_KEY_HINT)
    .optional(),
  TOLLGATE_SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\/[^\s]+$/, 'must be an smtp:// or smtps:// URL')
    .optional(),
  TOLLGATE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional(),
});

function interpolate(value: unknown, env: Env, path: string, problems: string[]): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
      const found = env[name];
      if (found === undefined) {
        problems.push(`${path}: environment variable ${name} is not set`);
        return '';
      }
      return found;
    });
  }
  if (Array.isArray(value)) return value.map((item, i) => interpolate(item, env, `${path}[${i}]`, problems));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, interpolate(v, env, path ? `${path}.${k}` : k, problems)]),
    );
  }
  return value;
}

function formatIssues(prefix: string, error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const where = issue.path.length ? issue.path.join('.') : '(root)';
    return `${prefix}${where}: ${issue.message}`;
  });
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

export function loadConfig(
  env: Env = process.env,
  readFile: (path: string) => string = (p) => readFileSync(p, 'utf8'),
): Config {
  const problems: string[] = [];
  const configPath = env.TOLLGATE_CONFIG ? resolve(env.TOLLGATE_CONFIG) : null;

  let raw: unknown = demoFileConfig;
  /** The file could not be read or parsed: what it lacks is not reported on top (that it has no models). */
  let unread = false;
  if (configPath) {
    try {
      raw = parseYaml(readFile(configPath)) ?? {};
      raw = interpolate(raw, env, '', problems);
    } catch (error) {
      // The parser's first line names the problem and where ("… at line 3, column 1:"); the file's
      // lines it quotes after it are left out (they may hold a secret written in the file).
      const what = error instanceof Error ? error.message.split('\n')[0]!.replace(/:\s*$/, '') : String(error);
      problems.push(`TOLLGATE_CONFIG (${configPath}): ${what}`);
      raw = {};
      unread = true;
    }
  }

  const file = fileConfigSchema.safeParse(raw);
  if (!file.success) problems.push(...formatIssues(configPath ? 'config ' : 'demo config ', file.error));
  problems.push(...crossReferenceProblems(raw).map((p) => `config ${p}`));
  problems.push(...moderationReferenceProblems(raw).map((p) => `config ${p}`));
  const parsedEnv = envSchema.safeParse(env);
  if (!parsedEnv.success) problems.push(...formatIssues('env ', parsedEnv.error));
  if (file.success && file.data.models.length === 0 && !unread)
    problems.push('config models: at least one model is required');

  if (problems.length > 0 || !file.success || !parsedEnv.success) throw new ConfigError(problems);

  const e = parsedEnv.data;
  const config: Config = {
    ...file.data,
    port: e.PORT,
    host: e.HOST,
    dataDir: resolve(e.TOLLGATE_DATA_DIR),
    databaseUrl: e.DATABASE_URL ?? null,
    redisUrl: e.REDIS_URL ?? null,
    adminToken: e.TOLLGATE_ADMIN_TOKEN ?? null,
    metricsToken: e.TOLLGATE_METRICS_TOKEN ?? null,
    masterKey: e.TOLLGATE_MASTER_KEY ?? null,
    previousMasterKeys: (e.TOLLGATE_MASTER_KEY_PREVIOUS ?? '')
      .split(',')
      .map((k) => k.trim())
      .filter((k) => k !== ''),
    smtpUrl: e.TOLLGATE_SMTP_URL ?? null,
    logLevel: e.TOLLGATE_LOG_LEVEL ?? e.LOG_LEVEL ?? 'info',
    demo: configPath === null,
    configPath,
  };
  return deepFreeze(config);
}
