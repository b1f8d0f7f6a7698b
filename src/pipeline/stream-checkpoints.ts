/**
 * Stream checkpoints: every `checkpointMs` while a stream runs, the charge of what it delivered so
 * far is written to the charge journal as a provisional entry with the stream's generation id. If
 * the process is killed (SIGKILL, OOM) the next start charges the last checkpoint; if the stream
 * ends normally its final charge supersedes the checkpoints (same id, so never counted twice). Each
 * checkpoint keeps the request's hold counted by the other processes until this one's replay settles
 * it, so they do not admit against credit the replayed charge takes.
 */
import { usagePeriods } from '../core/usage-window.js';
import type { ChatDeps } from './chat-types.js';
import { buildCharge, type ChargeInput } from './generation.js';

export interface Checkpoints<T> {
  /** The segment now being relayed (its `generated` text grows as chunks are forwarded). */
  observe(live: T): void;
  /** No more checkpoints; resolves when the last one written has reached the journal. */
  stop(): Promise<void>;
}

export function startCheckpoints<T extends { generated: string }>(
  deps: Pick<ChatDeps, 'settler' | 'checkpointMs' | 'byokFeeBasisPoints' | 'log'>,
  inputOf: (live: T) => ChargeInput,
  /** After a checkpoint reached the journal: the request's hold is kept past this process (CreditGate.keepForJournal). */
  journaled: () => void = () => undefined,
): Checkpoints<T> {
  let live: T | null = null;
  let lastLength = -1;
  let written: Promise<void> = Promise.resolve();
  const interval = deps.checkpointMs;
  const timer =
    interval === undefined
      ? null
      : setInterval(() => {
          // Nothing delivered yet, or nothing new since the last checkpoint: nothing to write.
          if (live === null || live.generated.length === 0 || live.generated.length === lastLength) return;
          lastLength = live.generated.length;
          // A timer's exception would end the process and every request in it: a checkpoint that
          // cannot be made is logged, and the stream's final charge still comes.
          try {
            const input = inputOf(live);
            const record = buildCharge(input, deps.byokFeeBasisPoints).record;
            written = written
              .then(async () => {
                if (await deps.settler.checkpoint({ generation: record, periods: usagePeriods(input.createdAt) }))
                  journaled();
              })
              .catch((error: unknown) => deps.log.error({ err: error }, 'a stream checkpoint could not be written'));
          } catch (error) {
            deps.log.error({ err: error }, 'a stream checkpoint could not be made');
          }
        }, interval);
  timer?.unref();
  return {
    observe(next) {
      live = next;
      lastLength = -1;
    },
    async stop() {
      if (timer) clearInterval(timer);
      await written;
    },
  };
}
