/**
 * kill -9 of `tollgate serve` on the embedded store (issue 11, item 4): committed and journaled
 * charges survive, a stream cut by the kill is charged up to its last checkpoint when the next start
 * replays the journal (no manual step), and the SQLite file passes `PRAGMA integrity_check`.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { request } from 'undici';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateCompletionTokens } from '../src/billing/token-estimate.js';
import { startMockProvider, type MockProvider } from '../src/providers/mock-server.js';
import { fixedBody, fixedCostModel, X_UNITS } from './helpers/holds.js';
import { metric, readyz, until } from './helpers/journal.js';
import { adminClient, buildOnce, type ServeProcess, startServe } from './helpers/process.js';

const ADMIN = 'admin-token-for-kill-tests-01';
const FIXED = fixedCostModel('test/fixed', 'mock-chat');
/** A long stream: 4000 tokens at 50 per second; costs 0.0001 USD per completion token, prompts free. */
const LONG = fixedCostModel('test/long', 'mock@tps=50,tokens=4000');
const PRICE_UNITS_PER_TOKEN = 100_000;

const adminCall = adminClient(ADMIN);

function integrityCheck(path: string): string {
  const db = new Database(path);
  try {
    return String((db.prepare('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check);
  } finally {
    db.close();
  }
}

describe('kill -9 of a gateway process mid-stream (embedded store)', { timeout: 120_000 }, () => {
  let provider: MockProvider;
  let dir: string;
  let first: ServeProcess | null = null;
  let second: ServeProcess | null = null;

  beforeAll(async () => {
    const built = buildOnce();
    [provider, dir] = await Promise.all([startMockProvider(), mkdtemp(join(tmpdir(), 'tollgate-kill-'))]);
    await built;
  }, 180_000);

  afterAll(async () => {
    await first?.stop('SIGKILL');
    await second?.stop('SIGKILL');
    await provider?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('replays the journal at the next start: the cut stream is charged up to its checkpoint, totals exact, integrity ok', async () => {
    const configPath = join(dir, 'tollgate.yaml');
    await writeFile(
      configPath,
      stringify({
        providers: [{ id: 'mock', name: 'Mock', kind: 'openai', base_url: provider.url, api_key: 'upstream-key' }],
        models: [FIXED, LONG],
        limits: { edge: { burst: 0 } },
        billing: { journal: { checkpoint_ms: 200, min_free_bytes: 0 } },
      }),
    );
    const dataDir = join(dir, 'data');
    const env = {
      TOLLGATE_CONFIG: configPath,
      TOLLGATE_DATA_DIR: dataDir,
      TOLLGATE_ADMIN_TOKEN: ADMIN,
      TOLLGATE_LOG_LEVEL: 'info',
    };
    first = await startServe(env, 90_000);
    const account = await adminCall(first.url, 'POST', '/accounts', {
      email: `kill-${randomBytes(3).toString('hex')}@example.test`,
    });
    const accountId = account.data.id as string;
    await adminCall(first.url, 'POST', `/accounts/${accountId}/credits`, { amount: 10, kind: 'grant' });
    const created = await adminCall(first.url, 'POST', `/accounts/${accountId}/keys`, { name: 'kill' });
    const key = created.key as string;
    const manager = (
      await adminCall(first.url, 'POST', `/accounts/${accountId}/keys`, { name: 'listing', management: true })
    ).key as string;
    const post = (url: string, body: unknown) =>
      request(`${url}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });

    // Three committed charges before the kill.
    for (let i = 0; i < 3; i++)
      expect(((await (await post(first.url, fixedBody(FIXED.id, i))).body.json()) as any).usage.cost).toBeGreaterThan(
        0,
      );

    // A long non-streamed answer, read from an upstream stream (the default): the provider produces
    // it, so it is journaled now and then as a stream is, and charged when the process dies.
    const whole = post(first.url, { model: LONG.id, messages: [{ role: 'user', content: 'long' }], max_tokens: 4000 });
    const wholeDone = whole.then(
      (r) => r.body.text().catch(() => ''),
      () => '',
    );
    // A long stream: read until content has flowed and a checkpoint is in the journal, then SIGKILL.
    const response = await post(first.url, {
      model: LONG.id,
      messages: [{ role: 'user', content: 'long' }],
      max_tokens: 4000,
      stream: true,
    });
    expect(response.statusCode).toBe(200);
    const generationId = String(response.headers['x-generation-id']);
    let raw = '';
    const reading = (async () => {
      try {
        for await (const chunk of response.body) raw += chunk.toString();
      } catch {
        // the connection dies with the process
      }
    })();
    await until(
      () => raw.split('\n').filter((l) => l.startsWith('data: {')).length >= 20,
      30_000,
      '20 chunks delivered',
    );
    await until(
      async () => ((await metric(first!.url, 'tollgate_charge_journal_depth')) ?? 0) >= 2,
      30_000,
      'a checkpoint of each answer journaled',
    );
    await new Promise((resolve) => setTimeout(resolve, 300)); // a later checkpoint, with more of the answer
    first.child.kill('SIGKILL');
    await first.exited;
    await reading;
    await wholeDone;
    const delivered = raw
      .split('\n')
      .filter((l) => l.startsWith('data: {'))
      .map((l) => JSON.parse(l.slice(6)).choices?.[0]?.delta?.content ?? '')
      .join('');
    expect(raw).not.toContain('[DONE]');

    const dbPath = join(dataDir, 'tollgate.db');
    expect(integrityCheck(dbPath)).toBe('ok');

    // The next start needs no manual step: it replays the journal before it reports ready.
    second = await startServe(env, 90_000);
    await until(async () => (await readyz(second!.url)).status === 200, 30_000, 'ready after replay');
    expect(second.stdout()).toMatch(/"checkpoints_charged":2/);
    const generation = await request(`${second.url}/api/v1/generation?id=${encodeURIComponent(generationId)}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(generation.statusCode).toBe(200);
    const g = ((await generation.body.json()) as any).data;
    expect(g.tokens_completion).toBeGreaterThan(0);
    expect(g.tokens_completion).toBeLessThanOrEqual(estimateCompletionTokens(delivered)); // never more than was delivered
    expect(Math.round(g.total_cost * 1e9)).toBe(g.tokens_completion * PRICE_UNITS_PER_TOKEN);
    expect(g.finish_reason).toBe('error');

    const keyInfo = (await (
      await request(`${second.url}/api/v1/key`, { headers: { authorization: `Bearer ${key}` } })
    ).body.json()) as any;
    const accountInfo = await adminCall(second.url, 'GET', `/accounts/${accountId}`);
    const listed = await request(`${second.url}/api/v1/generations?limit=10`, {
      headers: { authorization: `Bearer ${manager}` },
    });
    const rows = ((await listed.body.json()) as any).data as {
      id: string;
      streamed: boolean;
      tokens_completion: number;
      total_cost: number;
    }[];
    const wholeRow = rows.find(
      (r) => r.streamed === false && r.tokens_completion > 0 && r.id !== generationId && r.total_cost * 1e9 !== X_UNITS,
    );
    expect(wholeRow, JSON.stringify(rows)).toBeDefined();
    const expected =
      3 * X_UNITS + g.tokens_completion * PRICE_UNITS_PER_TOKEN + wholeRow!.tokens_completion * PRICE_UNITS_PER_TOKEN;
    expect(Math.round(keyInfo.data.usage * 1e9)).toBe(expected);
    expect(Math.round(accountInfo.data.total_usage * 1e9)).toBe(expected);
    console.log(
      'kill -9 mid-stream:',
      JSON.stringify({
        delivered_tokens_estimate: estimateCompletionTokens(delivered),
        charged_tokens: g.tokens_completion,
        charged_usd: g.total_cost,
      }),
    );

    expect(await second.stop()).toBe(0);
    expect(integrityCheck(dbPath)).toBe('ok');
  });
});
