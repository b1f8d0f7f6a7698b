/**
 * Boot steps of `tollgate serve` that keep money safe across crashes and outages: the charge
 * journal is opened (recovering what an earlier process left) and the disk headroom reported, and
 * the store is migrated — in the background, with backoff, when the database is down at boot, so the
 * gateway starts not ready instead of exiting.
 */
import { join } from 'node:path';
import { statfs } from 'node:fs/promises';
import type { Logger as PinoLogger } from 'pino';
import type { Gateway } from './app.js';
import { ChargeJournal } from './billing/charge-journal.js';
import { isStoreUnavailable } from './billing/store-health.js';
import { systemClock } from './core/clock.js';
import type { Config } from './config/schema.js';
import type { Store } from './store/types.js';

export async function openChargeJournal(config: Config, logger: PinoLogger): Promise<ChargeJournal> {
  const dir = join(config.dataDir, 'journal');
  const { journal, report } = await ChargeJournal.open(dir, { now: systemClock.now });
  for (const tail of report.damagedTails) {
    logger.warn(
      { file: tail.file, reason: tail.reason, ignored_bytes: tail.ignoredBytes },
      'charge journal: ignored a torn or damaged tail (a crash mid-write)',
    );
  }
  logger.info(
    {
      dir,
      slot: report.slot,
      recovered: report.recovered,
      checkpoints_charged: report.checkpointsCharged,
      adopted_slots: report.adoptedSlots,
    },
    report.recovered > 0
      ? `charge journal: ${report.recovered} charge(s) from an earlier process to apply before ready`
      : 'charge journal open',
  );
  try {
    const stats = await statfs(config.dataDir);
    const free = Number(stats.bavail) * Number(stats.bsize);
    const min = config.billing.journal.min_free_bytes;
    logger[free < min ? 'warn' : 'info'](
      { data_dir: config.dataDir, free_bytes: free, min_free_bytes: min },
      free < min
        ? 'data directory headroom is below billing.journal.min_free_bytes: paid requests are refused until space is freed'
        : 'data directory headroom',
    );
  } catch (error) {
    logger.warn({ err: error, data_dir: config.dataDir }, 'could not measure the data directory free space');
  }
  return journal;
}

export interface Migrations {
  /** True when the store was migrated during boot. */
  readonly done: boolean;
  /** When not done: marks the gateway as starting and retries until the store answers, then applies the journal. */
  whenDone(gateway: Gateway): void;
  stop(): void;
}

export async function startMigrations(store: Store, logger: PinoLogger): Promise<Migrations> {
  try {
    await store.migrate();
    return { done: true, whenDone: () => undefined, stop: () => undefined };
  } catch (error) {
    if (!isStoreUnavailable(error)) throw error;
    logger.warn({ err: error }, 'the database is unreachable at boot: starting not ready, retrying');
  }
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  return {
    done: false,
    whenDone(gateway) {
      const admission = gateway.services.admission;
      admission?.markBooting('migrations');
      let delay = 500;
      const attempt = () => {
        timer = null;
        store.migrate().then(
          () => {
            admission?.booted('migrations');
            const recovered = gateway.recoverCharges();
            logger.info({ recovered }, 'the database answers: migrated, ready once the journal is applied');
          },
          (error: unknown) => {
            if (stopped) return;
            if (!isStoreUnavailable(error)) logger.error({ err: error }, 'migrations failed; retrying');
            delay = Math.min(10_000, delay * 2);
            timer = setTimeout(attempt, delay);
            timer.unref();
          },
        );
      };
      timer = setTimeout(attempt, delay);
      timer.unref();
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
