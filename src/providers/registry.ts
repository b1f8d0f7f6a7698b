/** Provider kind → adapter. The demo provider speaks OpenAI's protocol (it is the simulator on loopback). */
import type { ProviderAdapter, ProviderKind } from './types.js';
import { anthropicAdapter } from './anthropic/adapter.js';
import { anthropicUnsentParameters } from './anthropic/request-body.js';
import { geminiAdapter } from './gemini/adapter.js';
import { GEMINI_UNSENT_PARAMETERS } from './gemini/request-body.js';
import { openAiAdapter } from './openai/adapter.js';

export function adapterFor(kind: ProviderKind): ProviderAdapter {
  switch (kind) {
    case 'openai':
    case 'demo':
      return openAiAdapter;
    case 'anthropic':
      return anthropicAdapter;
    case 'gemini':
      return geminiAdapter;
  }
}

/**
 * Request parameters a provider kind's translation never sends upstream to an endpoint declaring
 * `declared`: it cannot support them, whatever the config says (OpenAI-compatible servers get every
 * parameter as given).
 */
export function unsentParameters(kind: ProviderKind, declared: readonly string[]): readonly string[] {
  switch (kind) {
    case 'openai':
    case 'demo':
      return [];
    case 'anthropic':
      return anthropicUnsentParameters(declared);
    case 'gemini':
      return GEMINI_UNSENT_PARAMETERS;
  }
}
