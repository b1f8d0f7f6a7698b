/** Provider kind → adapter. The demo provider speaks OpenAI's protocol (it is the simulator on loopback). */
import type { ProviderAdapter, ProviderKind } from './types.js';
import { anthropicAdapter } from './anthropic/adapter.js';
import { ANTHROPIC_UNSENT_PARAMETERS } from './anthropic/request-body.js';
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
 * Request parameters a provider kind's translation never sends upstream: its endpoints cannot support
 * them, whatever the config declares (OpenAI-compatible servers get every parameter as given).
 */
export function unsentParameters(kind: ProviderKind): readonly string[] {
  switch (kind) {
    case 'openai':
    case 'demo':
      return [];
    case 'anthropic':
      return ANTHROPIC_UNSENT_PARAMETERS;
    case 'gemini':
      return GEMINI_UNSENT_PARAMETERS;
  }
}
