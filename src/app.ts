/**
 * buildApp(deps) composes the domain services and the HTTP routes into a Fastify instance that is
 * not listening yet (tests drive it with inject() or listen on port 0). Opening pools and stores is
 * main.ts's job; buildApp only wires what it is given.
 */
import { estimateCompletionTokens } from './billing/token-estimate.js';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { pino } from 'pino';
import type { Dispatcher } from 'undici';
import { Authenticator } from './auth/authenticator.js';
import { parseMasterKey, SecretBox } from './auth/secret-box.js';
import { CreditGate } from './billing/credit-gate.js';
import type { HoldStore } from './billing/hold-store.js';
import type { FleetView } from './core/fleet.js';
import type { GraceExposure } from './billing/grace-exposure.js';
import { FleetHealth, type HealthChannel } from './routing/fleet-health.js';
import { CapacityGovernor } from './limits/capacity.js';
import { Settler } from './billing/settler.js';
import { ChargeAdmission, gateWithAdmission } from './billing/charge-admission.js';
import type { ChargeJournal } from './billing/charge-journal.js';
import { lastKnownStore } from './billing/last-known-store.js';
import { StoreHealth } from './billing/store-health.js';
import { usdToUnits } from './core/money.js';
import type { ChangeBus } from './core/change-bus.js';
import type { Clock } from './core/clock.js';
import type { Config } from './config/schema.js';
import { createHttpServer, installNotFound, installRequestMetrics, trackHandlersInFlight } from './http/server.js';
import { registerCors } from './http/cors.js';
import { RequestAborts } from './http/request-aborts.js';
import { RouteTable } from './http/route-table.js';
import { principalResolvers, registerResponseHeaders, routeGuard } from './http/route-auth.js';
import { registerJsonBody } from './http/json-body.js';
import { registerAccountRoutes } from './http/routes/account.js';
import { registerActivityRoutes } from './http/routes/activity.js';
import { registerAdminRoutes } from './http/routes/admin.js';
import { registerCatalogRoutes } from './http/routes/catalog.js';
import { registerByokRoutes } from './http/routes/byok.js';
import { registerChatRoutes } from './http/routes/chat.js';
import { registerKeyRoutes } from './http/routes/keys.js';
import { registerRankingsRoutes } from './http/routes/rankings.js';
import { registerOpsRoutes } from './http/routes/ops.js';
import { registerNotificationRoutes } from './http/routes/notifications.js';
import { registerOutboxAdminRoutes } from './http/routes/outbox-admin.js';
import { registerPasswordResetRoutes } from './http/routes/password-reset.js';
import { RESET_TOKEN_TTL_MS } from './pipeline/password-reset.js';
import { registerSecretScanningRoutes } from './http/routes/secret-scanning.js';
import { registerMailMetrics } from './mail/mail-metrics.js';
import { MailOutbox } from './mail/mail-outbox.js';
import { OutboxSender } from './mail/outbox-sender.js';
import { smtpTransport, type MailTransport } from './mail/smtp-transport.js';
import { ExpirySweep } from './notifications/expiry-sweep.js';
import { UsageAlerts } from './notifications/usage-alerts.js';
import { notifyKeysInRequest, type ExposedKeyDeps } from './pipeline/exposed-keys.js';
import { keyLeakStep } from './pipeline/key-leak-step.js';
import { PublicKeyRing } from './secret-scanning/public-key-ring.js';
import { registerSessionRoutes } from './http/routes/session.js';
import { registerOAuthRoutes } from './http/routes/oauth.js';
import { registerAccountHolderRoutes } from './http/routes/account-holder.js';
import { SessionService } from './auth/sessions.js';
import { SignInGuard } from './auth/sign-in-guard.js';
import { registerWebRoutes } from './http/routes/web.js';
import { registerOpenApiRoute } from './http/routes/openapi.js';
import { defaultWebDir, loadWebBundle, type WebBundle } from './http/web-bundle.js';
import type { Services } from './http/services.js';
import { registerEdgeGuard, requireHost } from './http/edge.js';
import { EdgeGuard } from './limits/edge-guard.js';
import { FreeModelPolicy } from './limits/free-model-policy.js';
import { MemoryRateLimiter } from './limits/memory-rate-limiter.js';
import type { RateLimiter } from './limits/rate-limit.js';
import { Metrics } from './observability/metrics.js';
import type { ChatDeps } from './pipeline/chat-completion.js';
import { moderationStep } from './pipeline/moderation-step.js';
import { createModerator } from './moderation/create-moderator.js';
import { adapterFor } from './providers/registry.js';
import { ByokCredentials } from './routing/byok-credentials.js';
import type { Catalog } from './routing/catalog.js';
import type { AdaptiveFirstToken } from './routing/first-token-limit.js';
import { HealthRegistry } from './routing/health.js';
import { headerSecrets, SecretScrubber } from './routing/secret-scrubber.js';
import { AttemptAbort } from './routing/upstream-client.js';
import { shuttingDownError } from './routing/failure.js';
import type { Store } from './store/types.js';

