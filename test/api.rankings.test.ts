/**
 * Public rankings through the gateway and the official SDK (`datasets.getAppRankings()`,
 * `datasets.getRankingsDaily()`), the dashboard summary, `rankings.public: false`, the account
 * threshold, and that nothing about an account is in a public answer. Both stores.
 */
import { OpenRouter } from '@openrouter/sdk';
import * as errors from '@openrouter/sdk/models/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays, utcDay } from '../src/usage/utc-day.js';
import { call, expectError, HELLO } from './helpers/api.js';
import { chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget, STORE_TARGETS } from './helpers/store-targets.js';

const DAY = 86_400_000;
const NO_RETRIES = { strategy: 'none' } as const;
const ALPHA = { 'HTTP-Referer': 'https://alpha.example/app?user=ana@example.test', 'X-Title': 'Alpha' };
const BETA = { 'HTTP-Referer': 'https://beta.example', 'X-OpenRouter-Title': 'Beta <script>alert(1)</script>' };
const DEV = { 'HTTP-Referer': 'http://localhost:5173/', 'X-Service-Title': 'Dev Tool' };

async function valid<T>(promise: Promise<T>): Promise<T> {
  try {
    return await promise;
  } catch (error) {
    if (error instanceof errors.ResponseValidationError)
      throw new Error(`SDK rejected the response: ${error.pretty()}`);
    throw error;
  }
}

