/**
 * What an endpoint supports decides where a request goes (outside checkers' findings): a request with
 * tools only reaches endpoints that list `tools` (a cheaper one without them used to serve it and drop
 * or refuse the tools), and `require_parameters` with `max_completion_tokens` is met by an endpoint
 * listing `max_tokens` (every attempt carries a completion limit; the request was refused outright).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, getJson, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const MESSAGES = [{ role: 'user', content: 'Weather in Paris?' }];
const TOOLS = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } }];

describe('routing by what an endpoint supports', () => {
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      extraModels: [
        {
          id: 'test/tools-elsewhere',
          name: 'tools elsewhere',
          context_length: 8192,
          endpoints: [
            // The cheapest lists no tools.
            {
              provider: 'mock',
              model: 'mock-chat',
              pricing: { prompt: '0.0000001', completion: '0.0000002' },
              supported_parameters: ['max_tokens', 'temperature'],
            },
            {
              provider: 'mock-b',
              model: 'mock-chat',
              pricing: { prompt: '0.000001', completion: '0.000002' },
              supported_parameters: ['max_tokens', 'temperature', 'tools', 'tool_choice'],
            },
          ],
        },
      ],
    });
    key = (await gw.createKey(await gw.createAccount(5))).key;
  });
  afterAll(() => gw.close());

  it('a request with tools goes to the endpoint that lists them; one without, to the cheapest', async () => {
    const withTools = await chat(gw, key, { model: 'test/tools-elsewhere', messages: MESSAGES, tools: TOOLS });
    expect(withTools.status, withTools.text).toBe(200);
    expect(withTools.json.provider).toBe('Mock B');
    const generation = await getJson(gw, `/generation?id=${withTools.json.id}`, key);
    expect(generation.json.data.provider_responses.map((r: { provider_name: string }) => r.provider_name)).toEqual([
      'Mock B',
    ]);
    const plain = await chat(gw, key, { model: 'test/tools-elsewhere', messages: MESSAGES });
    expect(plain.json.provider).toBe('Mock');
    const nowhere = await chat(gw, key, {
      model: 'test/tools-elsewhere',
      messages: MESSAGES,
      tools: TOOLS,
      provider: { only: ['mock'] },
    });
    expect(nowhere.status).toBeGreaterThanOrEqual(400);
    expect(nowhere.json.error.message).toContain('does not support tool use');
  });

  it('require_parameters with max_completion_tokens is met by an endpoint that lists max_tokens', async () => {
    const r = await chat(gw, key, {
      model: 'test/chat',
      messages: MESSAGES,
      max_completion_tokens: 10,
      provider: { require_parameters: true },
    });
    expect(r.status, r.text).toBe(200);
  });
});
