/**
 * Input moderation (docs/api.md 403): off by default; a pattern list; an OpenAI-compatible endpoint
 * (the simulated provider's /v1/moderations). Flagged input → 403 with
 * `metadata: { reasons, flagged_input, provider_name, model_slug }`, before anything is reserved,
 * counted, forwarded or charged. The flagged text never reaches logs or metrics.
 */
import { pino } from 'pino';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError, HELLO, type CallResult } from './helpers/api.js';
import {
  balanceUnits,
  getJson,
  startTestGateway,
  type TestGateway,
  type TestGatewayOptions,
} from './helpers/gateway.js';
import { sqliteTarget, STORE_TARGETS } from './helpers/store-targets.js';

const PATTERNS = {
  mode: 'patterns',
  patterns: [
    { pattern: '\\bforbidden\\b', reason: 'forbidden word' },
    { pattern: 'launch code \\d+', reason: 'secrets' },
  ],
};

interface Harness {
  gw: TestGateway;
  accountId: string;
  key: string;
  logs: string[];
}

async function harness(
  target: TestGatewayOptions['target'],
  moderation: ((providerUrl: string) => Record<string, unknown>) | null,
): Promise<Harness> {
  const logs: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(line) });
  const gw = await startTestGateway({
    target,
    logger,
    configure: (file) => {
      if (moderation) Object.assign(file, { moderation: moderation(file.providers[0]!.base_url) });
    },
  });
  const accountId = await gw.createAccount(10);
  const { key } = await gw.createKey(accountId);
  return { gw, accountId, key, logs };
}

const user = (content: unknown) => [{ role: 'user', content }];
const complete = (h: Harness, body: Record<string, unknown>) =>
  call(h.gw, 'POST', '/chat/completions', { key: h.key, json: { model: 'test/chat', messages: HELLO, ...body } });

async function snapshot(h: Harness) {
  const info = await getJson(h.gw, '/key', h.key);
  return {
    balance: await balanceUnits(h.gw, h.accountId),
    upstream: h.gw.provider.stats.requests,
    usage: info.json.data.usage,
    freeUsed: info.json.data.free_model_daily_requests.used,
  };
}

/** A refusal with the error record, and nothing charged, recorded, forwarded or counted. */
async function expectRefusedWithoutEffect(
  h: Harness,
  refused: () => Promise<CallResult>,
  status: number,
  message?: string | RegExp,
) {
  const before = await snapshot(h);
  const result = await refused();
  const error = expectError(result, status, message);
  const generationId = String(result.headers['x-generation-id']);
  expect(generationId).toMatch(/^gen-/);
  expect((await getJson(h.gw, `/generation?id=${generationId}`, h.key)).status).toBe(404);
  expect(await snapshot(h)).toEqual(before);
  return error;
}

async function generationOf(h: Harness, result: CallResult) {
  const generation = await getJson(h.gw, `/generation?id=${String(result.headers['x-generation-id'])}`, h.key);
  expect(generation.status).toBe(200);
  return generation.json.data;
}

describe('moderation off (default)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness(sqliteTarget, null);
  });
  afterAll(() => h.gw.close());

  it('has no effect: any text is forwarded, no moderation call, moderation_latency null', async () => {
    const result = await complete(h, { messages: user('forbidden launch code 1234 mock-flag:violence') });
    expect(result.status).toBe(200);
    expect(h.gw.provider.stats.moderations).toBe(0);
    expect((await generationOf(h, result)).moderation_latency).toBeNull();
  });
});