describe.each(STORE_TARGETS)('public rankings ($name)', (target) => {
  let gw: TestGateway;
  let now = 0;
  const clock = { now: () => ++now };
  const today = () => utcDay(now);
  const realToday = utcDay(Date.now());
  const start = Date.parse(`${realToday}T12:00:00Z`);
  let tokensPerRequest = 0;
  const secrets: string[] = [];

  beforeAll(async () => {
    now = start - 10 * DAY;
    // Apps of one account listed (the default asks for three accounts; see the min_accounts test).
    gw = await startTestGateway({
      target,
      clock,
      configure: (file) => Object.assign(file, { rankings: { min_accounts: 1 } }),
    });
    const a = await gw.createAccount(10);
    const b = await gw.createAccount(10);
    const keyA = await gw.createKey(a);
    const keyB = await gw.createKey(b);
    secrets.push(a, b, keyA.hash, keyB.hash, keyA.key.slice(9), keyB.key.slice(9));
    const send = async (key: string, headers: Record<string, string>, model = 'test/chat') => {
      const response = await chat(gw, key, { model, messages: HELLO }, headers);
      expect(response.status, response.text).toBe(200);
      tokensPerRequest = response.json.usage.prompt_tokens + response.json.usage.completion_tokens;
    };
    now = start - 5 * DAY;
    for (const key of [keyA.key, keyA.key, keyB.key]) await send(key, ALPHA);
    now = start - 2 * DAY;
    await send(keyA.key, BETA, 'test/failover');
    now = start - 1 * DAY;
    await send(keyB.key, ALPHA);
    await send(keyA.key, DEV);
    await send(keyA.key, { 'HTTP-Referer': 'http://127.0.0.1:8080/' }); // loopback without a title: no app
    await send(keyA.key, { 'HTTP-Referer': 'javascript:alert(1)', 'X-Title': 'Junk' }); // not a URL an app has: no app
    now = start;
    await send(keyA.key, BETA);
    await send(keyA.key, BETA);
  });
  afterAll(() => gw.close());

  const sdk = () => new OpenRouter({ serverURL: gw.api, retryConfig: NO_RETRIES });

  it('getAppRankings (popular): the 30 days before today by default, apps by tokens, nothing else', async () => {
    const page = await valid(sdk().datasets.getAppRankings({}));
    const { data, meta } = page.result;
    expect(meta).toMatchObject({ startDate: addDays(today(), -31), endDate: addDays(today(), -1), version: 'v1' });
    expect(Number.isNaN(Date.parse(meta.asOf))).toBe(false);
    expect(data.map((r) => [r.rank, r.appName, r.totalRequests, r.totalTokens])).toEqual([
      [1, 'Alpha', 4, String(4 * tokensPerRequest)],
      [2, 'Beta <script>alert(1)</script>', 1, String(tokensPerRequest)],
      [3, 'Dev Tool', 1, String(tokensPerRequest)],
    ]);
    expect(new Set(data.map((r) => r.appId)).size).toBe(3);
    expect(data.every((r) => Number.isSafeInteger(r.appId) && r.appId > 0)).toBe(true);
  });

  it('an explicit end_date of today counts the day so far; limit and offset keep ranks absolute', async () => {
    const withToday = await valid(sdk().datasets.getAppRankings({ endDate: today() }));
    expect(withToday.result.data.map((r) => [r.appName, r.totalRequests])).toEqual([
      ['Alpha', 4],
      ['Beta <script>alert(1)</script>', 3],
      ['Dev Tool', 1],
    ]);
    const second = await valid(sdk().datasets.getAppRankings({ endDate: today(), limit: 1, offset: 1 }));
    expect(second.result.data.map((r) => [r.rank, r.appName])).toEqual([[2, 'Beta <script>alert(1)</script>']]);
  });

  it('trending: window volume minus the average of the three windows before it; no growth, no row', async () => {
    const oneDay = await valid(
      sdk().datasets.getAppRankings({
        sort: 'trending',
        startDate: addDays(today(), -1),
        endDate: addDays(today(), -1),
      }),
    );
    expect(oneDay.result.data.map((r) => r.appName)).toEqual(['Alpha', 'Dev Tool']);
    // Over the last 4 days Alpha made 1 request, after 3 in the 12 days before: no excess growth.
    const fourDays = await valid(
      sdk().datasets.getAppRankings({
        sort: 'trending',
        startDate: addDays(today(), -4),
        endDate: addDays(today(), -1),
      }),
    );
    expect(fourDays.result.data.map((r) => [r.rank, r.appName])).toEqual([
      [1, 'Beta <script>alert(1)</script>'],
      [2, 'Dev Tool'],
    ]);
  });

  it('getRankingsDaily: tokens per model per day, date ascending, then tokens descending', async () => {
    const daily = await valid(sdk().datasets.getRankingsDaily({ startDate: addDays(today(), -6), endDate: today() }));
    expect(daily.meta).toMatchObject({ startDate: addDays(today(), -6), endDate: today(), version: 'v1' });
    const t = tokensPerRequest;
    expect(daily.data.map((r) => [r.date, r.modelPermaslug, r.totalTokens])).toEqual([
      [addDays(today(), -5), 'test/chat', String(3 * t)],
      [addDays(today(), -2), 'test/failover', String(t)],
      [addDays(today(), -1), 'test/chat', String(4 * t)],
      [today(), 'test/chat', String(2 * t)],
    ]);
    const weekly = await valid(
      sdk().datasets.getRankingsDaily({ startDate: addDays(today(), -6), endDate: today(), period: 'week' }),
    );
    expect(weekly.data.reduce((n, r) => n + Number(r.totalTokens), 0)).toBe(10 * t);
    expect(weekly.data.every((r) => new Date(`${r.date}T00:00:00Z`).getUTCDay() === 1)).toBe(true);
  });

  it('bad input → 400 naming the parameter', async () => {
    const get = (path: string) => call(gw, 'GET', path);
    expectError(await get('/datasets/app-rankings?sort=newest'), 400, /sort/);
    expectError(await get('/datasets/app-rankings?limit=101'), 400, /limit/);
    expectError(await get('/datasets/app-rankings?limit=0'), 400, /limit/);
    expectError(await get('/datasets/app-rankings?offset=101'), 400, /offset/);
    expectError(await get('/datasets/app-rankings?end_date=2026-02-30'), 400, /end_date/);
    expectError(await get(`/datasets/app-rankings?end_date=${addDays(today(), 1)}`), 400, /end_date/);
    expectError(await get('/datasets/app-rankings?end_date=2024-12-31'), 400, /2025-01-01/);
    expectError(
      await get(`/datasets/app-rankings?start_date=${today()}&end_date=${addDays(today(), -1)}`),
      400,
      /start_date/,
    );
    expectError(await get('/datasets/app-rankings?start_date=2025-01-01&end_date=2026-06-30'), 400, /366 days/);
    expectError(await get('/datasets/app-rankings?category=coding'), 400, /category/);
    expectError(await get('/datasets/rankings-daily?period=year'), 400, /period/);
    expectError(await get('/datasets/rankings-daily?modality=text'), 400, /modality/);
    expectError(await get('/rankings/summary?period=year'), 400, /period/);
    // A start before the dataset floor is clamped to it (as OpenRouter does), and echoed.
    const clamped = await get('/datasets/app-rankings?start_date=2024-06-01&end_date=2025-01-10');
    expect(clamped.json.meta.start_date).toBe('2025-01-01');
  });

  it('GET /rankings/summary: today, this week, this month', async () => {
    const day = await call(gw, 'GET', '/rankings/summary');
    expect(day.status, day.text).toBe(200);
    expect(day.json.data).toEqual({
      period: 'day',
      start_date: today(),
      end_date: today(),
      apps: [
        {
          rank: 1,
          name: 'Beta <script>alert(1)</script>',
          origin: 'https://beta.example',
          total_tokens: 2 * tokensPerRequest,
          requests: 2,
        },
      ],
      models: [{ rank: 1, model: 'test/chat', name: 'test/chat', total_tokens: 2 * tokensPerRequest, requests: 2 }],
    });
    const month = (await call(gw, 'GET', '/rankings/summary?period=month')).json.data;
    expect(month.start_date).toBe(`${today().slice(0, 8)}01`);
    const week = (await call(gw, 'GET', '/rankings/summary?period=week')).json.data;
    expect(new Date(`${week.start_date}T00:00:00Z`).getUTCDay()).toBe(1);
    expect(
      week.apps.every(
        (a: Record<string, unknown>) => Object.keys(a).sort().join() === 'name,origin,rank,requests,total_tokens',
      ),
    ).toBe(true);
  });

  it('no public answer holds an account id, a key, a key hash, an e-mail, money or a referer path', async () => {
    const paths = [
      '/datasets/app-rankings',
      `/datasets/app-rankings?end_date=${today()}`,
      `/datasets/app-rankings?sort=trending&end_date=${today()}`,
      `/datasets/rankings-daily?end_date=${today()}`,
      '/rankings/summary?period=month',
    ];
    for (const path of paths) {
      const response = await call(gw, 'GET', path);
      expect(response.status).toBe(200);
      for (const secret of secrets) expect(response.text).not.toContain(secret);
      expect(response.text).not.toMatch(/example\.test|user=|"usage"|cost|acct_|sk-tg|Junk|javascript/);
    }
  });
});

