/** Child process: the simulated OpenAI-compatible provider on a loopback port. */
import { startMockProvider, type MockProvider } from '../providers/mock-server.js';
import { serveHelper } from './child-process.js';

let provider: MockProvider | null = null;

serveHelper({
  start: async (): Promise<string> => {
    provider ??= await startMockProvider({ host: '127.0.0.1', port: 0 });
    return provider.url;
  },
  requests: (): number => provider?.stats.requests ?? 0,
});
