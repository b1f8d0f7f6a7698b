/**
 * Child process: the simulated OpenAI-compatible provider on loopback ports — HTTP/1.1 for every
 * section, and h2c (HTTP/2 without TLS) for the memory row's streams (`providers[].http2`).
 */
import { startMockProvider, type MockProvider } from '../providers/mock-server.js';
import { serveHelper } from './child-process.js';

let provider: MockProvider | null = null;
let h2: MockProvider | null = null;

serveHelper({
  start: async (): Promise<string> => {
    provider ??= await startMockProvider({ host: '127.0.0.1', port: 0 });
    return provider.url;
  },
  startH2: async (): Promise<string> => {
    h2 ??= await startMockProvider({ host: '127.0.0.1', port: 0, http2: true });
    return h2.url;
  },
  requests: (): number => (provider?.stats.requests ?? 0) + (h2?.stats.requests ?? 0),
  /** Connections the h2c provider accepted so far. */
  h2Connections: (): number => h2?.stats.connections ?? 0,
});
