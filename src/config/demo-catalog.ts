/** The catalog used when no config file is given: one simulated provider, clearly named as a demo. */
import type { FileConfig } from './schema.js';

export const DEMO_PROVIDER_ID = 'tollgate-demo';

/**
 * What the simulator honours (it ends at `stop` and `max_tokens`; sampling parameters change nothing a
 * generated text could show). Not tools or `response_format`: listed, a client choosing models by
 * `supported_parameters` would pick it for tool calls or structured output and get prose.
 */
const DEMO_PARAMETERS = ['max_tokens', 'temperature', 'top_p', 'stop', 'seed', 'frequency_penalty', 'presence_penalty'];

export const demoFileConfig = {
  providers: [
    {
      id: DEMO_PROVIDER_ID,
      name: 'Tollgate Demo',
      kind: 'demo',
      headers: {},
      privacy_policy_url: null,
      stream_upstream: true,
      timeouts: { connect_ms: 10_000, first_token_ms: 30_000, idle_ms: 60_000, response_ms: 300_000 },
      // The simulated provider in this process keeps nothing of a request.
      data_collection: 'deny',
      zdr: true,
    },
  ],
  models: [
    {
      id: 'tollgate/demo-chat',
      name: 'Tollgate Demo Chat (simulated)',
      description:
        'A simulated model served by the built-in demo provider: it answers offline with generated text at a realistic token rate. Not a real language model.',
      context_length: 32_768,
      endpoints: [
        {
          provider: DEMO_PROVIDER_ID,
          model: 'demo-chat',
          pricing: { prompt: '0.000001', completion: '0.000002' },
          max_completion_tokens: 4096,
          supported_parameters: DEMO_PARAMETERS,
        },
      ],
    },
    {
      id: 'tollgate/demo-chat:free',
      name: 'Tollgate Demo Chat (simulated, free)',
      description: 'The free variant of the simulated demo model, under the free-model rate limits.',
      context_length: 32_768,
      endpoints: [
        {
          provider: DEMO_PROVIDER_ID,
          model: 'demo-chat',
          pricing: { prompt: '0', completion: '0' },
          max_completion_tokens: 4096,
          supported_parameters: DEMO_PARAMETERS,
        },
      ],
    },
  ],
} satisfies Record<keyof Pick<FileConfig, 'providers' | 'models'>, unknown>;
