/**
 * /healthz (process up), /readyz (store reachable; Redis reachable, or paid requests served without it), /metrics
 * (Prometheus; behind TOLLGATE_METRICS_TOKEN when it is set, and absent here when `server.metrics`
 * gives it a listener of its own, see metrics-listener.ts).
 */
import { z } from 'zod';
import { TIMED_OUT, within } from '../../core/within.js';
import type { RouteTable } from '../route-table.js';
import { json } from '../route-doc.js';
import { readinessSchema } from '../../pipeline/response-schemas.js';
import type { Services } from '../services.js';

/**
 * How long /readyz waits for the store: a load balancer's probe (often 1–2 s) must get the 503, not a
 * timeout of its own (outside check: 5–15 s while PostgreSQL was stopped with SIGSTOP).
 */
const PING_WAIT_MS = 1_000;

export function registerOpsRoutes(routes: RouteTable, services: Services, isShuttingDown: () => boolean): void {
  routes.add('GET', '/healthz', async () => ({ status: 'ok' }), {
    auth: 'none',
    doc: {
      summary: 'The process is up',
      tag: 'Operations',
      responses: { 200: json(z.object({ status: z.literal('ok') })) },
    },
  });

  routes.add(
    'GET',
    '/readyz',
    async (_request, reply) => {
      if (isShuttingDown()) return reply.code(503).send({ status: 'shutting_down', reasons: ['shutting_down'] });
      let storeOk: boolean;
      try {
        // A store that is merely silent (SIGSTOP, a network partition) is not ready, but not yet an
        // outage either: the requests that meet it decide that, with their own deadlines.
        storeOk = (await within(services.store.ping(), PING_WAIT_MS)) !== TIMED_OUT;
        if (storeOk) services.admission?.storeAnswered();
      } catch (error) {
        storeOk = false;
        services.admission?.storeFailed(error);
      }
      // Charge admission (README "The charge journal and store outages"): 503 while paid requests are
      // refused or the boot replay is pending; 200 `degraded` while they are served under grace.
      const admission = services.admission?.status();
      if (admission && admission.state !== 'ok') {
        const body = {
          status: admission.state,
          store: services.store.dialect,
          reasons: admission.reasons,
          journal: admission.journal,
        };
        if (admission.state === 'degraded' && services.freeModels.store === 'redis') {
          // Grace counts its exposure in Redis: with Redis unreachable or resyncing too, every paid
          // request is refused (README: "Redis unreachable too: no grace"), and `degraded` would keep
          // the load balancer sending them here (outside check).
          const redis = await redisTrouble(services);
          if (redis !== null)
            return reply
              .code(503)
              .send({ ...body, status: 'unavailable', redis, reasons: [...admission.reasons, `redis_${redis}`] });
        }
        return reply.code(admission.state === 'degraded' ? 200 : 503).send(body);
      }
      if (!storeOk)
        return reply
          .code(503)
          .send({ status: 'unavailable', store: services.store.dialect, reasons: ['store_unavailable'] });
      // Redis (REDIS_URL) holds the shared counters. Without it a process that serves paid requests from
      // its share (docs/architecture.md, "Redis outages") is degraded but ready: taking every process out
      // of the load balancer would turn a Redis outage into a full one. Otherwise it is not ready.
      if (services.freeModels.store === 'redis') {
        try {
          await services.freeModels.ping();
        } catch {
          const fleet = services.fleet;
          if (fleet?.seen && services.config.billing.on_hold_store_error === 'share') {
            return {
              status: 'degraded',
              store: services.store.dialect,
              redis: 'unavailable',
              reasons: ['redis_unavailable'],
            };
          }
          return reply.code(503).send({
            status: 'unavailable',
            store: services.store.dialect,
            redis: 'unavailable',
            reasons: ['redis_unavailable'],
          });
        }
        if (services.fleet && !services.fleet.trusted)
          return {
            status: 'degraded',
            store: services.store.dialect,
            redis: 'resyncing',
            reasons: ['redis_resyncing'],
          };
        return { status: 'ready', store: services.store.dialect, redis: 'ok' };
      }
      return { status: 'ready', store: services.store.dialect };
    },
    {
      auth: 'none',
      doc: {
        summary: 'Whether this process should receive traffic',
        description:
          '200 `ready`, or `degraded` while paid requests are still served (store or Redis outage under grace or share); 503 otherwise, with the reasons.',
        tag: 'Operations',
        responses: {
          200: json(readinessSchema, 'Ready, or degraded but serving'),
          503: json(readinessSchema, 'Not ready'),
        },
      },
    },
  );

  if (services.config.server.metrics !== null) return;
  routes.add(
    'GET',
    '/metrics',
    async (_request, reply) => {
      const text = await services.metrics.registry.metrics();
      return reply.type(services.metrics.registry.contentType).send(text);
    },
    {
      auth: 'metrics',
      doc: {
        summary: 'Prometheus metrics',
        tag: 'Operations',
        responses: { 200: { description: 'Prometheus text exposition', media: ['text/plain'] } },
      },
    },
  );
}

/** Redis (REDIS_URL) unreachable, or reachable but not yet trusted after a loss of its data; null: fine. */
async function redisTrouble(services: Services): Promise<'unavailable' | 'resyncing' | null> {
  try {
    await services.freeModels.ping();
  } catch {
    return 'unavailable';
  }
  return services.fleet && !services.fleet.trusted ? 'resyncing' : null;
}