export interface AppDeps {
  config: Config;
  store: Store;
  catalog: Catalog;
  bus: ChangeBus;
  clock: Clock;
  dispatcherFor(providerId: string): Dispatcher;
  metrics?: Metrics;
  /** A pino logger (main.ts builds it from the config); silent when omitted. */
  logger?: FastifyBaseLogger;
  /**
   * Free-model rate-limit counters: main.ts passes a RedisRateLimiter when REDIS_URL is set (and
   * closes it); in-process counters when omitted.
   */
  rateLimiter?: { limiter: RateLimiter; store: 'memory' | 'redis'; ping?(): Promise<void> };
  /** In-flight credit holds: main.ts passes a RedisHoldStore when REDIS_URL is set (and closes it); in-process when omitted. */
  holds?: HoldStore;
  /** Grace admissions during a database outage (main.ts: in Redis, counted for the fleet); in-process when omitted. */
  graceExposure?: GraceExposure;
  /** The processes sharing `holds` (main.ts: a RedisFleet on the same connection); decides when Redis is trusted. */
  fleet?: FleetView;
  /** Where endpoint health is shared with the fleet (main.ts: Redis pub/sub); per process when omitted. */
  healthChannel?: HealthChannel;
  /** The charge journal (main.ts opens it in TOLLGATE_DATA_DIR and closes it); without one a charge needs the store. */
  journal?: ChargeJournal | null;
  /** Where free space is watched (the journal's and the embedded store's directory). */
  dataDir?: string | null;
  /** Apply the journal's leftover charges at once (default); false while the store is not migrated yet (then call `recoverCharges`). */
  recoverCharges?: boolean;
  /** How mail leaves (tests may pass their own); default: SMTP from TOLLGATE_SMTP_URL, or none (mail stays in the outbox). */
  mailTransport?: MailTransport | null;
  /** The dashboard's built files; default: read from `dist/web` at build time (pages answer 503 when absent). */
  web?: WebBundle;
}

export interface Gateway {
  app: FastifyInstance;
  services: Services;
  /** Stop accepting, let in-flight requests finish for up to `graceMs`, abort the rest, commit every charge. */
  shutdown(graceMs: number): Promise<void>;
  /** The registered routes and their declared authentication. */
  routes: RouteTable;
  /** Starts applying the charges an earlier process left in the journal; their number. */
  recoverCharges(): number;
  /** Starts the background jobs (the outbox sender when mail is configured, the key-expiry sweep); shutdown stops them. */
  startBackground(): void;
}

/**
 * How long shutdown waits, once the server is closed, for route handlers still running (e.g. settling a
 * cut stream). Generous: on a loaded machine a handler woken by the forced close can take seconds to
 * queue its charge, and a charge not queued before the drain is only recovered from a checkpoint.
 */
const SHUTDOWN_HANDLER_WAIT_MS = 15_000;

async function waitFor(promises: readonly Promise<unknown>[], timeoutMs: number): Promise<void> {
  if (promises.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled(promises),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
  ]);
  clearTimeout(timer);
}

function adaptiveFirstTokenPolicy(config: Config['routing']['adaptive_first_token']): AdaptiveFirstToken | null {
  return config.enabled
    ? { multiplier: config.multiplier, minSamples: config.min_samples, maxMs: config.max_ms }
    : null;
}

function sessionPolicy(config: Config) {
  const hours = 3_600_000;
  const { absolute_hours, idle_hours, renew_every_minutes } = config.accounts.session;
  return { absoluteMs: absolute_hours * hours, idleMs: idle_hours * hours, renewEveryMs: renew_every_minutes * 60_000 };
}

