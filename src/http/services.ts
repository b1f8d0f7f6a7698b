/** What routes may use: the composed domain services (built once in `app.ts`). */
import type { Authenticator } from '../auth/authenticator.js';
import type { CreditGate } from '../billing/credit-gate.js';
import type { ChargeAdmission } from '../billing/charge-admission.js';
import type { FleetView } from '../core/fleet.js';
import type { ChangeBus } from '../core/change-bus.js';
import type { Config } from '../config/schema.js';
import type { Metrics } from '../observability/metrics.js';
import type { ChatDeps } from '../pipeline/chat-completion.js';
import type { KeyServiceDeps } from '../pipeline/key-management.js';
import type { MailOutbox } from '../mail/mail-outbox.js';
import type { SignInDeps } from '../pipeline/sign-in.js';
import type { FreeModelPolicy } from '../limits/free-model-policy.js';
import type { Catalog } from '../routing/catalog.js';
import type { HealthRegistry } from '../routing/health.js';
import type { Store } from '../store/types.js';
import type { RequestAborts } from './request-aborts.js';

export interface Services {
  config: Config;
  store: Store;
  catalog: Catalog;
  bus: ChangeBus;
  metrics: Metrics;
  auth: Authenticator;
  gate: CreditGate;
  chat: ChatDeps;
  keys: KeyServiceDeps;
  /** Account holders: passwords, sessions, sign-in limits, sign-up policy. */
  accountAuth: SignInDeps;
  freeModels: FreeModelPolicy;
  now(): number;
  /** The chat requests in flight: aborted when shutdown's grace period is over (their upstream requests end). */
  requestAborts: RequestAborts;
  /** Measured endpoint health (circuit breakers, uptime, latency, throughput). */
  health: HealthRegistry;
  /** Paid admission under store and journal failures; its status feeds /readyz. */
  admission?: ChargeAdmission;
  /** The processes sharing Redis (absent without REDIS_URL): whether paid requests are served while Redis is away. */
  fleet?: FleetView;
  /** Outgoing mail: compose and queue in the outbox. */
  mail: MailOutbox;
}