describe('rankings configuration', () => {
  it('rankings.public: false → every rankings route is 404 like an unknown route', async () => {
    const gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => Object.assign(file, { rankings: { public: false } }),
    });
    try {
      for (const path of ['/datasets/app-rankings', '/datasets/rankings-daily', '/rankings/summary']) {
        expectError(await call(gw, 'GET', path), 404, /No route/);
        expectError(await call(gw, 'POST', path, { json: {} }), 404, /No route/);
      }
      const sdk = new OpenRouter({ serverURL: gw.api, retryConfig: NO_RETRIES });
      await expect(sdk.datasets.getAppRankings({})).rejects.toMatchObject({ statusCode: 404 });
    } finally {
      await gw.close();
    }
  });

  it('by default an app is listed once three accounts have used it: one or two accounts are not published under its name', async () => {
    const gw = await startTestGateway({ target: sqliteTarget });
    try {
      const listed = async () =>
        (await call(gw, 'GET', '/rankings/summary')).json.data.apps.map((app: { name: string }) => app.name);
      for (let n = 1; n <= 3; n++) {
        const key = (await gw.createKey(await gw.createAccount(10))).key;
        expect((await chat(gw, key, { model: 'test/chat', messages: HELLO }, ALPHA)).status).toBe(200);
        expect(await listed()).toEqual(n < 3 ? [] : ['Alpha']);
      }
    } finally {
      await gw.close();
    }
  });

  it('rankings.min_accounts: an app used by fewer accounts is not listed', async () => {
    const gw = await startTestGateway({
      target: sqliteTarget,
      configure: (file) => Object.assign(file, { rankings: { min_accounts: 2 } }),
    });
    try {
      const a = await gw.createAccount(10);
      const b = await gw.createAccount(10);
      const keyA = (await gw.createKey(a)).key;
      const keyB = (await gw.createKey(b)).key;
      for (const [key, headers] of [
        [keyA, ALPHA],
        [keyB, ALPHA],
        [keyA, BETA],
      ] as const)
        expect((await chat(gw, key, { model: 'test/chat', messages: HELLO }, headers)).status).toBe(200);
      const summary = await call(gw, 'GET', '/rankings/summary');
      expect(summary.json.data.apps.map((app: { name: string }) => app.name)).toEqual(['Alpha']);
      const rankings = await call(gw, 'GET', `/datasets/app-rankings?end_date=${utcDay(Date.now())}`);
      expect(rankings.json.data.map((app: { app_name: string }) => app.app_name)).toEqual(['Alpha']);
    } finally {
      await gw.close();
    }
  });
});
