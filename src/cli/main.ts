/** The `tollgate` command. `npm start` runs `tollgate serve`. */
import { parseArgs } from 'node:util';
import { ConfigError } from '../config/load-config.js';
import { createLogger, startGateway } from '../main.js';
import { startMockProvider } from '../providers/mock-server.js';
import { AdminApiError } from './admin-client.js';
import { runAccounts, runCredits, runKeys, UsageError } from './admin-commands.js';

const HELP = `tollgate — an OpenRouter-compatible LLM gateway

  tollgate serve                      run the gateway (config: TOLLGATE_CONFIG, PORT, HOST, TOLLGATE_DATA_DIR, DATABASE_URL, REDIS_URL, TOLLGATE_ADMIN_TOKEN)
  tollgate mock-provider --port P     run the simulated OpenAI-compatible provider
  tollgate accounts create --email E [--password-stdin] | accounts get ID
  tollgate accounts set-password --account ID --password-stdin
  tollgate credits add --account ID --amount USD [--kind purchase|grant|adjustment (default grant)] [--reference R]
  tollgate keys create|list|disable|enable|delete ...
  tollgate keys scan [PATH…]          find Tollgate keys in files, folders or stdin (offline; exit 1 when found)

Admin commands talk to a running gateway: --url (or TOLLGATE_URL, default http://127.0.0.1:$PORT);
the admin token comes from TOLLGATE_ADMIN_TOKEN, or a prompt when it is unset (a command-line flag
would show it to every user of the machine); --json prints the API's JSON.`;

const LOG_LEVELS: ReadonlySet<string> = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

async function serve(): Promise<void> {
  const env = process.env;
  // An unknown level is reported with every other problem of the environment (exit 78) by
  // startGateway; until then the logger must exist, so it starts at `info`.
  const requested = env.TOLLGATE_LOG_LEVEL ?? env.LOG_LEVEL ?? 'info';
  const logger = createLogger(LOG_LEVELS.has(requested) ? requested : 'info');
  let running;
  try {
    running = await startGateway(env, logger);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78);
    }
    throw error;
  }
  // Signal handlers before the banner: whoever waits for the banner may signal right away.
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    running.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  const base = running.url.replace('0.0.0.0', '127.0.0.1').replace('[::]', '[::1]');
  if (!running.config.demo) {
    // Run from a config file (a deployment): stdout stays JSON lines for the log shipper. These records
    // go out whatever the level (short of silent): whoever starts the gateway waits for the first.
    const banner = logger.level === 'silent' ? logger : logger.child({}, { level: 'info' });
    banner.info(
      { url: base, store: running.gateway.services.store.dialect, docs: `${base}/docs` },
      `Tollgate listening on ${base} (API reference: ${base}/docs)`,
    );
    if (!running.config.adminToken)
      banner.info('Admin API disabled: set TOLLGATE_ADMIN_TOKEN to use it and the tollgate CLI');
    return;
  }
  const lines = [
    `Tollgate listening on ${base} (store: ${running.gateway.services.store.dialect}${running.config.demo ? ', demo mode: simulated provider, no config file' : ''})`,
    `API reference: ${base}/docs (OpenAPI 3.1: ${base}/api/v1/openapi.json)`,
  ];
  if (running.demoKey) {
    lines.push(
      '',
      'First start in demo mode: created the account demo@tollgate.local with 10 USD of demo credits and this API key.',
      'It is shown only once; store it now:',
      '',
      `  ${running.demoKey}`,
      '',
      'Try it:',
      '',
      `  curl ${base}/api/v1/chat/completions \\`,
      `    -H "Authorization: Bearer ${running.demoKey}" \\`,
      `    -H "Content-Type: application/json" \\`,
      `    -d '{"model": "tollgate/demo-chat", "messages": [{"role": "user", "content": "Hello!"}]}'`,
      '',
    );
    if (running.demoSignIn) {
      lines.push(
        'The dashboard (keys, activity, credits, OAuth apps):',
        '',
        `  ${base}/`,
        `  e-mail:   ${running.demoSignIn.email}`,
        `  password: ${running.demoSignIn.password}`,
        '',
        'The password too is shown only once: change it in the dashboard (Settings), or, with the gateway started',
        'with TOLLGATE_ADMIN_TOKEN set, from this checkout (the same token in the environment):',
        `  npx tollgate accounts set-password --account ${running.demoSignIn.accountId} --password-stdin`,
        '',
      );
    }
  } else {
    lines.push(
      `Demo mode: the demo account already exists (its key and dashboard password were printed on first start). Dashboard: ${base}/ — delete the data directory to start over.`,
    );
  }
  if (!running.config.adminToken)
    lines.push('Admin API disabled: set TOLLGATE_ADMIN_TOKEN to use it and the tollgate CLI.');
  process.stdout.write(`${lines.join('\n')}\n`);
}

async function mockProvider(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: 'string', default: '8081' },
      host: { type: 'string', default: '127.0.0.1' },
      latency: { type: 'string' },
      tps: { type: 'string' },
    },
  });
  const defaults: Record<string, number> = {};
  if (values.latency !== undefined) defaults.latencyMs = Number(values.latency);
  if (values.tps !== undefined) defaults.tokensPerSecond = Number(values.tps);
  const provider = await startMockProvider({ port: Number(values.port), host: values.host, defaults });
  process.stdout.write(`mock provider listening on ${provider.url}\n`);
  const stop = () => void provider.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

async function run(argv: string[]): Promise<void> {
  const [command = 'serve', ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve();
    case 'mock-provider':
      return mockProvider(rest);
    case 'accounts':
      return runAccounts(rest, process.env);
    case 'credits':
      return runCredits(rest, process.env);
    case 'keys':
      return runKeys(rest, process.env);
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${HELP}\n`);
      return;
    default:
      throw new UsageError(`unknown command "${command}"\n\n${HELP}`);
  }
}

run(process.argv.slice(2)).catch((error: unknown) => {
  if (
    error instanceof UsageError ||
    error instanceof AdminApiError ||
    (error as { code?: string })?.code?.startsWith('ERR_PARSE_ARGS')
  ) {
    process.stderr.write(`tollgate: ${(error as Error).message}\n`);
    process.exit(2);
  }
  process.stderr.write(`tollgate: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
