import { describe, expect, it } from 'vitest';
import { TollgateError } from '../core/errors.js';
import { buildCatalog } from './catalog.js';
import { HealthRegistry } from './health.js';
import { planAttempts, type ProviderPreferences } from './plan.js';
import type { ByokCredential } from './byok-credentials.js';

const timeouts = { connect_ms: 1, first_token_ms: 1, idle_ms: 1, response_ms: 1 };
const provider = (id: string) => ({
  id,
  name: id.toUpperCase(),
  kind: 'openai' as const,
  base_url: `http://${id}.test/v1`,
  headers: {},
  privacy_policy_url: null,
  stream_upstream: true,
  whole_answer_without_finish_reason: 'invalid' as const,
  http2: false,
  timeouts,
});
const endpoint = (p: string, prompt: string, completion: string, supported?: string[]) => ({
  provider: p,
  model: `${p}-model`,
  pricing: { prompt, completion, request: '0' },
  max_completion_tokens: null,
  quantization: null as string | null,
  supports_prefill: false,
  ...(supported ? { supported_parameters: supported } : {}),
});
type DataPolicyConfig = { data_collection?: 'allow' | 'deny'; zdr?: boolean };
const model = (id: string, endpoints: (ReturnType<typeof endpoint> & DataPolicyConfig)[]) => ({
  id,
  name: id,
  description: '',
  context_length: 1000,
  input_modalities: ['text'],
  output_modalities: ['text'],
  tokenizer: null,
  instruct_type: null,
  supported_parameters: ['temperature', 'tools'],
  endpoints,
});

const catalog = buildCatalog({
  providers: [provider('a'), provider('b'), provider('c')],
  models: [
    model('x/m', [
      endpoint('a', '0.000003', '0.000003'),
      endpoint('b', '0.000001', '0.000001', ['temperature']),
      endpoint('c', '0.000002', '0.000002'),
    ]),
    model('x/fallback', [endpoint('c', '0.000001', '0.000001')]),
  ],
});
const anyKey = { allowedModels: null, allowedProviders: null };
const ids = (plan: ReturnType<typeof planAttempts>) => plan.map((p) => `${p.model.id}@${p.endpoint.provider.id}`);

function expectError(fn: () => unknown, code: string, fragment: string): void {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(TollgateError);
    expect((error as TollgateError).code).toBe(code);
    expect((error as TollgateError).message).toContain(fragment);
    return;
  }
  throw new Error('expected an error');
}

