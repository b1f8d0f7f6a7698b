/**
 * Composition root for `tollgate serve`: reads the config, opens the store and upstream pools,
 * starts the demo provider when the catalog uses it, builds the app and listens. Nothing else in
 * the code base reads the environment or opens connections.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pino, type Logger as PinoLogger } from 'pino';
import type { Agent } from 'undici';
import { buildApp, type Gateway } from './app.js';
import { LocalChangeBus, type ChangeBus } from './core/change-bus.js';
import { systemClock } from './core/clock.js';
import { loadConfig } from './config/load-config.js';
import type { Config } from './config/schema.js';
import { Metrics } from './observability/metrics.js';
import { ensureDemoAccount } from './pipeline/demo-setup.js';
import { startMockProvider, type MockProvider } from './providers/mock-server.js';
import { buildCatalog } from './routing/catalog.js';
import { createUpstreamAgent } from './routing/upstream-client.js';
import { openPostgresStore, openSqliteStore } from './store/open-store.js';
import { PgChangeBus } from './store/pg-change-bus.js';
import type { Store } from './store/types.js';

export interface RunningGateway {
  gateway: Gateway;
  url: string;
  config: Config;
  demoKey: string | null;
  stop(): Promise<void>;
}

function openStore(config: Config): Store {
  if (config.databaseUrl) return openPostgresStore(config.databaseUrl);
  mkdirSync(config.dataDir, { recursive: true });
  return openSqliteStore(join(config.dataDir, 'tollgate.db'));
}

export async function startGateway(env: Record<string, string | undefined>, logger: PinoLogger): Promise<RunningGateway> {
  const config = loadConfig(env);
  let demo: MockProvider | null = null;
  if (config.providers.some((p) => p.kind === 'demo')) {
    // The demo provider is the simulator on a private loopback port: realistic pacing, no network.
    demo = await startMockProvider({ host: '127.0.0.1', port: 0, defaults: { latencyMs: 150, ttftMs: 250, tokensPerSecond: 60 }, models: ['demo-chat'] });
  }
  const catalog = buildCatalog(config, { demoBaseUrl: demo?.url ?? null });
  const store = openStore(config);
  await store.migrate();
  const bus: ChangeBus = config.databaseUrl ? await PgChangeBus.connect(config.databaseUrl, logger) : new LocalChangeBus();

  const agents = new Map<string, Agent>();
  for (const provider of catalog.providers.values()) agents.set(provider.id, createUpstreamAgent());
  const fallbackAgent = createUpstreamAgent();
  const gateway = buildApp({
    config,
    store,
    catalog,
    bus,
    clock: systemClock,
    metrics: new Metrics({ defaultMetrics: true }),
    logger,
    dispatcherFor: (id) => agents.get(id) ?? fallbackAgent,
  });
  const url = await gateway.app.listen({ port: config.port, host: config.host });
  const demoAccount = config.demo ? await ensureDemoAccount({ store, bus, now: systemClock.now }) : null;

  return {
    gateway,
    url,
    config,
    demoKey: demoAccount?.key ?? null,
    async stop() {
      await gateway.shutdown(config.server.shutdown_grace_ms);
      await Promise.all([...agents.values(), fallbackAgent].map((a) => a.close()));
      await bus.close();
      await store.close();
      await demo?.close();
    },
  };
}

export function createLogger(level: string): PinoLogger {
  return pino({
    level,
    base: { service: 'tollgate' },
    // Belt and braces: a key or token must never reach the logs, even if a future change logs headers.
    redact: { paths: ['req.headers.authorization', 'headers.authorization', '*.api_key', '*.apiKey'], censor: '[redacted]' },
  });
}
