/**
 * Composition root for `tollgate serve`: reads the config, opens the store and upstream pools,
 * starts the demo provider when the catalog uses it, builds the app and listens. Nothing else in
 * the code base reads the environment or opens connections.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { pino, type DestinationStream, type Logger as PinoLogger, type LoggerOptions } from 'pino';
import { buildApp, type AppDeps, type Gateway } from './app.js';
import { DEFAULT_MAIL_FROM } from './config/mail-schema.js';
import { startMetricsListener } from './http/metrics-listener.js';
import { RedisGraceExposure } from './billing/redis-grace-exposure.js';
import { RedisHoldStore } from './billing/redis-hold-store.js';
import { fleetKeys, RedisFleet } from './store/redis-fleet.js';
import { RedisHealthChannel } from './store/redis-health-channel.js';
import { failFastRedisOptions } from './store/redis-script-client.js';
import { Redis } from 'ioredis';
import { openChargeJournal, startMigrations } from './boot-durability.js';
import { LocalChangeBus, type ChangeBus } from './core/change-bus.js';
import { systemClock } from './core/clock.js';
import { loadConfig } from './config/load-config.js';
import type { Config } from './config/schema.js';
import { MemoryRateLimiter } from './limits/memory-rate-limiter.js';
import { RedisRateLimiter } from './limits/redis-rate-limiter.js';
import { Metrics } from './observability/metrics.js';
import { ensureDemoAccount } from './pipeline/demo-setup.js';
import { startMockProvider, type MockProvider } from './providers/mock-server.js';
import { buildCatalog } from './routing/catalog.js';
import { UpstreamAgents } from './routing/upstream-client.js';
import { prepareDataDir } from './boot-data-dir.js';
import { openPostgresStore, openSqliteStoreWhenOpen } from './store/open-store.js';
import { PgChangeBus } from './store/pg-change-bus.js';
import type { Store } from './store/types.js';

export interface RunningGateway {
  gateway: Gateway;
  url: string;
  config: Config;
  demoKey: string | null;
  /** First start in demo mode only: the dashboard sign-in of the demo account (printed once, never logged). */
  demoSignIn: { accountId: string; email: string; password: string } | null;
  stop(): Promise<void>;
}

async function openStore(config: Config): Promise<Store> {
  if (config.databaseUrl) return openPostgresStore(config.databaseUrl);
  mkdirSync(config.dataDir, { recursive: true });
  return openSqliteStoreWhenOpen(join(config.dataDir, 'tollgate.db'));
}

type OpenedRateLimiter = NonNullable<AppDeps['rateLimiter']> & { close(): Promise<void>; redis?: RedisRateLimiter };

/** Free-model rate-limit counters: Redis when REDIS_URL is set (shared by every process), else in-process. */
async function openRateLimiter(config: Config, logger: PinoLogger): Promise<OpenedRateLimiter> {
  if (!config.redisUrl) {
    const limiter = new MemoryRateLimiter();
    return { limiter, store: 'memory', close: () => limiter.close() };
  }
  const limiter = new RedisRateLimiter({ url: config.redisUrl, keyPrefix: `${config.limits.redis_prefix}rl:` });
  try {
    await limiter.ready();
  } catch (error) {
    // Not fatal: the client keeps reconnecting; meanwhile /readyz answers 503 and free requests follow on_store_error.
    logger.warn(
      { err: error },
      `Redis (REDIS_URL) is unreachable at boot; free-model requests fail ${config.limits.free_models.on_store_error} until it answers`,
    );
  }
  return { limiter, redis: limiter, store: 'redis', ping: () => limiter.ping(), close: () => limiter.close() };
}

/**
 * In-flight credit holds and grace exposures: in Redis when REDIS_URL is set (every process counts
 * every other's), with the fleet's heartbeat on the same connection (it decides when Redis can be trusted), else in this
 * process (the gate's default). Unreachable at boot is not fatal: until Redis answers once, this
 * process cannot know its share of the fleet and refuses paid requests (503); after that, outages are
 * served from its share (docs/architecture.md, "Redis outages").
 */
