/**
 * Non-streamed requests are served from upstream streams; one cut mid-answer — the caller hangs up,
 * or shutdown's grace ends — is charged for what the upstream produced, as a cut stream is.
 */
import type { Agent } from 'undici';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlDriver } from '../src/store/sql-driver.js';
import { balanceUnits, chat, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const MESSAGES = [{ role: 'user', content: 'Tell me about the fox.' }];
const PROMPT_UNITS = 1000n;
const COMPLETION_UNITS = 2000n;

interface GenerationRow {
  id: string;
  totalCost: bigint;
  finishReason: unknown;
  streamed: boolean;
  tokensPrompt: bigint;
  tokensCompletion: bigint;
  details: { cancelled: boolean; usageEstimated: boolean };
}

/** The account's generations, read with raw SQL (the store has no list API). */
async function generationsOf(driver: SqlDriver, accountId: string): Promise<GenerationRow[]> {
  const rows = await driver.all(
    'SELECT id, total_cost, finish_reason, streamed, tokens_prompt, tokens_completion, details FROM generations WHERE account_id = ?',
    [accountId],
  );
  return rows.map((row) => ({
    id: String(row.id),
    totalCost: BigInt(row.total_cost as bigint | number),
    finishReason: row.finish_reason,
    streamed: Number(row.streamed) === 1,
    tokensPrompt: BigInt(row.tokens_prompt as bigint | number),
    tokensCompletion: BigInt(row.tokens_completion as bigint | number),
    details: JSON.parse(String(row.details)) as GenerationRow['details'],
  }));
}

describe('a non-streamed request cut mid-answer', () => {
  let gw: TestGateway;
  let driver: SqlDriver;

  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
    driver = gw.database.openDriver();
  });

  afterAll(async () => {
    await gw?.close();
  });

  it('is charged for what was produced when the caller hangs up', async () => {
    const accountId = await gw.createAccount(10);
    const { key } = await gw.createKey(accountId);
    const before = await balanceUnits(gw, accountId);
    const upstream = gw.gateway.services.chat.execute.dispatcherFor('mock') as Agent;
    const mockOrigin = new URL(gw.provider.url).origin;

    const caller = new AbortController();
    const pending = request(`${gw.api}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/endless', messages: MESSAGES }),
      signal: caller.signal,
    });
    setTimeout(() => caller.abort(), 1000);
    await expect(pending).rejects.toThrow();

    let rows = await generationsOf(driver, accountId);
    const deadline = Date.now() + 5000;
    while (rows.length === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      rows = await generationsOf(driver, accountId);
    }
    expect(rows).toHaveLength(1);
    const [generation] = rows;
    expect(generation!.details.cancelled).toBe(true);
    expect(generation!.streamed).toBe(false);
    expect(generation!.details.usageEstimated).toBe(true); // the mock sends usage only at the end
    expect(generation!.finishReason).toBeNull();
    expect(generation!.tokensCompletion).toBeGreaterThan(10n); // ~50 tokens/s for ~1 s
    expect(generation!.tokensCompletion).toBeLessThan(1000n); // 10,000 were scripted
    expect(generation!.totalCost).toBeGreaterThan(0n);
    expect(generation!.totalCost).toBe(
      generation!.tokensPrompt * PROMPT_UNITS + generation!.tokensCompletion * COMPLETION_UNITS,
    );

    // The upstream request was abandoned, not read to its end.
    const until = Date.now() + 5000;
    while ((upstream.stats[mockOrigin]?.running ?? 0) > 0 && Date.now() < until)
      await new Promise((r) => setTimeout(r, 50));
    expect(upstream.stats[mockOrigin]?.running ?? 0).toBe(0);

    // Charged once, for exactly that cost.
    await new Promise((r) => setTimeout(r, 300));
    expect(await generationsOf(driver, accountId)).toHaveLength(1);
    expect(BigInt(await balanceUnits(gw, accountId))).toBe(BigInt(before) - generation!.totalCost);
  });
});

describe('a non-streamed request cut by shutdown', () => {
  it('answers 503 server.shutting_down and is charged for what was produced', async () => {
    const own = await startTestGateway({ target: sqliteTarget });
    try {
      const accountId = await own.createAccount(10);
      const { key } = await own.createKey(accountId);
      const before = await own.store.getAccount(accountId);
      const answering = chat(own, key, { model: 'test/endless', messages: MESSAGES });
      await new Promise((r) => setTimeout(r, 400));
      const shutdown = own.gateway.shutdown(300);
      const response = await answering;
      await shutdown;

      expect(response.status).toBe(503);
      expect(response.json.error.code).toBe(503);
      expect(response.json.error.message).toBe('The gateway is shutting down');
      expect(response.text).not.toContain('Provider connection failed');

      const id = String(response.headers['x-generation-id']);
      const generation = await own.store.getGeneration(id);
      expect(generation).not.toBeNull();
      expect(generation!.streamed).toBe(false);
      expect(generation!.finishReason).toBe('error'); // as a stream cut by shutdown
      expect(generation!.usageEstimated).toBe(true);
      expect(generation!.tokensCompletion).toBeGreaterThan(0);
      expect(generation!.totalCost).toBeGreaterThan(0n);

      const after = await own.store.getAccount(accountId);
      expect(after!.totalUsage - before!.totalUsage).toBe(generation!.totalCost);
    } finally {
      await own.close();
    }
  });
});
