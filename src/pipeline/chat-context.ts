/**
 * One chat request as the pipeline's steps see it: its generation id, the authenticated key, the
 * body, the app it is attributed to, and its abort signal. Its own module: the moderation step needs
 * it, and the chat pipeline's other types need the moderation step.
 */
import type { CancelSignal } from '../core/cancellation.js';
import type { KeyRecord } from '../store/types.js';
import type { AppAttribution } from './generation.js';

export interface ChatContext {
  generationId: string;
  key: KeyRecord;
  body: unknown;
  app: AppAttribution;
  /** Aborted when the caller disconnects or the process shuts down. */
  signal: CancelSignal;
}