async function openHoldStore(
  config: Config,
  logger: PinoLogger,
): Promise<{
  holds: RedisHoldStore;
  graceExposure: RedisGraceExposure;
  fleet: RedisFleet;
  healthChannel: RedisHealthChannel;
  close(): Promise<void>;
} | null> {
  if (!config.redisUrl) return null;
  const timeoutMs = 500;
  const redis = new Redis(config.redisUrl, { ...failFastRedisOptions(timeoutMs), commandTimeout: timeoutMs * 2 });
  const holds = new RedisHoldStore({
    redis,
    timeoutMs,
    keyPrefix: `${config.limits.redis_prefix}hold:`,
    // The fleet's epoch, marked on the holds: a process that has not seen Redis come back empty yet
    // finds a newer one there, and looks (credit-gate.ts) instead of admitting from an emptied Redis.
    epoch: () => fleet.epoch,
    // And read where the fleet keeps it: gone or changed, Redis lost its data since this process looked.
    epochKey: fleetKeys(config.limits.redis_prefix).epoch,
  });
  const fleet = new RedisFleet({
    redis,
    timeoutMs,
    keyPrefix: config.limits.redis_prefix,
    onUnreachable: (error, seen) =>
      logger.warn(
        { err: error },
        `Redis (REDIS_URL) is unreachable; paid requests are ${
          seen && config.billing.on_hold_store_error === 'share'
            ? "admitted from this process's share of each balance"
            : seen
              ? 'refused (503)'
              : 'refused (503): this process has not reached it yet, so it cannot know its share of a balance'
        } until it answers`,
      ),
  });
  const graceExposure = new RedisGraceExposure({
    redis,
    timeoutMs,
    keyPrefix: `${config.limits.redis_prefix}grace:`,
    fleet,
    onRestoreError: (error) =>
      logger.error(
        { err: error },
        "could not put this process's grace admissions back into Redis after it lost its data; the fleet's grace count misses them",
      ),
  });
  try {
    await holds.ready();
  } catch {
    // Logged by the fleet's first heartbeat below.
  }
  await fleet.start();
  void warnOfEviction(redis, logger);
  // Endpoint health shared by the fleet (routing/fleet-health.ts); closed by the gateway's shutdown.
  const healthChannel = new RedisHealthChannel({
    publisher: redis,
    url: config.redisUrl,
    channel: `${config.limits.redis_prefix}health`,
  });
  return {
    holds,
    graceExposure,
    fleet,
    healthChannel,
    async close() {
      await graceExposure.close();
      await fleet.stop();
      if (redis.status === 'ready') await redis.quit().catch(() => redis.disconnect());
      else redis.disconnect();
    },
  };
}

/**
 * Redis came back without its data: put this process's free-model counts back (docs/architecture.md,
 * "Redis outages"), retrying the counters that failed for a while (the limiter's connection may still
 * be reconnecting).
 */