describe('planAttempts', () => {
  it('orders cheapest first by default, then the fallback models', () => {
    expect(ids(planAttempts(catalog, { model: 'x/m', models: ['x/fallback'] }, anyKey))).toEqual([
      'x/m@b',
      'x/m@c',
      'x/m@a',
      'x/fallback@c',
    ]);
  });

  it('puts unhealthy endpoints last, cooling ones in between', () => {
    const health = new HealthRegistry({ failureThreshold: 1, openMs: 10_000, maxOpenMs: 10_000, probeTimeoutMs: 1000 });
    health.recordFailure(HealthRegistry.keyOf('x/m', 'b'), 0, 'server', null);
    health.recordFailure(HealthRegistry.keyOf('x/m', 'c'), 0, 'rate_limited', 5_000);
    expect(ids(planAttempts(catalog, { model: 'x/m' }, anyKey, health, 1000))).toEqual(['x/m@a', 'x/m@c', 'x/m@b']);
  });

  it('honours order, only, ignore and allow_fallbacks', () => {
    expect(ids(planAttempts(catalog, { model: 'x/m', provider: { order: ['a'] } }, anyKey))).toEqual([
      'x/m@a',
      'x/m@b',
      'x/m@c',
    ]);
    expect(
      ids(planAttempts(catalog, { model: 'x/m', provider: { order: ['c', 'a'], allow_fallbacks: false } }, anyKey)),
    ).toEqual(['x/m@c', 'x/m@a']);
    expect(ids(planAttempts(catalog, { model: 'x/m', provider: { only: ['a', 'c'] } }, anyKey))).toEqual([
      'x/m@c',
      'x/m@a',
    ]);
    expect(ids(planAttempts(catalog, { model: 'x/m', provider: { ignore: ['b'] } }, anyKey))).toEqual([
      'x/m@c',
      'x/m@a',
    ]);
  });

  it('matches provider names case-insensitively, by id or display name', () => {
    const named = buildCatalog({
      providers: [
        { ...provider('together'), name: 'Together AI' },
        { ...provider('openai'), name: 'OpenAI' },
      ],
      models: [
        model('x/n', [endpoint('together', '0.000001', '0.000001'), endpoint('openai', '0.000002', '0.000002')]),
      ],
    });
    const plan = (prefs: ProviderPreferences) => ids(planAttempts(named, { model: 'x/n', provider: prefs }, anyKey));
    expect(plan({ only: ['OPENAI'] })).toEqual(['x/n@openai']);
    expect(plan({ only: ['together ai'] })).toEqual(['x/n@together']);
    expect(plan({ ignore: ['Together AI'] })).toEqual(['x/n@openai']);
    expect(plan({ order: ['OpenAI'] })).toEqual(['x/n@openai', 'x/n@together']);
    expect(plan({ order: ['OpenAI'], allow_fallbacks: false })).toEqual(['x/n@openai']);
    // The 503 names the provider and, where it differs, the caller's entry that excluded it.
    expectError(
      () => plan({ ignore: ['Together AI', 'openai'] }),
      'routing.no_endpoint',
      'provider.ignore excludes together ("Together AI"); provider.ignore excludes openai',
    );
  });

  it('filters by the declared data policy (data_collection: deny, zdr); undeclared counts as collecting, not ZDR', () => {
    const policies = buildCatalog({
      providers: [
        provider('silent'),
        { ...provider('nostore'), data_collection: 'deny' as const },
        { ...provider('zdr'), zdr: true },
        { ...provider('mixed'), data_collection: 'deny' as const },
      ],
      models: [
        model('x/p', [
          endpoint('silent', '0.000001', '0.000001'),
          endpoint('nostore', '0.000002', '0.000002'),
          endpoint('zdr', '0.000003', '0.000003'),
          // An endpoint's own declaration replaces its provider's.
          { ...endpoint('mixed', '0.000004', '0.000004'), zdr: true },
        ]),
        model('x/q', [
          endpoint('silent', '0.000001', '0.000001'),
          { ...endpoint('zdr', '0.000001', '0.000001'), data_collection: 'allow' as const },
        ]),
      ],
    });
    const plan = (m: string, prefs: ProviderPreferences) =>
      ids(planAttempts(policies, { model: m, provider: prefs }, anyKey));
    expect(plan('x/p', {})).toEqual(['x/p@silent', 'x/p@nostore', 'x/p@zdr', 'x/p@mixed']);
    expect(plan('x/p', { data_collection: 'allow' })).toEqual(['x/p@silent', 'x/p@nostore', 'x/p@zdr', 'x/p@mixed']);
    expect(plan('x/p', { data_collection: 'deny' })).toEqual(['x/p@nostore', 'x/p@zdr', 'x/p@mixed']);
    expect(plan('x/p', { zdr: true })).toEqual(['x/p@zdr', 'x/p@mixed']);
    expect(plan('x/p', { zdr: false })).toEqual(['x/p@silent', 'x/p@nostore', 'x/p@zdr', 'x/p@mixed']);
    expectError(
      () => plan('x/q', { data_collection: 'deny' }),
      'routing.no_endpoint',
      'provider.data_collection=deny excludes silent',
    );
    expectError(() => plan('x/q', { zdr: true }), 'routing.no_endpoint', 'provider.zdr excludes zdr');
  });

  it('filters by quantizations; an endpoint that declares none is unknown', () => {
    const quantized = buildCatalog({
      providers: [provider('a'), provider('b'), provider('c')],
      models: [
        model('x/q', [
          { ...endpoint('a', '0.000001', '0.000001'), quantization: 'FP8' },
          { ...endpoint('b', '0.000002', '0.000002'), quantization: 'bf16' },
          endpoint('c', '0.000003', '0.000003'),
        ]),
      ],
    });
    const plan = (quantizations: string[]) =>
      ids(planAttempts(quantized, { model: 'x/q', provider: { quantizations } }, anyKey));
    expect(plan(['fp8'])).toEqual(['x/q@a']);
    expect(plan(['bf16', 'unknown'])).toEqual(['x/q@b', 'x/q@c']);
    expectError(() => plan(['fp4']), 'routing.no_endpoint', 'provider.quantizations excludes a (FP8)');
  });

  it('filters by max_price (USD per million tokens) and require_parameters', () => {
    expect(ids(planAttempts(catalog, { model: 'x/m', provider: { max_price: { prompt: 2 } } }, anyKey))).toEqual([
      'x/m@b',
      'x/m@c',
    ]);
    expect(
      ids(planAttempts(catalog, { model: 'x/m', provider: { max_price: { prompt: '1', completion: 1 } } }, anyKey)),
    ).toEqual(['x/m@b']);
    expect(
      ids(
        planAttempts(
          catalog,
          { model: 'x/m', provider: { require_parameters: true }, requestedParameters: ['tools'] },
          anyKey,
        ),
      ),
    ).toEqual(['x/m@c', 'x/m@a']);
  });

  it('sorts by measured latency or throughput when asked', () => {
    const health = new HealthRegistry();
    health.recordSuccess(HealthRegistry.keyOf('x/m', 'a'), 0, 100, 90);
    health.recordSuccess(HealthRegistry.keyOf('x/m', 'c'), 0, 900, 10);
    expect(ids(planAttempts(catalog, { model: 'x/m', provider: { sort: 'latency' } }, anyKey, health, 1))).toEqual([
      'x/m@a',
      'x/m@c',
      'x/m@b',
    ]);
    expect(
      ids(planAttempts(catalog, { model: 'x/m', provider: { sort: { by: 'throughput' } } }, anyKey, health, 1)),
    ).toEqual(['x/m@a', 'x/m@c', 'x/m@b']);
    expect(ids(planAttempts(catalog, { model: 'x/m', provider: { sort: 'price' } }, anyKey, health, 1))).toEqual([
      'x/m@b',
      'x/m@c',
      'x/m@a',
    ]);
  });

  it('reads the :nitro and :floor variants as a sort by throughput and by price, unless the caller chose one', () => {
    const health = new HealthRegistry();
    health.recordSuccess(HealthRegistry.keyOf('x/m', 'a'), 0, 100, 90);
    health.recordSuccess(HealthRegistry.keyOf('x/m', 'c'), 0, 900, 10);
    const plan = (model: string, provider?: Record<string, unknown>) =>
      ids(planAttempts(catalog, { model, ...(provider ? { provider } : {}) }, anyKey, health, 1));
    expect(plan('x/m:nitro')).toEqual(plan('x/m', { sort: 'throughput' }));
    expect(plan('x/m:nitro')).toEqual(['x/m@a', 'x/m@c', 'x/m@b']);
    expect(plan('x/m:floor')).toEqual(['x/m@b', 'x/m@c', 'x/m@a']);
    expect(plan('x/m:nitro', { sort: 'price' })).toEqual(['x/m@b', 'x/m@c', 'x/m@a']);
    // Named twice, planned once; an unknown base or suffix is still an unknown model.
    expect(ids(planAttempts(catalog, { model: 'x/m:floor', models: ['x/m'] }, anyKey, health, 1))).toEqual([
      'x/m@b',
      'x/m@c',
      'x/m@a',
    ]);
    expect(() => plan('x/nope:nitro')).toThrow(/not a valid model ID/);
    expect(() => plan('x/m:turbo')).toThrow(/not a valid model ID/);
  });

  it('applies key guardrails', () => {
    expect(
      ids(
        planAttempts(
          catalog,
          { model: 'x/m', models: ['x/fallback'] },
          { allowedModels: ['x/fallback'], allowedProviders: null },
        ),
      ),
    ).toEqual(['x/fallback@c']);
    expectError(
      () => planAttempts(catalog, { model: 'x/m' }, { allowedModels: ['x/fallback'], allowedProviders: null }),
      'guardrail.forbidden',
      'x/m',
    );
    expectError(
      () => planAttempts(catalog, { model: 'x/fallback' }, { allowedModels: null, allowedProviders: ['a'] }),
      'guardrail.forbidden',
      'provider',
    );
  });

  it('names why nothing is eligible (503) and rejects unknown models (400)', () => {
    expectError(
      () => planAttempts(catalog, { model: 'x/m', provider: { only: ['zzz'] } }, anyKey),
      'routing.no_endpoint',
      'provider.only excludes a',
    );
    expectError(
      () => planAttempts(catalog, { model: 'x/m', provider: { max_price: { completion: 0.1 } } }, anyKey),
      'routing.no_endpoint',
      'max_price.completion',
    );
    expectError(
      () => planAttempts(catalog, { model: 'x/nope' }, anyKey),
      'catalog.unknown_model',
      'x/nope is not a valid model ID',
    );
    expectError(
      () => planAttempts(catalog, { model: 'x/m', models: ['x/nope'] }, anyKey),
      'catalog.unknown_model',
      'x/nope',
    );
  });
});

