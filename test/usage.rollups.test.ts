/**
 * Usage rollups (migration 4) are written in the charge's transaction: after concurrent batches they
 * equal the sums over the generations table, a replayed generation changes nothing, and the public
 * tables carry no account data. Both stores.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usagePeriods } from '../src/core/usage-window.js';
import type { SqlDriver } from '../src/store/sql-driver.js';
import type { Settlement, Store } from '../src/store/types.js';
import type { UsageSums } from '../src/store/usage-types.js';
import { appIdentity } from '../src/usage/app-identity.js';
import { generationFixture, keyFixture, newAccountFixture } from './helpers/store-fixtures.js';
import { STORE_TARGETS, type StoreDatabase } from './helpers/store-targets.js';

const DAY = 86_400_000;
const T0 = Date.parse('2026-11-10T10:00:00Z');
const APPS: [string | null, string | null][] = [
  ['https://app.example.com/chat?session=secret', 'Example App'],
  ['https://other.example.org', null],
  ['http://localhost:5173/', 'Local Tool'],
  ['http://localhost:5173/', null], // loopback without a title: no app
  [null, 'Title only'], // no referer: no app
];
const MODELS = ['m/a', 'm/b', 'm/c'];

describe.each(STORE_TARGETS)('usage rollups ($name)', (target) => {
  let database: StoreDatabase;
  let store: Store;
  let driver: SqlDriver;
  const accounts: { id: string; keys: string[] }[] = [];

  beforeAll(async () => {
    database = await target.createDatabase();
    store = database.openStore();
    await store.migrate();
    driver = database.openDriver();
    for (let a = 0; a < 2; a++) {
      const account = await store.createAccount(newAccountFixture());
      const keys: string[] = [];
      for (let k = 0; k < 3; k++) {
        const key = keyFixture(account.id);
        await store.insertKey(key);
        keys.push(key.hash);
      }
      accounts.push({ id: account.id, keys });
    }
  });
  afterAll(() => database.cleanup());

  function settlement(i: number): Settlement {
    const account = accounts[i % accounts.length]!;
    const [referer, title] = APPS[i % APPS.length]!;
    const createdAt = T0 + (i % 4) * DAY + i;
    const isByok = i % 7 === 0;
    return {
      generation: generationFixture(account.id, account.keys[i % 3]!, {
        createdAt,
        model: MODELS[i % MODELS.length]!,
        providerName: i % 2 === 0 ? 'Mock' : 'Mock B',
        totalCost: BigInt(1_000 + i),
        isByok,
        upstreamPromptCost: BigInt(300 + i),
        upstreamCompletionCost: BigInt(700 + i),
        tokensPrompt: 10 + (i % 5),
        tokensCompletion: 20 + (i % 3),
        tokensReasoning: i % 2 === 0 ? i % 4 : null,
        httpReferer: referer,
        appTitle: title,
      }),
      periods: usagePeriods(createdAt),
    };
  }

  async function rollupTotals() {
    const [row] = await driver.all(
      'SELECT COALESCE(SUM(usage), 0) AS usage, COALESCE(SUM(byok_usage), 0) AS byok, COALESCE(SUM(requests), 0) AS requests, ' +
        'COALESCE(SUM(prompt_tokens), 0) AS prompt, COALESCE(SUM(completion_tokens), 0) AS completion, COALESCE(SUM(reasoning_tokens), 0) AS reasoning FROM usage_rollups',
    );
    return Object.fromEntries(
      Object.entries(row!)
        .filter(([k]) => k !== '_metadata')
        .map(([k, v]) => [k, BigInt(v as bigint)]),
    );
  }

  let settlements: Settlement[] = [];

  it('after concurrent batches, every rollup cell equals the sum of its generations', async () => {
    settlements = Array.from({ length: 240 }, (_, i) => settlement(i));
    // 12 batches of 20 settled at once: on PostgreSQL they run in parallel transactions.
    const batches = Array.from({ length: 12 }, (_, b) => settlements.slice(b * 20, b * 20 + 20));
    const outcomes = await Promise.all(batches.map((batch) => store.settle(batch)));
    expect(outcomes.flat().every((o) => o.applied)).toBe(true);

    // The expected cells, computed independently from the settlements.
    const expected = new Map<
      string,
      { usage: bigint; byok: bigint; requests: number; prompt: number; completion: number; reasoning: number }
    >();
    for (const { generation: g, periods } of settlements) {
      const appId = appIdentity(g.httpReferer, g.appTitle)?.id ?? 0;
      const cell = [g.accountId, periods.day.slice(2), g.model, g.providerName, g.keyHash, appId].join('|');
      const e = expected.get(cell) ?? { usage: 0n, byok: 0n, requests: 0, prompt: 0, completion: 0, reasoning: 0 };
      e.usage += g.totalCost;
      e.byok += g.isByok ? g.upstreamPromptCost + g.upstreamCompletionCost : 0n;
      e.requests += 1;
      e.prompt += g.tokensPrompt;
      e.completion += g.tokensCompletion;
      e.reasoning += g.tokensReasoning ?? 0;
      expected.set(cell, e);
    }
    const rows = await driver.all('SELECT * FROM usage_rollups');
    expect(rows.length).toBe(expected.size);
    for (const row of rows) {
      const cell = [row.account_id, row.day, row.model, row.provider_name, row.key_hash, Number(row.app_id)].join('|');
      expect(expected.get(cell), cell).toEqual({
        usage: BigInt(row.usage as bigint),
        byok: BigInt(row.byok_usage as bigint),
        requests: Number(row.requests),
        prompt: Number(row.prompt_tokens),
        completion: Number(row.completion_tokens),
        reasoning: Number(row.reasoning_tokens),
      });
    }

    // The coarser rollups are the detail summed along their own keys.
    const sums =
      'SUM(usage) AS usage, SUM(byok_usage) AS byok_usage, SUM(requests) AS requests, SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens, SUM(reasoning_tokens) AS reasoning_tokens';
    const plain = (rows: Record<string, unknown>[]) =>
      rows.map((row) =>
        Object.fromEntries(
          Object.entries(row)
            .filter(([k]) => k !== '_metadata')
            .map(([k, v]) => [k, typeof v === 'string' ? v : String(v)]),
        ),
      );
    for (const [table, keys] of [
      ['usage_rollups_model', 'account_id, day, model, provider_name'],
      ['usage_rollups_source', 'account_id, day, key_hash, app_id'],
    ] as const) {
      const coarse = await driver.all(
        `SELECT ${keys}, usage, byok_usage, requests, prompt_tokens, completion_tokens, reasoning_tokens FROM ${table} ORDER BY ${keys}`,
      );
      const summed = await driver.all(`SELECT ${keys}, ${sums} FROM usage_rollups GROUP BY ${keys} ORDER BY ${keys}`);
      expect(plain(coarse), table).toEqual(plain(summed));
    }

    // And in total, against the generations table itself.
    const [generations] = await driver.all(
      'SELECT COUNT(*) AS n, SUM(total_cost) AS cost, SUM(tokens_prompt) AS prompt, SUM(tokens_completion) AS completion FROM generations',
    );
    const totals = await rollupTotals();
    expect(totals.requests).toBe(BigInt(generations!.n as bigint));
    expect(totals.usage).toBe(BigInt(generations!.cost as bigint));
    expect(totals.prompt).toBe(BigInt(generations!.prompt as bigint));
    expect(totals.completion).toBe(BigInt(generations!.completion as bigint));
  });

  it('a replayed generation id (alone, or inside a new batch) adds nothing', async () => {
    const before = await rollupTotals();
    const publicBefore = await driver.all('SELECT day, model, requests FROM usage_model_daily ORDER BY day, model');
    const replay = await store.settle(settlements.slice(0, 30));
    expect(replay.every((o) => !o.applied)).toBe(true);
    // A batch mixing one new charge with replays adds exactly the new one.
    const fresh = settlement(10_001);
    const mixed = await store.settle([settlements[3]!, fresh, settlements[3]!]);
    expect(mixed.map((o) => o.applied)).toEqual([false, true, false]);
    const after = await rollupTotals();
    expect(after.requests).toBe(before.requests! + 1n);
    expect(after.usage).toBe(before.usage! + fresh.generation.totalCost);
    const publicAfter = await driver.all('SELECT day, model, requests FROM usage_model_daily ORDER BY day, model');
    expect(publicAfter.reduce((n, r) => n + Number(r.requests), 0)).toBe(
      publicBefore.reduce((n, r) => n + Number(r.requests), 0) + 1,
    );
  });

  it('apps: normalised origins, loopback only with a title, first title kept, no account data in public tables', async () => {
    const apps = await driver.all('SELECT id, app_key, origin, name FROM usage_apps ORDER BY origin');
    expect(apps.map((a) => [a.origin, a.name])).toEqual([
      ['http://localhost:5173', 'Local Tool'],
      ['https://app.example.com', 'Example App'],
      ['https://other.example.org', 'other.example.org'],
    ]);
    expect(apps.find((a) => a.origin === 'http://localhost:5173')!.app_key).toBe('http://localhost:5173#Local Tool');
    expect(Number(apps.find((a) => a.name === 'Example App')!.id)).toBe(
      appIdentity('https://app.example.com', 'Example App')!.id,
    );

    // A later title neither renames a titled app nor is lost for an untitled one.
    const renamed = settlement(20_000);
    renamed.generation.httpReferer = 'https://app.example.com/';
    renamed.generation.appTitle = 'Impostor';
    const named = settlement(20_001);
    named.generation.httpReferer = 'https://other.example.org/x';
    named.generation.appTitle = 'Other Org';
    await store.settle([renamed, named]);
    const names = await store.usage.apps((await driver.all('SELECT id FROM usage_apps')).map((r) => Number(r.id)));
    expect([...names.values()].map((a) => a.name).sort()).toEqual(['Example App', 'Local Tool', 'Other Org']);

    for (const table of ['usage_app_daily', 'usage_model_daily']) {
      const text = JSON.stringify(await driver.all(`SELECT * FROM ${table}`), (_, v: unknown) =>
        typeof v === 'bigint' ? v.toString() : v,
      );
      for (const account of accounts) {
        expect(text).not.toContain(account.id);
        for (const key of account.keys) expect(text).not.toContain(key);
      }
      expect(text).not.toMatch(/usage|byok/);
    }
  });

  it('activity and daily read the rollups as summed by the database: every grouping and filter, amounts past 2^53 exact, no rows', async () => {
    const from = '2026-11-01';
    const to = '2026-11-30';
    const figuresOf = (sums: UsageSums) =>
      [
        sums.usage.toString(),
        sums.byokUsage.toString(),
        sums.requests,
        sums.promptTokens,
        sums.completionTokens,
        sums.reasoningTokens,
      ].join('/');
    const expected = async (select: string, where: string, group: string, params: unknown[]) =>
      (
        await driver.all(
          `SELECT ${select}, SUM(usage) AS usage, SUM(byok_usage) AS byok, SUM(requests) AS requests, SUM(prompt_tokens) AS prompt, ` +
            `SUM(completion_tokens) AS completion, SUM(reasoning_tokens) AS reasoning FROM usage_rollups WHERE ${where} GROUP BY ${group}`,
          params as never[],
        )
      )
        .map((row) => {
          const figures = [row.usage, row.byok, row.requests, row.prompt, row.completion, row.reasoning]
            .map(String)
            .join('/');
          return `${select
            .split(', ')
            .map((column) => String(row[column]))
            .join('|')}|${figures}`;
        })
        .sort();

    for (const account of accounts) {
      const all = await store.usage.activity(account.id, { from, to });
      expect(all.length).toBeGreaterThan(1);
      expect(all.map((r) => `${r.day}|${r.model}|${r.providerName}|${figuresOf(r)}`).sort()).toEqual(
        await expected(
          'day, model, provider_name',
          'account_id = ? AND day >= ? AND day <= ?',
          'day, model, provider_name',
          [account.id, from, to],
        ),
      );
      const hash = account.keys[1]!;
      const one = await store.usage.activity(account.id, { from, to }, hash);
      expect(one.length).toBeGreaterThan(0);
      expect(one.map((r) => `${r.day}|${r.model}|${r.providerName}|${figuresOf(r)}`).sort()).toEqual(
        await expected(
          'day, model, provider_name',
          'account_id = ? AND key_hash = ? AND day >= ? AND day <= ?',
          'day, model, provider_name',
          [account.id, hash, from, to],
        ),
      );
      for (const [groupBy, column] of [
        ['model', 'model'],
        ['key', 'key_hash'],
        ['app', 'app_id'],
      ] as const) {
        const rows = await store.usage.daily(account.id, { from, to, groupBy });
        expect(rows.map((r) => `${r.day}|${r.group}|${figuresOf(r)}`).sort()).toEqual(
          await expected(`day, ${column}`, 'account_id = ? AND day >= ? AND day <= ?', `day, ${column}`, [
            account.id,
            from,
            to,
          ]),
        );
        if (groupBy === 'app') for (const row of rows) expect(typeof row.group).toBe('number');
      }
      const byModel = await store.usage.daily(account.id, { from, to, groupBy: 'key', model: 'm/b', keyHash: hash });
      expect(byModel.map((r) => `${r.day}|${r.group}|${figuresOf(r)}`).sort()).toEqual(
        await expected(
          'day, key_hash',
          'account_id = ? AND day >= ? AND day <= ? AND model = ? AND key_hash = ?',
          'day, key_hash',
          [account.id, from, to, 'm/b', hash],
        ),
      );
      // A range without usage: no rows (PostgreSQL's JSON aggregate of nothing is NULL).
      expect(await store.usage.activity(account.id, { from: '2020-01-01', to: '2020-01-31' })).toEqual([]);
      expect(await store.usage.activity(account.id, { from: '2020-01-01', to: '2020-01-31' }, hash)).toEqual([]);
      expect(await store.usage.daily(account.id, { from: '2020-01-01', to: '2020-01-31', groupBy: 'app' })).toEqual([]);
    }

    // An amount no JSON number holds exactly (2^60 + 7 units, ~1.15 billion USD) comes back exact, and
    // names JSON has to escape come back as they were written.
    const rich = await store.createAccount(newAccountFixture());
    const richKey = keyFixture(rich.id);
    await store.insertKey(richKey);
    const createdAt = T0 + 2 * DAY;
    const huge = 2n ** 60n + 7n;
    const model = 'vendor/"quoted" \\ back\tslash ünïcödé 漢字 😀 \u2028 end';
    const providerName = 'Prov "x" \\ y';
    await store.settle([
      {
        generation: generationFixture(rich.id, richKey.hash, { createdAt, model, providerName, totalCost: huge }),
        periods: usagePeriods(createdAt),
      },
    ]);
    for (const row of [
      ...(await store.usage.activity(rich.id, { from, to })),
      ...(await store.usage.activity(rich.id, { from, to }, richKey.hash)),
    ]) {
      expect(row.usage).toBe(huge);
      expect(row.model).toBe(model);
      expect(row.providerName).toBe(providerName);
    }
    for (const groupBy of ['model', 'key', 'app'] as const) {
      const [row] = await store.usage.daily(rich.id, { from, to, groupBy });
      expect(row!.usage).toBe(huge);
      if (groupBy === 'model') expect(row!.group).toBe(model);
    }
    // A count past 2^53 is refused, as from any row, not rounded.
    await driver.run('UPDATE usage_rollups_model SET requests = ? WHERE account_id = ?', [2n ** 53n + 1n, rich.id]);
    await expect(store.usage.activity(rich.id, { from, to })).rejects.toThrow(/safe integer/);
  });
});