export function buildApp(deps: AppDeps): Gateway {
  const { config, store, catalog, bus, clock } = deps;
  const now = () => clock.now();
  const metrics = deps.metrics ?? new Metrics();
  const app = createHttpServer(config.server, deps.logger ?? pino({ level: 'silent' }), (outcome) =>
    metrics.connectionSlots.inc({ outcome }),
  );

  const shutdownController = new AbortController();
  let shuttingDown = false;

  const breaker = config.routing.breaker;
  const health = new HealthRegistry({
    failureThreshold: breaker.failure_threshold,
    openMs: breaker.open_ms,
    maxOpenMs: breaker.max_open_ms,
    probeTimeoutMs: 60_000,
  });
  const sharedEndpoints = new Set(
    [...catalog.models.values()].flatMap((m) => m.endpoints.map((e) => HealthRegistry.keyOf(m.id, e.provider.id))),
  );
  const fleetHealth = deps.healthChannel
    ? new FleetHealth({ health, channel: deps.healthChannel, now, knows: (key) => sharedEndpoints.has(key) })
    : null;
  const storeHealth = new StoreHealth(now);
  const remembered = lastKnownStore(store, storeHealth);
  const gate = new CreditGate({
    store: remembered.store,
    bus,
    now,
    ttlMs: config.cache.balance_ttl_ms,
    ...(deps.holds ? { holds: deps.holds } : {}),
    ...(deps.fleet ? { fleet: deps.fleet } : {}),
    onHoldStoreError: config.billing.on_hold_store_error,
    holdTtlMs: config.billing.hold_ttl_ms,
    onHoldError: (error, operation) =>
      app.log.warn(
        { err: error, operation },
        operation === 'report'
          ? "could not write this process's holds for the Redis outage to the database (it tries 5 times, 500 ms apart)"
          : 'credit hold store call failed; the hold expires on its own',
      ),
  });
  const mailMetrics = registerMailMetrics(metrics.registry, store.outbox, now);
  const mail = new MailOutbox(store.outbox, mailMetrics, now, config.mail.from, config.mail.public_url);
  const exposed: ExposedKeyDeps = { store, bus, mail, now };
  const usageAlerts = new UsageAlerts({
    store,
    mail,
    now,
    log: app.log,
    defaultThreshold: usdToUnits(config.notifications.low_balance_threshold),
    delayMs: config.notifications.check_delay_ms,
  });
  const settler = new Settler({
    store,
    // Committed charges reach admission through the hold store (gate.settle), not by editing snapshots.
    // Balance and key-limit notices are checked later, off the charge's path.
    onCommitted: (settlements, outcomes) => {
      metrics.settleBatch.observe(settlements.length);
      usageAlerts.noteCharges(settlements, outcomes);
    },
    // A crashed process's journaled charges, replayed: the holds it kept for them become the charges.
    onRecovered: (settlements) => {
      for (const { generation } of settlements) void gate.settleRecovered(generation);
    },
    onRefused: () => metrics.chargesRefused.inc(),
    journal: deps.journal ?? null,
    health: storeHealth,
    log: app.log,
  });
  const admission = new ChargeAdmission({
    gate,
    settler,
    journal: deps.journal ?? null,
    health: storeHealth,
    lastKnown: remembered.lastKnown,
    store,
    policy: {
      onStoreError: config.billing.on_store_error,
      maxExposure: usdToUnits(config.billing.grace.max_exposure_usd),
      maxDurationMs: config.billing.grace.max_duration_ms,
      maxJournalEntries: config.billing.journal.max_entries,
      minFreeBytes: config.billing.journal.min_free_bytes,
    },
    ...(deps.graceExposure ? { grace: deps.graceExposure } : {}),
    dataDir: deps.dataDir ?? null,
    now,
    log: app.log,
    registry: metrics.registry,
  });
  // Charges an earlier process left in the journal go to the store first; /readyz waits for them.
  if (deps.recoverCharges !== false) settler.recover();
  void admission.start();
  const secretBox = config.masterKey
    ? new SecretBox(parseMasterKey(config.masterKey), config.previousMasterKeys.map(parseMasterKey))
    : null;
  // One limiter for free-model counters and sign-in attempts (in-process, or Redis for a fleet).
  const limiter = deps.rateLimiter?.limiter ?? new MemoryRateLimiter();
  const chat: ChatDeps = {
    catalog,
    gate: gateWithAdmission(gate, admission),
    settler,
    ...(deps.journal ? { checkpointMs: config.billing.journal.checkpoint_ms } : {}),
    metrics,
    log: app.log,
    now,
    keepAliveMs: config.server.keep_alive_interval_ms,
    // The moderation endpoint (mode `openai`) gets the pool the composition root gives the pseudo-provider `@moderation`.
    moderation: moderationStep(
      config.moderation,
      createModerator(config.moderation, () => deps.dispatcherFor('@moderation')),
      app.log,
      (outcome) => metrics.moderation.inc({ outcome }),
    ),
    execute: {
      // Every upstream text is scrubbed of every configured provider key, and of the credentials in
      // providers' extra headers, before a caller or a log sees it.
      secrets: new SecretScrubber(
        [...catalog.providers.values()].flatMap((p) => [p.apiKey, ...headerSecrets(p.headers)]),
      ),
      dispatcherFor: deps.dispatcherFor,
      adapterFor,
      now,
      health,
      // A stream far past the completion limit it was sent is stopped (routing/output-budget.ts).
      countTokens: estimateCompletionTokens,
      policy: {
        maxAttempts: config.routing.max_attempts,
        budgetMs: config.routing.budget_ms,
        triesPerEndpoint: config.routing.tries_per_endpoint,
        retryBackoffMs: config.routing.retry_backoff_ms,
        maxRetryWaitMs: config.routing.max_retry_wait_ms,
        adaptiveFirstToken: adaptiveFirstTokenPolicy(config.routing.adaptive_first_token),
      },
    },
    freeModels: new FreeModelPolicy({
      limiter,
      store: deps.rateLimiter?.store ?? 'memory',
      ...(deps.rateLimiter?.ping ? { ping: deps.rateLimiter.ping } : {}),
      limits: config.limits.free_models,
      now,
      log: app.log,
      onRefused: (limit) => metrics.rateLimited.inc({ limit }),
    }),
    capacity: new CapacityGovernor({
      limiter,
      onStoreError: config.limits.capacity.on_store_error,
      log: app.log,
      onRefused: (limit) => metrics.rateLimited.inc({ limit }),
    }),
    byok: new ByokCredentials(store, secretBox, bus, now, app.log, {
      staleOnOutageMs: config.billing.grace.max_duration_ms,
    }),
    byokFeeBasisPoints: Math.round(config.billing.byok_fee_percent * 100),
    continuation: config.routing.mid_stream_continuation,
    keyLeaks: keyLeakStep(
      config.secret_scanning.in_requests,
      (keys, action) => void notifyKeysInRequest(exposed, keys, action, app.log),
    ),
  };
  const services: Services = {
    ...(deps.fleet ? { fleet: deps.fleet } : {}),
    config,
    store,
    catalog,
    bus,
    metrics,
    auth: new Authenticator({
      store,
      bus,
      now,
      ttlMs: config.cache.key_ttl_ms,
      // A store outage does not end grace (or a free model's service) at the key cache's TTL.
      staleOnOutageMs: config.billing.grace.max_duration_ms,
    }),
    gate,
    chat,
    keys: { store, bus, now, catalog },
    accountAuth: {
      store,
      now,
      signup: config.accounts.signup,
      sessions: new SessionService(store.accountAuth, sessionPolicy(config), now),
      guard: new SignInGuard(
        limiter,
        {
          perAccountAndAddress: config.accounts.sign_in_limits.per_account_and_address,
          perAccount: config.accounts.sign_in_limits.per_account,
          perAddress: config.accounts.sign_in_limits.per_address,
          passwordResetPerAddress: config.accounts.sign_in_limits.password_reset_per_address,
          windowMs: config.accounts.sign_in_limits.window_minutes * 60_000,
        },
        now,
      ),
    },
    freeModels: chat.freeModels,
    now,
    requestAborts: new RequestAborts(shutdownController.signal),
    health,
    admission,
    mail,
  };

  // Request metrics, then the edge guard (so its refusals are counted), `Host`, then bodies and headers.
  installRequestMetrics(app, metrics);
  registerEdgeGuard(app, new EdgeGuard(config.limits.edge, now), () => metrics.rateLimited.inc({ limit: 'edge' }));
  requireHost(app);
  registerCors(app);
  // After the request metrics and CORS (its answer is counted, logged and readable cross-origin).
  // Once stopping, a request that still arrives (on a kept-alive connection busy when the listener
  // closed) gets the error record, not Fastify's own 503 body (`return503OnClosing` is off), and the
  // connection is closed after it; the probes still answer (`/readyz` says it is shutting down).
  // A callback hook, not an async one: it runs on every request, and a promise per request is not free.
  app.addHook('onRequest', (request, reply, done) => {
    if (!shuttingDown) return done();
    const route = request.routeOptions.url;
    if (route === '/readyz' || route === '/healthz') return done();
    reply.header('connection', 'close');
    done(shuttingDownError());
  });
  registerJsonBody(app, { maxDepth: config.server.json_max_depth, maxElements: config.server.json_max_elements });
  registerResponseHeaders(app);
  const routes = new RouteTable(
    app,
    routeGuard(app, principalResolvers(services)),
    config.server.small_body_limit_bytes,
  );
  installNotFound(app, routes);
  // Every route handler in flight, so shutdown can wait for the ones woken by the forced connection close.
  const inFlight = trackHandlersInFlight(app);

  registerChatRoutes(routes, services);
  registerAccountRoutes(routes, services);
  registerKeyRoutes(routes, services);
  registerActivityRoutes(routes, services);
  registerRankingsRoutes(routes, services);
  registerCatalogRoutes(routes, services);
  registerAdminRoutes(routes, services);
  registerByokRoutes(routes, services, { store, bus, catalog, box: secretBox, now });
  registerOpsRoutes(routes, services, () => shuttingDown);
  registerNotificationRoutes(routes, services);
  registerOutboxAdminRoutes(routes, services);
  registerPasswordResetRoutes(routes, {
    store,
    mail,
    now,
    log: app.log,
    publicUrl: config.mail.public_url,
    guard: services.accountAuth.guard,
  });
  registerSecretScanningRoutes(app, routes, {
    exposed,
    keys: new PublicKeyRing(config.secret_scanning, now, app.log),
    maxBodyBytes: config.secret_scanning.max_body_bytes,
    maxTokens: config.secret_scanning.max_tokens,
  });

  const transport =
    deps.mailTransport !== undefined
      ? deps.mailTransport
      : config.smtpUrl
        ? smtpTransport(config.smtpUrl, config.mail.from, config.mail.send_timeout_ms)
        : null;
  const sender = transport
    ? new OutboxSender({
        store: store.outbox,
        transport,
        metrics: mailMetrics,
        log: app.log,
        now,
        pollMs: config.mail.poll_interval_ms,
        retryBaseMs: config.mail.retry_base_ms,
        retryMaxMs: config.mail.retry_max_ms,
        maxAttempts: config.mail.max_attempts,
        // Longer than any one send (three phases bounded by the send timeout), so a live sender keeps its message.
        leaseMs: Math.max(60_000, 4 * config.mail.send_timeout_ms),
        // A reset link is useless once its token expired: such a message is given up, not sent late.
        expiresAfterMs: { password_reset: RESET_TOKEN_TTL_MS },
      })
    : null;
  if (sender) mail.onQueued(() => sender.wake());
  const expirySweep = new ExpirySweep({
    store,
    mail,
    now,
    log: app.log,
    days: config.notifications.key_expiry_days,
    intervalMs: config.notifications.sweep_interval_ms,
  });
  let backgroundStarted = false;
  function startBackground(): void {
    if (backgroundStarted || shuttingDown) return;
    backgroundStarted = true;
    sender?.start();
    expirySweep.start();
  }
  registerSessionRoutes(routes, services);
  registerOAuthRoutes(routes, services);
  registerAccountHolderRoutes(routes, services);
  registerWebRoutes(routes, deps.web ?? loadWebBundle(defaultWebDir()));
  // Last: the document lists every route registered before it (and itself).
  registerOpenApiRoute(routes);

  async function shutdown(graceMs: number): Promise<void> {
    if (shuttingDown) return;
    shuttingDown = true;
    const closing = app.close();
    const deadline = setTimeout(() => {
      shutdownController.abort(new AttemptAbort('shutdown'));
      // Streams end with an in-band error; then nothing may keep the listener open.
      setTimeout(() => app.server.closeAllConnections(), 1000).unref();
    }, graceMs);
    try {
      await closing;
    } finally {
      clearTimeout(deadline);
      // Handlers woken by the forced close may not have queued their charge yet: wait for them
      // (bounded), then drain, so every charge is committed before the caller closes the store.
      await waitFor([...inFlight], SHUTDOWN_HANDLER_WAIT_MS);
      await settler.drain();
      settler.stop();
      admission.close();
      await gate.close();
      await fleetHealth?.close();
      // The last charges' notices are queued before the sender stops (what it cannot send waits in the outbox).
      await usageAlerts.close();
      await expirySweep.stop();
      await sender?.stop();
    }
  }

  return { app, services, shutdown, routes, recoverCharges: () => settler.recover(), startBackground };
}
