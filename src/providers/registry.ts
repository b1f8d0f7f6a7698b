/** Provider kind → adapter. The demo provider speaks OpenAI's protocol (it is the simulator on loopback). */
import type { ProviderAdapter, ProviderKind } from './types.js';
import { anthropicAdapter } from './anthropic/adapter.js';
import { geminiAdapter } from './gemini/adapter.js';
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
