/** The configured moderator (`moderation.mode`), built once at boot; null when moderation is off. */
import type { Dispatcher } from 'undici';
import type { ModerationConfig } from '../config/moderation-schema.js';
import { OpenAiModerator } from './openai-moderator.js';
import { PatternModerator } from './pattern-moderator.js';
import type { Moderator } from './types.js';

/** `dispatcherFor`: the connection pool of the moderation endpoint (asked for only in mode `openai`). */
export function createModerator(config: ModerationConfig, dispatcherFor?: () => Dispatcher): Moderator | null {
  switch (config.mode) {
    case 'off':
      return null;
    case 'patterns':
      return new PatternModerator(config.patterns, config.provider_name ?? 'Tollgate');
    case 'openai': {
      const endpoint = config.endpoint;
      if (!endpoint) throw new Error('moderation.endpoint is required for mode "openai"');
      return new OpenAiModerator({
        baseUrl: endpoint.base_url,
        apiKey: endpoint.api_key ?? null,
        model: endpoint.model,
        timeoutMs: endpoint.timeout_ms,
        name: config.provider_name ?? 'OpenAI',
        ...(dispatcherFor ? { dispatcher: dispatcherFor() } : {}),
      });
    }
  }
}