describe('planAttempts with the caller’s own provider keys (BYOK)', () => {
  const byokCatalog = buildCatalog({
    providers: [
      { ...provider('a'), api_key: 'op-a', byok: true },
      { ...provider('b'), api_key: 'op-b', byok: true },
      provider('c'),
    ],
    models: [
      // Shared capacity cheapest first: c, a, b.
      model('x/m', [
        endpoint('b', '0.000003', '0.000003'),
        endpoint('c', '0.000001', '0.000001'),
        endpoint('a', '0.000002', '0.000002'),
      ]),
      model('x/other', [endpoint('c', '0.000001', '0.000001'), endpoint('b', '0.000002', '0.000002')]),
    ],
  });
  const own = (id: string, providerId: string, extra: Partial<ByokCredential> = {}): ByokCredential => ({
    id,
    provider: providerId,
    apiKey: `sk-${id}`,
    isFallback: false,
    isRequired: false,
    sortOrder: 0,
    allowedModels: null,
    allowedKeyHashes: null,
    ...extra,
  });
  const attempts = (plan: ReturnType<typeof planAttempts>) =>
    plan.map((p) => `${p.model.id}@${p.endpoint.provider.id}${p.byok ? `+${p.byok.id}` : ''}`);

  it('tries every own key before any shared capacity, wherever its provider stands in the order', () => {
    expect(attempts(planAttempts(byokCatalog, { model: 'x/m', byok: [own('kb', 'b')] }, anyKey))).toEqual([
      'x/m@b+kb',
      'x/m@c',
      'x/m@a',
      'x/m@b',
    ]);
    // An explicit provider order does not put shared capacity before an own key either.
    expect(
      attempts(
        planAttempts(byokCatalog, { model: 'x/m', byok: [own('kb', 'b')], provider: { order: ['c', 'a'] } }, anyKey),
      ),
    ).toEqual(['x/m@b+kb', 'x/m@c', 'x/m@a', 'x/m@b']);
  });

  it('orders several own keys as the endpoints are ordered, then by their sort order', () => {
    const keys = [own('kb', 'b'), own('ka2', 'a', { sortOrder: 2 }), own('ka1', 'a', { sortOrder: 1 })];
    expect(attempts(planAttempts(byokCatalog, { model: 'x/m', byok: keys }, anyKey))).toEqual([
      'x/m@a+ka1',
      'x/m@a+ka2',
      'x/m@b+kb',
      'x/m@c',
      'x/m@a',
      'x/m@b',
    ]);
  });

  it('puts fallback own keys after all shared capacity and drops a required key’s shared endpoint only', () => {
    expect(
      attempts(
        planAttempts(
          byokCatalog,
          { model: 'x/m', byok: [own('ka', 'a', { isFallback: true }), own('kb', 'b', { isRequired: true })] },
          anyKey,
        ),
      ),
    ).toEqual(['x/m@b+kb', 'x/m@c', 'x/m@a', 'x/m@a+ka']);
  });

  it('keeps the caller’s order of models: a later model’s own key waits for the first model’s attempts', () => {
    expect(
      attempts(planAttempts(byokCatalog, { model: 'x/m', models: ['x/other'], byok: [own('kb', 'b')] }, anyKey)),
    ).toEqual(['x/m@b+kb', 'x/m@c', 'x/m@a', 'x/m@b', 'x/other@b+kb', 'x/other@c', 'x/other@b']);
  });

  it('never uses a stored key of a provider without byok, nor one limited to other models', () => {
    const keys = [own('kc', 'c'), own('kb', 'b', { allowedModels: new Set(['x/other']) })];
    expect(attempts(planAttempts(byokCatalog, { model: 'x/m', byok: keys }, anyKey))).toEqual([
      'x/m@c',
      'x/m@a',
      'x/m@b',
    ]);
  });
});

