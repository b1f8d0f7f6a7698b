/**
 * Prometheus metrics. One registry per app instance (tests build many apps in one process).
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: 'tollgate_http_requests_total',
    help: 'HTTP requests by route, method and status',
    labelNames: ['route', 'method', 'status'],
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'tollgate_http_request_duration_seconds',
    help: 'HTTP request duration by route (for streams: until the last byte)',
    labelNames: ['route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  readonly completions = new Counter({
    name: 'tollgate_completions_total',
    help: 'Chat completions by model, provider and status',
    labelNames: ['model', 'provider', 'status', 'streamed'],
    registers: [this.registry],
  });
  readonly timeToFirstToken = new Histogram({
    name: 'tollgate_time_to_first_token_seconds',
    help: 'Time from request to first content (or whole answer when not streamed), by model and provider',
    labelNames: ['model', 'provider'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly upstreamAttempts = new Counter({
    name: 'tollgate_upstream_attempts_total',
    help: 'Upstream attempts by provider and outcome',
    labelNames: ['provider', 'outcome'],
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: 'tollgate_tokens_total',
    help: 'Tokens charged by model, provider and kind',
    labelNames: ['model', 'provider', 'kind'],
    registers: [this.registry],
  });
  /** Completion tokens a provider counted past the limit its request carried: not charged (README "The overspend bound"). */
  readonly completionOverLimit = new Counter({
    name: 'tollgate_completion_tokens_over_limit_total',
    help: 'Completion tokens an upstream counted beyond the completion limit it was sent (not charged to the caller), by provider',
    labelNames: ['provider'],
    registers: [this.registry],
  });
  readonly creditsCharged = new Counter({
    name: 'tollgate_credits_charged_usd_total',
    help: 'Credits charged (USD) by model and provider',
    labelNames: ['model', 'provider'],
    registers: [this.registry],
  });
  readonly rateLimited = new Counter({
    name: 'tollgate_rate_limited_total',
    help: 'Requests (or, for capacity_rpm/capacity_tpm, attempts on an endpoint) refused by a platform limit, by limit (edge, free_model_per_minute, free_model_per_day, capacity_rpm, capacity_tpm)',
    labelNames: ['limit'],
    registers: [this.registry],
  });
  readonly connectionSlots = new Counter({
    name: 'tollgate_connection_slots_total',
    help: 'At server.max_connections: new client connections refused, and idle connections of the address holding the most closed to make room for another address (outcome: refused, made_room)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly moderation = new Counter({
    name: 'tollgate_moderation_checks_total',
    help: 'Moderated chat requests by outcome (passed, flagged, error_blocked, error_allowed)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  /** Charges the store refused outright (not an outage): each is logged; any at all needs an operator. */
  readonly chargesRefused = new Counter({
    name: 'tollgate_charges_refused_total',
    help: 'Charges the store refused outright (not an outage) and that were given up; each is logged with its generation id',
    registers: [this.registry],
  });
  readonly settleBatch = new Histogram({
    name: 'tollgate_settle_batch_size',
    help: 'Charges committed per store transaction (group commit)',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
    registers: [this.registry],
  });

  /**
   * How long a request's answer waited for its charge to be durable (queued for the group commit,
   * then committed in the store or fsync'd in the journal): the part of the latency that pays for
   * the money promise.
   */
  readonly settleWait = new Histogram({
    name: 'tollgate_settle_wait_seconds',
    help: "Time a request waited for its charge to be durable (the store's commit or the journal's fsync)",
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 3],
    registers: [this.registry],
  });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'tollgate_' });
  }
}