async function restoreRateCounts(limiter: RedisRateLimiter, logger: PinoLogger): Promise<void> {
  let pending: Set<string> | undefined;
  for (let attempt = 0; attempt < 20; attempt++) {
    await limiter.ready().catch(() => undefined);
    pending = await limiter.restore(Date.now(), pending);
    if (pending.size === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  logger.warn(
    { counters: pending?.size },
    'could not restore rate-limit counts into Redis after it lost its data; those counts restart from zero',
  );
}

/**
 * Turns off V8's allocation-site pretenuring for this process, unless it was started with an
 * explicit `--[no-]allocation-site-pretenuring` (Node does not take that one in NODE_OPTIONS).
 * Under steady load V8 sees the gateway's per-request objects alive at a scavenge (a request in
 * flight, or held by one that had been promoted), decides that their allocation sites make
 * long-lived objects, and allocates them straight in the old generation: ~4 KB per request there, a
 * mark-compact every few seconds at 500 req/s, each a 10–50 ms stall for the requests in flight —
 * the whole p99 tail. Measured by `npm run bench`'s latency section (docs/architecture.md, "What
 * the hot path costs"). Set once the process runs, it still takes effect (the test shows it).
 */
export function tuneGarbageCollector(execArgv: readonly string[] = process.execArgv): void {
  const explicit = execArgv.some((arg) => /^--(no-)?allocation[-_]site[-_]pretenuring(=|$)/.test(arg));
  if (!explicit) setFlagsFromString('--no-allocation-site-pretenuring');
}

export async function startGateway(
  env: Record<string, string | undefined>,
  logger: PinoLogger,
): Promise<RunningGateway> {
  tuneGarbageCollector();
  const config = loadConfig(env);
  prepareDataDir(config.dataDir, logger);
  let demo: MockProvider | null = null;
  if (config.providers.some((p) => p.kind === 'demo')) {
    // The demo provider is the simulator on a private loopback port: realistic pacing, no network.
    demo = await startMockProvider({
      host: '127.0.0.1',
      port: 0,
      defaults: { latencyMs: 150, ttftMs: 250, tokensPerSecond: 60 },
      models: ['demo-chat'],
    });
  }
  const catalog = buildCatalog(config, { demoBaseUrl: demo?.url ?? null });
  const store = await openStore(config);
  // A database down at boot is not fatal: the gateway starts not ready and migrates when it answers.
  const migrations = await startMigrations(store, logger);
  const journal = await openChargeJournal(config, logger);
  const bus: ChangeBus = config.databaseUrl
    ? PgChangeBus.connectInBackground(config.databaseUrl, logger)
    : new LocalChangeBus();

  const agents = new UpstreamAgents(catalog.providers.values());
  const rateLimiter = await openRateLimiter(config, logger);
  const shared = await openHoldStore(config, logger);
  const limiter = rateLimiter.redis;
  if (shared && limiter) {
    shared.fleet.onResync((reason) => {
      if (reason === 'epoch') void restoreRateCounts(limiter, logger);
    });
  }
  const gateway = buildApp({
    config,
    store,
    catalog,
    bus,
    clock: systemClock,
    metrics: new Metrics({ defaultMetrics: true }),
    logger,
    dispatcherFor: agents.dispatcherFor,
    rateLimiter,
    ...(shared
      ? {
          holds: shared.holds,
          graceExposure: shared.graceExposure,
          fleet: shared.fleet,
          healthChannel: shared.healthChannel,
        }
      : {}),
    journal,
    dataDir: config.dataDir,
    recoverCharges: migrations.done,
  });
  migrations.whenDone(gateway);
  const freeLimits = gateway.services.freeModels;
  // docs/architecture.md: the fail policy of free-model limits is a deliberate operator choice, logged at boot.
  logger.info(
    { free_model_limits: freeLimits.describe(), edge: config.limits.edge },
    `free-model rate limits: counters ${freeLimits.store === 'redis' ? 'in Redis, shared by every process' : 'in this process'}; if the counter store is unreachable, free-model requests fail ${freeLimits.onStoreError}${freeLimits.onStoreError === 'closed' ? ' (503, nothing forwarded)' : ' (allowed, uncounted, warning logged)'}`,
  );
  // docs/architecture.md: mail leaves through the outbox; say at boot whether it is actually sent.
  if (config.smtpUrl) {
    logger.info(
      { smtp: smtpEndpoint(config.smtpUrl), from: config.mail.from },
      'mail: sending the outbox through SMTP',
    );
    if (config.mail.from === DEFAULT_MAIL_FROM)
      logger.warn(
        { from: config.mail.from },
        'mail.from is not set: the default sender is on a domain that cannot exist (.invalid), which most relays refuse',
      );
  } else
    logger.warn(
      'mail is NOT being sent: TOLLGATE_SMTP_URL is not set; messages are recorded in the outbox (GET /api/v1/admin/outbox) and go out once it is set',
    );
  if (config.mail.public_url === null)
    logger.warn(
      'password reset by e-mail is off: mail.public_url is not set, so no link can be made; reset requests are refused (403) and the operator sets passwords (npx tollgate accounts set-password)',
    );
  const url = await gateway.app.listen({ port: config.port, host: config.host });
  const metricsListener = config.server.metrics
    ? await startMetricsListener(gateway.services.metrics, config.server.metrics, config.metricsToken)
    : null;
  if (metricsListener) logger.info({ url: `${metricsListener.url}/metrics` }, 'metrics on their own listener');
  gateway.startBackground();
  const demoAccount =
    config.demo && migrations.done ? await ensureDemoAccount({ store, bus, now: systemClock.now }) : null;

  return {
    gateway,
    url,
    config,
    demoKey: demoAccount?.key ?? null,
    demoSignIn: demoAccount
      ? { accountId: demoAccount.accountId, email: demoAccount.email, password: demoAccount.password }
      : null,
    async stop() {
      await gateway.shutdown(config.server.shutdown_grace_ms);
      await metricsListener?.close();
      await agents.close();
      await bus.close();
      await rateLimiter.close();
      await shared?.close();
      migrations.stop();
      await journal.close();
      await store.close();
      await demo?.close();
    },
  };
}

/** `smtp://host:port` of an SMTP URL, without its credentials (for logs). */
function smtpEndpoint(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}`;
  } catch {
    return '(unparsable URL)';
  }
}

/** The gateway's logger; `destination` (stdout by default) lets tests read what it writes. */
export function createLogger(level: string, destination?: DestinationStream): PinoLogger {
  const options: LoggerOptions = {
    level,
    base: { service: 'tollgate' },
    // Belt and braces: a key or token must never reach the logs, even if a future change logs headers.
    redact: {
      paths: [
        'req.headers.authorization',
        'headers.authorization',
        'req.headers.cookie',
        'headers.cookie',
        '*.api_key',
        '*.apiKey',
        '*.password',
      ],
      censor: '[redacted]',
    },
    // An error's type, message and code, never its stack (file paths and code layout stay out of the logs).
    serializers: { err: errorWithoutStack },
  };
  return destination ? pino(options, destination) : pino(options);
}

function errorWithoutStack(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const { stack: _stack, ...rest } = pino.stdSerializers.err(error);
  return rest;
}

/**
 * Redis evicting keys under `maxmemory` would drop a hold or a grace count while the fleet's epoch key
 * (no TTL) stays: nothing tells such a loss from a count that was never there, and an outside check
 * spent a second grace cap through it. Said once at boot; a Redis that refuses CONFIG (a managed
 * one) is left to the operator (README, "Redis").
 */
async function warnOfEviction(redis: Redis, logger: PinoLogger): Promise<void> {
  try {
    const reply = (await redis.config('GET', 'maxmemory-policy')) as unknown;
    const policy = Array.isArray(reply) ? reply[1] : undefined;
    if (typeof policy === 'string' && policy !== 'noeviction')
      logger.warn(
        { maxmemory_policy: policy },
        'Redis (REDIS_URL) may evict keys under memory pressure (maxmemory-policy is not noeviction): an evicted hold or grace count lets the fleet admit past its bounds; set maxmemory-policy noeviction',
      );
  } catch {
    // CONFIG refused or Redis not reachable yet: nothing to say.
  }
}