function withoutModelParameters<T extends { supported_parameters?: string[] }>(config: T): T {
  const { supported_parameters: _ignored, ...rest } = config;
  return rest as T;
}

describe('parameters a provider kind never sends', () => {
  const mixed = buildCatalog({
    providers: [
      { ...provider('anth'), kind: 'anthropic' as const },
      { ...provider('gem'), kind: 'gemini' as const },
      provider('oai'),
    ],
    models: [
      // No model-level list: each endpoint its own, or the default list.
      withoutModelParameters(
        model('x/m', [
          // The operator lists response_format and seed for the Anthropic endpoint too.
          endpoint('anth', '0.000001', '0.000001', ['max_tokens', 'temperature', 'response_format', 'seed', 'tools']),
          endpoint('gem', '0.000002', '0.000002'),
          endpoint('oai', '0.000003', '0.000003'),
        ]),
      ),
    ],
  });
  const supported = (id: string) =>
    mixed.models.get('x/m')!.endpoints.find((e) => e.provider.id === id)!.supportedParameters;

  it('are not among an endpoint’s supported parameters, declared or by default', () => {
    expect(supported('anth')).toEqual(['max_tokens', 'temperature', 'tools']);
    expect(supported('gem')).toContain('response_format');
    expect(supported('gem')).toContain('seed');
    expect(supported('oai')).toContain('response_format');
  });

  it("the model's list (/models, and its filter) is what its endpoints take as routing sees it, structured_outputs included", () => {
    const declared = ['max_tokens', 'response_format', 'logprobs', 'top_logprobs'];
    const catalog = buildCatalog({
      providers: [
        { ...provider('anth'), kind: 'anthropic' as const },
        { ...provider('gem'), kind: 'gemini' as const },
      ],
      // The model's own list, which both endpoints inherit.
      models: [
        {
          ...model('x/n', [endpoint('anth', '0.000001', '0.000001'), endpoint('gem', '0.000001', '0.000001')]),
          supported_parameters: declared,
        },
      ],
    });
    const m = catalog.models.get('x/n')!;
    const of = (id: string) => m.endpoints.find((e) => e.provider.id === id)!.supportedParameters;
    expect(of('anth')).toEqual(['max_tokens']);
    expect(of('gem')).not.toContain('logprobs');
    expect([...m.supportedParameters].sort()).toEqual([...new Set([...of('anth'), ...of('gem')])].sort());
  });

  it('require_parameters with reasoning (any of its forms) needs an endpoint that takes reasoning in any form; n is never listed', () => {
    const catalog = buildCatalog({
      providers: [provider('plain'), provider('thinks'), provider('effort')],
      models: [
        withoutModelParameters(
          model('x/r', [
            endpoint('plain', '0.000001', '0.000001', ['max_tokens', 'n']),
            endpoint('thinks', '0.000002', '0.000002', ['max_tokens', 'reasoning']),
            endpoint('effort', '0.000003', '0.000003', ['max_tokens', 'reasoning_effort']),
          ]),
        ),
      ],
    });
    const plan = planAttempts(
      catalog,
      { model: 'x/r', provider: { require_parameters: true }, requestedParameters: ['reasoning'] },
      anyKey,
    );
    expect(ids(plan)).toEqual(['x/r@thinks', 'x/r@effort']);
    expect(catalog.models.get('x/r')!.supportedParameters).not.toContain('n');
  });

  it('an Anthropic endpoint listing structured_outputs (the Claude models that have them) keeps response_format', () => {
    const catalog = buildCatalog({
      providers: [{ ...provider('anth'), kind: 'anthropic' as const }],
      models: [
        withoutModelParameters(
          model('x/s', [
            endpoint('anth', '0.000001', '0.000001', ['max_tokens', 'response_format', 'structured_outputs', 'seed']),
          ]),
        ),
      ],
    });
    const m = catalog.models.get('x/s')!;
    expect(m.endpoints[0]!.supportedParameters).toEqual(['max_tokens', 'response_format', 'structured_outputs']);
    expect(m.supportedParameters).toEqual(['max_tokens', 'response_format', 'structured_outputs']);
    const plan = planAttempts(
      catalog,
      { model: 'x/s', provider: { require_parameters: true }, requestedParameters: ['response_format'] },
      anyKey,
    );
    expect(ids(plan)).toEqual(['x/s@anth']);
  });

  it('so require_parameters routes a structured-output request past the Anthropic endpoint', () => {
    const plan = planAttempts(
      mixed,
      { model: 'x/m', provider: { require_parameters: true }, requestedParameters: ['response_format', 'seed'] },
      anyKey,
    );
    expect(ids(plan)).toEqual(['x/m@gem', 'x/m@oai']);
    expectError(
      () =>
        planAttempts(
          mixed,
          {
            model: 'x/m',
            provider: { require_parameters: true, only: ['anth'] },
            requestedParameters: ['response_format'],
          },
          anyKey,
        ),
      'routing.no_endpoint',
      'anth does not support response_format',
    );
  });
});

describe('tool use', () => {
  const toolCatalog = buildCatalog({
    providers: [provider('a'), provider('b')],
    models: [
      withoutModelParameters(
        model('x/t', [
          endpoint('a', '0.000001', '0.000001', ['max_tokens', 'temperature']),
          endpoint('b', '0.000002', '0.000002', ['max_tokens', 'tools', 'tool_choice']),
        ]),
      ),
    ],
  });

  it('a request with tools goes only to endpoints that list tools, require_parameters or not', () => {
    expect(ids(planAttempts(toolCatalog, { model: 'x/t', usesTools: true }, anyKey))).toEqual(['x/t@b']);
    expect(ids(planAttempts(toolCatalog, { model: 'x/t' }, anyKey))).toEqual(['x/t@a', 'x/t@b']);
    expectError(
      () => planAttempts(toolCatalog, { model: 'x/t', usesTools: true, provider: { only: ['a'] } }, anyKey),
      'routing.no_endpoint',
      'a does not support tool use',
    );
  });
});
