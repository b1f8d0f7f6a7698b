/** `tollgate accounts|credits|keys ...`: admin API calls with human or `--json` output. */
import { parseArgs } from 'node:util';
import { AdminClient } from './admin-client.js';
import { adminTokenSource } from './admin-token-source.js';
import { runKeyScan } from './key-scan.js';

interface Output {
  json: boolean;
  print(value: unknown, human: string): void;
}

const common = {
  url: { type: 'string' },
  'admin-token': { type: 'string' },
  json: { type: 'boolean', default: false },
} as const;

function output(json: boolean): Output {
  return {
    json,
    print: (value, human) => process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${human}\n`),
  };
}

function client(
  values: { url?: string | undefined; 'admin-token'?: string | undefined },
  env: NodeJS.ProcessEnv,
): AdminClient {
  const url = values.url ?? env.TOLLGATE_URL ?? `http://127.0.0.1:${env.PORT ?? '8080'}`;
  return new AdminClient(url, adminTokenSource(values['admin-token'], env));
}

function need(value: string | undefined, flag: string): string {
  if (!value) throw new UsageError(`missing --${flag}`);
  return value;
}

function number(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n)) throw new UsageError(`--${flag} must be a number`);
  return n;
}

export class UsageError extends Error {}

type Data<T> = { data: T };
type Account = { id: string; email: string; balance: number; total_credits: number; total_usage: number };
type ApiKey = {
  hash: string;
  name: string;
  label: string;
  disabled: boolean;
  limit: number | null;
  limit_reset?: string | null;
  usage: number;
  is_management_key?: boolean;
  /** In listings: reported exposed (disabled for good). */
  compromised?: boolean;
};

function describeKey(k: ApiKey): string {
  const state = k.compromised ? '  (compromised)' : k.disabled ? '  (disabled)' : '';
  return `${k.hash}  ${k.label}  ${JSON.stringify(k.name)}${state}${k.is_management_key ? '  [management]' : ''}  limit=${k.limit ?? 'none'}${k.limit_reset ? `/${k.limit_reset}` : ''} usage=${k.usage}`;
}

/**
 * The password from standard input (never a flag: flags show up in `ps` and shell history). One
 * trailing newline is dropped, so `echo "$PW" | tollgate …` works.
 */
export async function readPasswordFromStdin(stdin: NodeJS.ReadableStream = process.stdin): Promise<string> {
  if ((stdin as { isTTY?: boolean }).isTTY)
    process.stderr.write('Reading the password from standard input (it is echoed); end with Enter, then Ctrl-D.\n');
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  const text = Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
  if (text === '') throw new UsageError('--password-stdin: standard input was empty');
  return text;
}

export async function runAccounts(
  args: string[],
  env: NodeJS.ProcessEnv,
  stdin: NodeJS.ReadableStream = process.stdin,
): Promise<void> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      ...common,
      email: { type: 'string' },
      account: { type: 'string' },
      'password-stdin': { type: 'boolean', default: false },
    },
  });
  const out = output(values.json);
  const api = client(values, env);
  if (sub === 'create') {
    const email = need(values.email, 'email');
    const password = values['password-stdin'] ? await readPasswordFromStdin(stdin) : null;
    const result = (await api.call('POST', '/accounts', {
      email,
      ...(password === null ? {} : { password }),
    })) as Data<Account>;
    out.print(
      result,
      `created account ${result.data.id} (${result.data.email})${password === null ? ' without a password (it cannot sign in until one is set)' : ''}`,
    );
  } else if (sub === 'set-password') {
    const account = need(values.account ?? positionals[0], 'account');
    if (!values['password-stdin'])
      throw new UsageError('set-password reads the new password from standard input: pass --password-stdin');
    const password = await readPasswordFromStdin(stdin);
    const result = (await api.call('PUT', `/accounts/${encodeURIComponent(account)}/password`, { password })) as Data<{
      updated: boolean;
      sessions_revoked: number;
    }>;
    out.print(result, `password set for ${account}; ${result.data.sessions_revoked} session(s) signed out`);
  } else if (sub === 'get' || sub === 'show') {
    const id = need(positionals[0], 'account id (positional)');
    const result = (await api.call('GET', `/accounts/${encodeURIComponent(id)}`)) as Data<Account>;
    out.print(
      result,
      `${result.data.id}  ${result.data.email}  balance=${result.data.balance} credits=${result.data.total_credits} usage=${result.data.total_usage}`,
    );
  } else
    throw new UsageError(
      'usage: tollgate accounts create --email E [--password-stdin] | accounts set-password --account ID --password-stdin | accounts get ID',
    );
}