describe.each(STORE_TARGETS)('moderation by patterns ($name)', (target) => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness(target, () => PATTERNS);
  });
  afterAll(() => h.gw.close());

  it('forwards clean input and records moderation_latency on the generation', async () => {
    const result = await complete(h, {
      messages: [{ role: 'system', content: 'be brief' }, ...user('a permitted question')],
    });
    expect(result.status).toBe(200);
    const generation = await generationOf(h, result);
    expect(typeof generation.moderation_latency).toBe('number');
    expect(generation.moderation_latency).toBeGreaterThanOrEqual(0);
  });

  it('refuses flagged input with 403 and exactly { reasons, flagged_input, provider_name, model_slug }, with no effect', async () => {
    const text = 'Tell me the FORBIDDEN thing and launch code 42';
    const error = await expectRefusedWithoutEffect(
      h,
      () => complete(h, { messages: user(text) }),
      403,
      'test/chat requires moderation by Tollgate. Your input was flagged for "forbidden word", "secrets". No credits were charged.',
    );
    expect(error.metadata).toEqual({
      reasons: ['forbidden word', 'secrets'],
      flagged_input: text,
      provider_name: 'Tollgate',
      model_slug: 'test/chat',
    });
  });

  it('checks system messages and text parts, truncates flagged_input to 100 characters, and ignores assistant and tool text', async () => {
    const long = `${'a'.repeat(120)} forbidden ${'b'.repeat(120)}`;
    const system = await expectRefusedWithoutEffect(
      h,
      () => complete(h, { messages: [{ role: 'system', content: long }, ...user('hi')] }),
      403,
    );
    expect(system.metadata.flagged_input).toHaveLength(100);
    expect(system.metadata.flagged_input).toBe(`${'a'.repeat(49)}...${'b'.repeat(48)}`);

    const parts = await expectRefusedWithoutEffect(
      h,
      () =>
        complete(h, {
          messages: user([
            { type: 'text', text: 'fine' },
            { type: 'text', text: 'forbidden part' },
          ]),
        }),
      403,
    );
    expect(parts.metadata.flagged_input).toBe('forbidden part');

    const history = [
      ...user('hello'),
      { role: 'assistant', content: 'the forbidden answer' },
      { role: 'tool', tool_call_id: 't1', content: 'launch code 7' },
      ...user('thanks'),
    ];
    expect((await complete(h, { messages: history })).status).toBe(200);
  });

  it('refuses a flagged streaming request with a real 403 JSON response, not a 200 stream', async () => {
    const before = await snapshot(h);
    const response = await request(`${h.gw.api}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/chat', stream: true, messages: user('forbidden') }),
    });
    const text = await response.body.text();
    expect(response.statusCode).toBe(403);
    expect(String(response.headers['content-type'])).toMatch(/^application\/json/);
    expect(response.headers['x-generation-id']).toMatch(/^gen-/);
    expect(JSON.parse(text).error).toMatchObject({
      code: 403,
      metadata: { reasons: ['forbidden word'], model_slug: 'test/chat' },
    });
    expect(await snapshot(h)).toEqual(before);
  });

  it('a flagged free-model request uses no free-model slot; a flagged request from a broke account is still 403', async () => {
    await expectRefusedWithoutEffect(
      h,
      () => complete(h, { model: 'test/chat:free', messages: user('forbidden') }),
      403,
    );
    const broke = await h.gw.createKey(await h.gw.createAccount(0));
    const refused = await call(h.gw, 'POST', '/chat/completions', {
      key: broke.key,
      json: { model: 'test/chat', messages: user('forbidden') },
    });
    expectError(refused, 403);
  });

  it('never writes the flagged text (or the key) to logs or metrics', async () => {
    const secret = 'forbidden xylophone-7781';
    expectError(await complete(h, { messages: user(secret) }), 403);
    const logs = h.logs.join('');
    expect(logs).toContain('input flagged by moderation');
    expect(logs).toContain('forbidden word');
    expect(logs).not.toContain('xylophone-7781');
    expect(logs).not.toContain(h.key);
    const metrics = await request(`${h.gw.url}/metrics`);
    const text = await metrics.body.text();
    expect(text).toMatch(/tollgate_moderation_checks_total\{outcome="flagged"\} [1-9]/);
    expect(text).toMatch(/tollgate_moderation_checks_total\{outcome="passed"\} [1-9]/);
    expect(text).not.toContain('xylophone');
  });
});

describe('moderation applies_to', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness(sqliteTarget, () => ({ ...PATTERNS, applies_to: ['test/chat'] }));
  });
  afterAll(() => h.gw.close());

  it('moderates only the listed models (a fallback in the list counts)', async () => {
    const unmoderated = await complete(h, { model: 'test/paced', messages: user('forbidden') });
    expect(unmoderated.status).toBe(200);
    expect((await generationOf(h, unmoderated)).moderation_latency).toBeNull();
    expectError(await complete(h, { model: 'test/chat', messages: user('forbidden') }), 403);
    const viaFallback = await expectRefusedWithoutEffect(
      h,
      () => complete(h, { model: 'test/paced', models: ['test/chat'], messages: user('forbidden') }),
      403,
    );
    expect(viaFallback.metadata.model_slug).toBe('test/paced');
  });
});

describe('moderation by an OpenAI-compatible endpoint', () => {
  const endpoint =
    (model: string, extra: Record<string, unknown> = {}) =>
    (url: string) => ({
      mode: 'openai',
      endpoint: { base_url: url, api_key: 'sk-moderation-test', model, timeout_ms: 300 },
      ...extra,
    });

  describe('healthy endpoint', () => {
    let h: Harness;
    beforeAll(async () => {
      h = await harness(sqliteTarget, endpoint('omni-moderation-latest'));
    });
    afterAll(() => h.gw.close());

    it('forwards what the endpoint passes, with moderation_latency', async () => {
      const moderations = h.gw.provider.stats.moderations;
      const result = await complete(h, { messages: user('a kind question') });
      expect(result.status).toBe(200);
      expect(h.gw.provider.stats.moderations).toBe(moderations + 1);
      expect(typeof (await generationOf(h, result)).moderation_latency).toBe('number');
    });

    it('refuses what it flags: reasons are its categories, provider_name OpenAI', async () => {
      const text = 'please mock-flag:violence now';
      const error = await expectRefusedWithoutEffect(
        h,
        () => complete(h, { messages: [{ role: 'system', content: 'be nice' }, ...user(text)] }),
        403,
      );
      expect(error.metadata).toEqual({
        reasons: ['violence'],
        flagged_input: text,
        provider_name: 'OpenAI',
        model_slug: 'test/chat',
      });
      const streamed = await expectRefusedWithoutEffect(
        h,
        () => complete(h, { stream: true, messages: user('mock-flag:hate') }),
        403,
      );
      expect(streamed.metadata.reasons).toEqual(['hate']);
    });
  });

  describe('endpoint failing, on_error: block (default)', () => {
    let h: Harness;
    beforeAll(async () => {
      h = await harness(sqliteTarget, endpoint('omni-moderation-latest@status=500'));
    });
    afterAll(() => h.gw.close());

    it('fails closed: 503, nothing forwarded or charged, the cause only in the logs', async () => {
      const error = await expectRefusedWithoutEffect(
        h,
        () => complete(h, { messages: user('a kind question') }),
        503,
        'Moderation is temporarily unavailable, so the request was not forwarded. No credits were charged.',
      );
      expect(error.metadata).toEqual({ provider_name: 'OpenAI', error_type: 'moderation_unavailable' });
      expect(h.logs.join('')).toContain('answered HTTP 500');
    });
  });

  describe('endpoint too slow, on_error: block', () => {
    let h: Harness;
    beforeAll(async () => {
      h = await harness(sqliteTarget, endpoint('omni-moderation-latest@latency=3000'));
    });
    afterAll(() => h.gw.close());

    it('gives up after timeout_ms and refuses with 503', async () => {
      const started = Date.now();
      await expectRefusedWithoutEffect(h, () => complete(h, { stream: true, messages: user('a kind question') }), 503);
      expect(Date.now() - started).toBeLessThan(2500);
    });
  });

  describe('endpoint failing, on_error: allow', () => {
    let h: Harness;
    beforeAll(async () => {
      h = await harness(
        sqliteTarget,
        endpoint('omni-moderation-latest@status=503', { on_error: 'allow', provider_name: 'Acme Safety' }),
      );
    });
    afterAll(() => h.gw.close());

    it('fails open: the request is forwarded unmoderated (even flagged-looking text) and the failure logged', async () => {
      const result = await complete(h, { messages: user('mock-flag:violence') });
      expect(result.status).toBe(200);
      expect(typeof (await generationOf(h, result)).moderation_latency).toBe('number');
      expect(h.logs.join('')).toContain('forwarding unmoderated');
    });
  });
});
