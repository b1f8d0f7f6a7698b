/** Provider kind → adapter. The demo provider speaks OpenAI's protocol (it is the simulator on loopback). */
import type { ProviderAdapter, ProviderKind } from './types.js';
import { openAiAdapter } from './openai/adapter.js';

export function adapterFor(kind: ProviderKind): ProviderAdapter {
  switch (kind) {
    case 'openai':
    case 'demo':
      return openAiAdapter;
    case 'anthropic':
    case 'gemini':
      throw new Error(`provider kind "${kind}" is not supported yet`);
  }
}