export async function runCredits(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const [sub, ...rest] = args;
  const { values } = parseArgs({
    args: rest,
    options: {
      ...common,
      account: { type: 'string' },
      amount: { type: 'string' },
      kind: { type: 'string', default: 'grant' },
      reference: { type: 'string' },
    },
  });
  if (sub !== 'add')
    throw new UsageError(
      'usage: tollgate credits add --account ID --amount USD [--kind purchase|grant|adjustment (default grant)] [--reference R]',
    );
  const out = output(values.json);
  const account = need(values.account, 'account');
  const body = {
    amount: number(need(values.amount, 'amount'), 'amount'),
    kind: values.kind,
    ...(values.reference ? { reference: values.reference } : {}),
  };
  const answer = await client(values, env).send('POST', `/accounts/${encodeURIComponent(account)}/credits`, body);
  const result = answer.json as Data<Account>;
  // 200, not 201: this reference was recorded before, with the same amount and kind.
  const replay =
    answer.status === 200
      ? ` — reference ${JSON.stringify(values.reference)} was recorded before: nothing changed`
      : '';
  out.print(
    result,
    `account ${result.data.id}: balance ${result.data.balance} USD (credits ${result.data.total_credits}, usage ${result.data.total_usage})${replay}`,
  );
}

export async function runKeys(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const [sub, ...rest] = args;
  if (sub === 'scan') {
    // Offline: no gateway, no token. Exit 1 when a key was found (pre-commit hooks).
    process.exitCode = await runKeyScan(
      rest,
      (line) => process.stdout.write(`${line}\n`),
      (line) => process.stderr.write(`${line}\n`),
    );
    return;
  }
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      ...common,
      account: { type: 'string' },
      name: { type: 'string' },
      limit: { type: 'string' },
      'limit-reset': { type: 'string' },
      'expires-at': { type: 'string' },
      management: { type: 'boolean', default: false },
      'include-disabled': { type: 'boolean', default: true },
    },
  });
  const out = output(values.json);
  const api = client(values, env);
  switch (sub) {
    case 'create': {
      const account = need(values.account, 'account');
      const body = {
        name: need(values.name, 'name'),
        ...(values.limit !== undefined ? { limit: number(values.limit, 'limit') } : {}),
        ...(values['limit-reset'] ? { limit_reset: values['limit-reset'] } : {}),
        ...(values['expires-at'] ? { expires_at: values['expires-at'] } : {}),
        ...(values.management ? { management: true } : {}),
      };
      const result = (await api.call('POST', `/accounts/${encodeURIComponent(account)}/keys`, body)) as Data<ApiKey> & {
        key: string;
      };
      out.print(result, `${result.key}\n\nThis key is shown only once: store it now.\nhash: ${result.data.hash}`);
      return;
    }
    case 'list': {
      const account = need(values.account, 'account');
      const result = (await api.call(
        'GET',
        `/accounts/${encodeURIComponent(account)}/keys?include_disabled=${values['include-disabled']}`,
      )) as Data<ApiKey[]>;
      out.print(result, result.data.length ? result.data.map(describeKey).join('\n') : 'no keys');
      return;
    }
    case 'disable':
    case 'enable': {
      const hash = need(positionals[0], 'key hash (positional)');
      const result = (await api.call('PATCH', `/keys/${encodeURIComponent(hash)}`, {
        disabled: sub === 'disable',
      })) as Data<ApiKey>;
      out.print(result, `${sub}d ${describeKey(result.data)}`);
      return;
    }
    case 'delete': {
      const hash = need(positionals[0], 'key hash (positional)');
      const result = await api.call('DELETE', `/keys/${encodeURIComponent(hash)}`);
      out.print(result, `deleted ${hash}`);
      return;
    }
    default:
      throw new UsageError(
        'usage: tollgate keys create --account ID --name N [--limit USD] [--limit-reset daily|weekly|monthly] [--expires-at ISO] [--management]\n       tollgate keys list --account ID\n       tollgate keys disable|enable|delete HASH\n       tollgate keys scan [PATH…]   (files, folders, or stdin; exit 1 when a key is found)',
      );
  }
}
