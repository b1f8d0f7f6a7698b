/**
 * The account holder's usage through the gateway: `/activity` (also through the official SDK, which
 * validates strictly), `/activity/daily`, `/generations`, `/credits/history`. The clock is moved so
 * that requests land on earlier UTC days. Both stores.
 */
import { OpenRouter } from '@openrouter/sdk';
import * as errors from '@openrouter/sdk/models/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays, utcDay } from '../src/usage/utc-day.js';
import { call, expectError, expectNoLeak, HELLO } from './helpers/api.js';
import { chat, startTestGateway, toUnits, type TestGateway } from './helpers/gateway.js';
import { STORE_TARGETS } from './helpers/store-targets.js';

const DAY = 86_400_000;
const NO_RETRIES = { strategy: 'none' } as const;

describe.each(STORE_TARGETS)('activity API ($name)', (target) => {
  let gw: TestGateway;
  let now = Date.now();
  // Ticks on every read, so that records made one after the other have distinct, ordered times.
  const clock = { now: () => ++now };
  const today = () => utcDay(now);
  let accountId: string;
  let management: string;
  let k1: { key: string; hash: string };
  let k2: { key: string; hash: string };
  let otherManagement: string;
  let otherHash: string;
  /** Cost in units per (day, model, key hash), from the responses' `usage.cost`. */
  const costs: {
    day: string;
    model: string;
    hash: string;
    units: number;
    prompt: number;
    completion: number;
    id: string;
    app: string | null;
  }[] = [];
  const realToday = utcDay(Date.now());

  async function send(
    key: { key: string; hash: string },
    model: string,
    headers: Record<string, string> = {},
    app: string | null = null,
  ) {
    const response = await chat(gw, key.key, { model, messages: HELLO }, headers);
    expect(response.status, response.text).toBe(200);
    costs.push({
      day: today(),
      model,
      hash: key.hash,
      units: toUnits(response.json.usage.cost),
      prompt: response.json.usage.prompt_tokens,
      completion: response.json.usage.completion_tokens,
      id: response.json.id,
      app,
    });
  }

  beforeAll(async () => {
    const start = Date.parse(`${realToday}T12:00:00Z`);
    now = start - 4 * DAY;
    gw = await startTestGateway({ target, clock });
    accountId = await gw.createAccount(10);
    management = (await gw.createKey(accountId, { management: true })).key;
    k1 = await gw.createKey(accountId, { name: 'first key' });
    k2 = await gw.createKey(accountId, { name: 'second key' });
    const other = await gw.createAccount(10);
    otherManagement = (await gw.createKey(other, { management: true })).key;
    const otherKey = await gw.createKey(other);
    otherHash = otherKey.hash;

    now = start - 3 * DAY;
    await send(
      k1,
      'test/chat',
      { 'HTTP-Referer': 'https://app.example.com/chat?token=secret', 'X-Title': 'Example App' },
      'https://app.example.com',
    );
    await send(
      k1,
      'test/chat',
      { 'HTTP-Referer': 'https://app.example.com/', 'X-OpenRouter-Title': 'Example App' },
      'https://app.example.com',
    );
    await send(k2, 'test/chat:free');
    // The other account's usage on the same day must never show up in this account's answers.
    await send(otherKey, 'test/chat', { 'HTTP-Referer': 'https://app.example.com/' }, 'https://app.example.com');
    costs.pop();
    now = start - 1 * DAY;
    await send(
      k1,
      'test/failover',
      { 'HTTP-Referer': 'http://localhost:3000', 'X-Title': 'Local <b>Tool</b>' },
      'http://localhost:3000',
    );
    await send(k2, 'test/chat', { 'HTTP-Referer': 'http://localhost:3000' }); // loopback without a title: no app
    now = start;
    await send(k2, 'test/chat');
    await gw.admin('POST', `/accounts/${accountId}/credits`, { amount: 5, kind: 'purchase', reference: 'invoice-1' });
  });
  afterAll(() => gw.close());

  const get = (path: string, key = management) => call(gw, 'GET', path, { key });

  it('GET /activity: the last 30 completed UTC days grouped by day, model and provider; today excluded', async () => {
    const response = await get('/activity');
    expect(response.status, response.text).toBe(200);
    const rows = response.json.data as Record<string, unknown>[];
    const past = costs.filter((c) => c.day !== today());
    const cells = new Map<string, { units: number; requests: number; prompt: number; completion: number }>();
    for (const c of past) {
      const provider = c.model === 'test/failover' ? 'Mock B' : 'Mock';
      const cell = `${c.day}|${c.model}|${provider}`;
      const e = cells.get(cell) ?? { units: 0, requests: 0, prompt: 0, completion: 0 };
      e.units += c.units;
      e.requests += 1;
      e.prompt += c.prompt;
      e.completion += c.completion;
      cells.set(cell, e);
    }
    expect(rows.map((r) => `${r.date}|${r.model}|${r.provider_name}`).sort()).toEqual([...cells.keys()].sort());
    for (const row of rows) {
      expect(Object.keys(row).sort()).toEqual(
        [
          'byok_usage_inference',
          'completion_tokens',
          'date',
          'endpoint_id',
          'model',
          'model_permaslug',
          'prompt_tokens',
          'provider_name',
          'reasoning_tokens',
          'requests',
          'usage',
        ].sort(),
      );
      const e = cells.get(`${row.date}|${row.model}|${row.provider_name}`)!;
      expect(toUnits(row.usage as number)).toBe(e.units);
      expect(row).toMatchObject({
        requests: e.requests,
        prompt_tokens: e.prompt,
        completion_tokens: e.completion,
        reasoning_tokens: 0,
        byok_usage_inference: 0,
        model_permaslug: row.model,
      });
      expect(row.endpoint_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    }
    // Newest day first.
    expect(rows.map((r) => r.date)).toEqual([...rows.map((r) => r.date as string)].sort().reverse());
    expect(rows.some((r) => r.date === today())).toBe(false);
  });

  it('the official SDK parses /activity, with the date and api_key_hash filters', async () => {
    const sdk = new OpenRouter({ apiKey: management, serverURL: gw.api, retryConfig: NO_RETRIES });
    try {
      const all = await sdk.analytics.getUserActivity({});
      expect(all.data.length).toBeGreaterThan(0);
      const day = addDays(today(), -3);
      const one = await sdk.analytics.getUserActivity({ date: day });
      expect(new Set(one.data.map((r) => r.date))).toEqual(new Set([day]));
      expect(one.data.map((r) => r.model).sort()).toEqual(['test/chat', 'test/chat:free']);
      const byKey = await sdk.analytics.getUserActivity({ apiKeyHash: k2.hash });
      expect(byKey.data.map((r) => `${r.date} ${r.model} ${r.requests}`).sort()).toEqual(
        [`${addDays(today(), -1)} test/chat 1`, `${day} test/chat:free 1`].sort(),
      );
      expect(byKey.data[0]!.endpointId).toMatch(/^[0-9a-f-]{36}$/);
    } catch (error) {
      if (error instanceof errors.ResponseValidationError)
        throw new Error(`SDK rejected the response: ${error.pretty()}`);
      throw error;
    }
  });

  it('/activity refuses bad input: malformed or out-of-window date, malformed hash; another account’s key → 404', async () => {
    for (const date of ['2026-13-01', '2026-02-30', 'yesterday', `${today()}T00:00:00Z`])
      expectError(await get(`/activity?date=${encodeURIComponent(date)}`), 400, /date/);
    expectError(await get(`/activity?date=${today()}`), 400, /last 30 completed UTC days/);
    expectError(await get(`/activity?date=${addDays(today(), -31)}`), 400, /last 30 completed UTC days/);
    expect((await get(`/activity?date=${addDays(today(), -30)}`)).status).toBe(200);
    expectError(await get('/activity?api_key_hash=abc'), 400, /api_key_hash/);
    expectError(await get(`/activity?api_key_hash=${otherHash}`), 404, 'Key not found');
    expectError(await get(`/activity?api_key_hash=${'0'.repeat(64)}`), 404, 'Key not found');
    // Inference keys and no key: 401.
    expect((await get('/activity', k1.key)).status).toBe(401);
    expect((await call(gw, 'GET', '/activity')).status).toBe(401);
    // The other account sees only its own usage.
    const theirs = await get('/activity', otherManagement);
    expect(theirs.json.data.map((r: { requests: number }) => r.requests)).toEqual([1]);
  });

  it('GET /activity/daily: the last N days including today, grouped by model, key or app', async () => {
    const byModel = await get('/activity/daily?days=7');
    expect(byModel.status, byModel.text).toBe(200);
    const rows = byModel.json.data as {
      date: string;
      group: string;
      group_label: string;
      usage: number;
      requests: number;
    }[];
    expect(rows.map((r) => `${r.date} ${r.group} ${r.requests}`)).toEqual([
      `${addDays(today(), -3)} test/chat 2`,
      `${addDays(today(), -3)} test/chat:free 1`,
      `${addDays(today(), -1)} test/chat 1`,
      `${addDays(today(), -1)} test/failover 1`,
      `${today()} test/chat 1`,
    ]);
    const total = rows.reduce((n, r) => n + toUnits(r.usage), 0);
    expect(total).toBe(costs.reduce((n, c) => n + c.units, 0));
    expect(Object.keys(rows[0]!).sort()).toEqual(
      [
        'byok_usage',
        'completion_tokens',
        'date',
        'group',
        'group_label',
        'prompt_tokens',
        'reasoning_tokens',
        'requests',
        'usage',
      ].sort(),
    );

    const byKey = (await get('/activity/daily?days=7&group_by=key')).json.data as typeof rows;
    expect(new Set(byKey.map((r) => r.group))).toEqual(new Set([k1.hash, k2.hash]));
    expect(byKey.find((r) => r.group === k1.hash)!.group_label).toMatch(
      /^first key \(sk-tg-v1-[0-9a-f]{3}\.\.\.[0-9a-f]{3}\)$/,
    );

    const byApp = (await get('/activity/daily?days=7&group_by=app')).json.data as typeof rows;
    expect(byApp.map((r) => `${r.date} ${r.group} ${r.group_label} ${r.requests}`)).toEqual([
      `${addDays(today(), -3)} (none) No app 1`,
      `${addDays(today(), -3)} https://app.example.com Example App 2`,
      `${addDays(today(), -1)} (none) No app 1`,
      `${addDays(today(), -1)} http://localhost:3000#Local <b>Tool</b> Local <b>Tool</b> 1`,
      `${today()} (none) No app 1`,
    ]);

    const filtered = (await get(`/activity/daily?days=2&model=test/chat&api_key_hash=${k2.hash}`)).json
      .data as typeof rows;
    expect(filtered.map((r) => `${r.date} ${r.requests}`)).toEqual([`${addDays(today(), -1)} 1`, `${today()} 1`]);
    expectError(await get('/activity/daily?days=0'), 400, /days/);
    expectError(await get('/activity/daily?group_by=provider'), 400, /group_by/);
    expectError(await get(`/activity/daily?api_key_hash=${otherHash}`), 404);
  });

  it('GET /generations: newest first, paged, with app, key name and label; filters; no other account', async () => {
    const response = await get('/generations');
    expect(response.status, response.text).toBe(200);
    const data = response.json.data as Record<string, any>[];
    expect(data.map((g) => g.id)).toEqual([...costs].reverse().map((c) => c.id));
    expect(Object.keys(data[0]!).sort()).toEqual(
      [
        'id',
        'created_at',
        'model',
        'provider_name',
        'app',
        'key_label',
        'key_name',
        'tokens_prompt',
        'tokens_completion',
        'total_cost',
        'latency',
        'finish_reason',
        'streamed',
      ].sort(),
    );
    const first = data.find((g) => g.id === costs[0]!.id)!;
    expect(first).toMatchObject({
      model: 'test/chat',
      provider_name: 'Mock',
      app: { name: 'Example App', origin: 'https://app.example.com' },
      key_name: 'first key',
      finish_reason: 'stop',
      streamed: false,
    });
    expect(toUnits(first.total_cost)).toBe(costs[0]!.units);
    expect(data.find((g) => g.model === 'test/failover')!.app).toEqual({
      name: 'Local <b>Tool</b>',
      origin: 'http://localhost:3000',
    });
    expect(data.filter((g) => g.app === null).length).toBe(3);
    expect(response.text).not.toContain('token=secret');

    const paged = await get('/generations?limit=2&offset=1');
    expect(paged.json.data.map((g: { id: string }) => g.id)).toEqual(data.slice(1, 3).map((g) => g.id));
    const byKey = await get(`/generations?api_key_hash=${k2.hash}&model=test/chat`);
    expect(byKey.json.data.map((g: { id: string }) => g.id)).toEqual(
      costs
        .filter((c) => c.hash === k2.hash && c.model === 'test/chat')
        .reverse()
        .map((c) => c.id),
    );
    expectError(await get('/generations?limit=101'), 400, /limit/);
    expectError(await get('/generations?offset=-1'), 400, /offset/);
    // Digits only, as every listing's offset (docs/api.md): `1e3` and `0x10` are not numbers here.
    expectError(await get('/generations?offset=1e3'), 400, /offset must be a whole number from 0 to 10000/);
    expectError(await get('/generations?offset=0x10'), 400, /offset/);
    expectError(await get('/generations?offset=10001'), 400, /offset/);
    expect((await get('/generations?offset=10000')).status).toBe(200);
    expectError(await get('/credits/history?offset=1e3'), 400, /offset/);
    expect((await get('/generations', otherManagement)).json.data.length).toBe(1);
    expectNoLeak(response.text);
  });

  it('GET /generations?before=: the page after a row, unshifted by generations made meanwhile (the dashboard’s Show older)', async () => {
    const first = (await get('/generations?limit=2')).json.data as { id: string }[];
    const all = (await get('/generations')).json.data as { id: string }[];
    await send(k1, 'test/chat'); // arrives while the holder reads the first page
    const next = await get(`/generations?limit=2&before=${first[1]!.id}`);
    expect(next.status, next.text).toBe(200);
    expect(next.json.data.map((g: { id: string }) => g.id)).toEqual(all.slice(2, 4).map((g) => g.id));
    // An offset would have repeated the first page's last row.
    expect((await get('/generations?limit=2&offset=2')).json.data[0].id).toBe(first[1]!.id);
    // With the filters, after the last row: nothing more.
    const last = all.at(-1)!.id;
    expect((await get(`/generations?before=${last}`)).json.data).toEqual([]);
    const byKey = (await get(`/generations?api_key_hash=${k2.hash}`)).json.data as { id: string }[];
    expect(
      (await get(`/generations?api_key_hash=${k2.hash}&before=${byKey[0]!.id}`)).json.data.map(
        (g: { id: string }) => g.id,
      ),
    ).toEqual(byKey.slice(1).map((g) => g.id));
    // Another account's generation, an unknown id or a malformed one is not a cursor.
    const others = (await get('/generations', otherManagement)).json.data as { id: string }[];
    expectError(await get(`/generations?before=${others[0]!.id}`), 400, /before/);
    expectError(await get('/generations?before=gen-1-unknown'), 400, /before/);
    expectError(await get('/generations?before=a%20b'), 400, /before/);
    // A NUL is refused alike on both stores (PostgreSQL refused it, SQLite answered 200).
    expectError(await get('/generations?model=test%2Fchat%00x'), 400, /model: contains a NUL/);
    expectError(await get('/activity/daily?model=%00'), 400, /model: contains a NUL/);
  });

  it('GET /credits/history: the account’s credit entries, newest first', async () => {
    const response = await get('/credits/history');
    expect(response.status, response.text).toBe(200);
    expect(response.json.data.map((e: Record<string, unknown>) => [e.kind, e.amount, e.reference])).toEqual([
      ['purchase', 5, 'invoice-1'],
      ['grant', 10, null],
    ]);
    expect(Object.keys(response.json.data[0]).sort()).toEqual(['amount', 'created_at', 'id', 'kind', 'reference']);
    expect((await get('/credits/history?offset=2')).json.data).toEqual([]);
    expectError(await get('/credits/history?offset=x'), 400, /offset/);
    expect((await get('/credits/history', otherManagement)).json.data.map((e: { amount: number }) => e.amount)).toEqual(
      [10],
    );
  });

  it('GET /credits/history?before=: the page after an entry, entries of the same millisecond in id order', async () => {
    const holder = await gw.createAccount(0);
    const key = (await gw.createKey(holder, { management: true })).key;
    const driver = gw.database.openDriver();
    try {
      // Three entries of one millisecond (a bulk import): the cursor must neither skip nor repeat any.
      for (const id of ['entry-b', 'entry-c', 'entry-a'])
        await driver.run(
          "INSERT INTO credit_entries (id, account_id, kind, amount, reference, created_at) VALUES (?, ?, 'grant', ?, NULL, ?)",
          [id, holder, 1_000_000n, 1_000],
        );
    } finally {
      await driver.close();
    }
    const ids = async (path: string) => ((await get(path, key)).json.data as { id: string }[]).map((e) => e.id);
    const all = await ids('/credits/history');
    expect(all).toEqual(['entry-c', 'entry-b', 'entry-a']);
    expect(await ids('/credits/history?before=entry-c')).toEqual(['entry-b', 'entry-a']);
    expect(await ids('/credits/history?before=entry-b')).toEqual(['entry-a']);
    expect(await ids('/credits/history?before=entry-a')).toEqual([]);
    await gw.admin('POST', `/accounts/${holder}/credits`, { amount: 2, kind: 'grant' }); // added meanwhile
    expect(await ids('/credits/history?before=entry-c')).toEqual(['entry-b', 'entry-a']);
    expectError(await get('/credits/history?before=entry-a'), 400, /before/); // not this account's
  });
});
