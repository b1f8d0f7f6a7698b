/**
 * Store outages with the charge journal (README "The charge journal and store outages"), in one
 * process on the embedded store made unreachable on demand:
 *   - answers produced while the store is out are charged from the journal when it returns, totals exact;
 *   - `closed`: paid requests 503 during the outage, nothing forwarded; /readyz 503 naming it;
 *   - `grace`: the per-account exposure bound, measured; /readyz 200 `degraded`;
 *   - a full journal refuses paid requests before anything is forwarded.
 */
import { rm } from 'node:fs/promises';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { chat, chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { fixedBody, fixedCostModel, X_UNITS, X_USD } from './helpers/holds.js';
import { breakableStore, journalDir, metric, moneyTotals, readyz, until, type Breakable } from './helpers/journal.js';
import { sqliteTarget } from './helpers/store-targets.js';

const SLOW = fixedCostModel('test/fixed-slow', 'mock@latency=1500');
const FIXED = fixedCostModel('test/fixed', 'mock-chat');
const PACED = fixedCostModel('test/paced-long', 'mock@tps=40,tokens=80');
/** 20 tokens at 40 a second, then an in-band error: a whole answer that always breaks half-way. */
const BREAKS = fixedCostModel('test/breaks-late', 'mock@tps=40,tokens=80,behavior=stream_error,break_after=20');

let gw: TestGateway | null = null;
let dir: string | null = null;

afterEach(async () => {
  await gw?.close();
  gw = null;
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = null;
});

async function start(
  broken: Breakable,
  billing: Record<string, unknown> = {},
  more: Record<string, unknown> = {},
): Promise<TestGateway> {
  dir = await journalDir();
  gw = await startTestGateway({
    target: sqliteTarget,
    extraModels: [SLOW, FIXED, PACED, BREAKS],
    wrapStore: broken.wrap,
    journalDir: dir,
    configure: (file) =>
      Object.assign(file, more, {
        billing: { ...billing, journal: { min_free_bytes: 0, ...((billing.journal as object) ?? {}) } },
      }),
  });
  return gw;
}

function costOf(result: { json?: any; events?: any[] }): number {
  if (result.json) return Math.round(result.json.usage.cost * 1e9);
  const usage = result.events!.find((e) => e.usage)?.usage;
  return Math.round(usage.cost * 1e9);
}

describe('stream checkpoints', { timeout: 60_000 }, () => {
  it('a stream that ends normally is charged once: its final charge supersedes the checkpoints written while it ran', async () => {
    const g = await start(breakableStore(), { journal: { checkpoint_ms: 50, min_free_bytes: 0 } });
    const accountId = await g.createAccount(1);
    const { key, hash } = await g.createKey(accountId);
    const response = await request(`${g.api}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...fixedBody(PACED.id, 0), max_tokens: 80, stream: true }),
    });
    let raw = '';
    let sawCheckpoint = false;
    for await (const chunk of response.body) {
      raw += chunk.toString();
      if (!sawCheckpoint && raw.includes('data: {') && !raw.includes('[DONE]'))
        sawCheckpoint = ((await metric(g.url, 'tollgate_charge_journal_depth')) ?? 0) >= 1;
    }
    expect(sawCheckpoint).toBe(true); // a checkpoint was live in the journal mid-stream
    expect(raw).toContain('[DONE]');
    const cost = Math.round(
      JSON.parse(
        raw
          .split('\n')
          .filter((l) => l.includes('"usage"'))
          .at(-1)!
          .slice(6),
      ).usage.cost * 1e9,
    );
    // The entry goes once the journal's own sync of the final charge is done (just after the answer).
    await until(async () => (await metric(g.url, 'tollgate_charge_journal_depth')) === 0, 10_000, 'entry done');
    const totals = await moneyTotals(g.database.openDriver(), accountId, hash);
    expect(totals).toEqual({
      generations: BigInt(cost),
      generationCount: 1,
      keyUsage: BigInt(cost),
      accountUsage: BigInt(cost),
    });
    expect(cost).toBe(80 * 100_000);
  });
});

describe('checkpoints of non-streamed answers', { timeout: 60_000 }, () => {
  it('an answer folded from an upstream stream is journaled as it grows; one that fails everywhere leaves nothing to charge', async () => {
    const g = await start(breakableStore(), { journal: { checkpoint_ms: 50, min_free_bytes: 0 } });
    const accountId = await g.createAccount(1);
    const { key, hash } = await g.createKey(accountId);
    let sawCheckpoint = false;
    let done = false;
    const watching = (async () => {
      while (!done) {
        if (((await metric(g.url, 'tollgate_charge_journal_depth')) ?? 0) >= 1) sawCheckpoint = true;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const answer = await chat(g, key, { ...fixedBody(BREAKS.id, 0), max_tokens: 80 });
    done = true;
    await watching;
    expect(answer.status, answer.text).toBe(502);
    expect(sawCheckpoint).toBe(true); // what the broken attempts produced was journaled while they ran
    // Nothing was served, so nothing is charged, now or by a replay: the checkpoints were taken back.
    expect(await metric(g.url, 'tollgate_charge_journal_depth')).toBe(0);
    expect(await moneyTotals(g.database.openDriver(), accountId, hash)).toEqual({
      generations: 0n,
      generationCount: 0,
      keyUsage: 0n,
      accountUsage: 0n,
    });
  });
});

describe('/readyz and a silent store', { timeout: 60_000 }, () => {
  it('answers 503 within its one-second wait when the store does not answer at all (SIGSTOP), then ready again', async () => {
    const broken = breakableStore();
    const g = await start(broken);
    expect((await readyz(g.url)).status).toBe(200);
    broken.mode = 'silent';
    // A probe gets an answer rather than hanging with the store (the test's timeout is what fails otherwise).
    const silent = await readyz(g.url);
    expect(silent.status).toBe(503);
    expect(silent.json.reasons).toEqual(['store_unavailable']);
    broken.mode = 'ok';
    expect((await readyz(g.url)).status).toBe(200);
  });
});

describe('charges while the store is unreachable', { timeout: 60_000 }, () => {
  it('answers produced during the outage are journaled, applied when the store returns, totals exact; closed mode refuses paid requests meanwhile', async () => {
    const broken = breakableStore();
    const g = await start(broken);
    const accountId = await g.createAccount(10);
    const { key, hash } = await g.createKey(accountId);
    const driver = g.database.openDriver();
    const before = await moneyTotals(driver, accountId, hash);

    // 20 requests (half streamed) reach the upstream; the store goes away before any of them settles.
    const forwarded = g.provider.stats.requests;
    const running = Array.from({ length: 20 }, (_, i) =>
      i % 2 === 0 ? chat(g, key, fixedBody(SLOW.id, i)) : chatStream(g, key, fixedBody(SLOW.id, i)),
    );
    await until(() => g.provider.stats.requests >= forwarded + 20, 20_000, 'all 20 forwarded');
    broken.mode = 'all';
    const answers = await Promise.all(running);
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    for (const a of answers) if ('done' in a) expect(a.done).toBe(true); // streams end with their usage chunk and [DONE]
    const answered = answers.reduce((sum, a) => sum + costOf(a as any), 0);
    expect(answered).toBe(20 * X_UNITS);

    // What did not commit before the store went away is in the journal (on this loaded machine a few
    // early ones may have committed first); together they are all 20.
    const during = await moneyTotals(driver, accountId, hash);
    const journaled = await metric(g.url, 'tollgate_charge_journal_depth');
    expect(journaled).toBeGreaterThan(0);
    expect(during.generationCount - before.generationCount + journaled!).toBe(20);
    expect(await metric(g.url, 'tollgate_store_outage')).toBe(1);
    const ready = await readyz(g.url);
    expect(ready.status).toBe(503);
    expect(ready.json.reasons).toContain('store_unavailable');

    // closed (the default): a paid request is refused before anything is forwarded.
    const upstreamBefore = g.provider.stats.requests;
    const refused = await chat(g, key, fixedBody(FIXED.id, 99));
    expect(refused.status, refused.text).toBe(503);
    expect(g.provider.stats.requests).toBe(upstreamBefore);

    broken.mode = 'ok';
    await until(async () => (await readyz(g.url)).status === 200, 20_000, 'ready again');
    const after = await moneyTotals(driver, accountId, hash);
    expect(after.generationCount - before.generationCount).toBe(20);
    expect(after.generations - before.generations).toBe(BigInt(answered));
    expect(after.keyUsage - before.keyUsage).toBe(BigInt(answered));
    expect(after.accountUsage - before.accountUsage).toBe(BigInt(answered));
    expect(await metric(g.url, 'tollgate_charge_journal_depth')).toBe(0);
    expect((await chat(g, key, fixedBody(FIXED.id, 100))).status).toBe(200);
  });

  it('closed: an idle process that sees the store out says 503 at /readyz at once, never "degraded" (that is grace)', async () => {
    const broken = breakableStore();
    const g = await start(broken);
    const accountId = await g.createAccount(10);
    const { key } = await g.createKey(accountId);
    expect((await chat(g, key, fixedBody(FIXED.id, 0))).status).toBe(200);
    broken.mode = 'all';
    // No paid request meanwhile: the process notices the outage by itself (its reads, its probe).
    await until(async () => (await readyz(g.url)).json.status !== 'ready', 10_000, 'outage seen');
    const ready = await readyz(g.url);
    expect(ready.status).toBe(503);
    expect(ready.json.status).toBe('unavailable');
    expect(ready.json.reasons).toContain('store_unavailable');
    expect(ready.json.reasons).not.toContain('store_unavailable_grace');
    broken.mode = 'ok';
    await until(async () => (await readyz(g.url)).status === 200, 20_000, 'ready again');
  });

  it('grace: accounts whose last known balance covers the request are served, each up to max_exposure_usd per outage (measured)', async () => {
    const broken = breakableStore();
    const g = await start(broken, {
      on_store_error: 'grace',
      grace: { max_exposure_usd: 3 * X_USD, max_duration_ms: 60_000 },
    });
    const rich = await g.createAccount(1); // 1000 X: only the exposure cap binds
    const richKey = await g.createKey(rich);
    const poor = await g.createAccount(5 * X_USD); // the last known balance binds, and it is stale by one charge
    const poorKey = await g.createKey(poor);
    const driver = g.database.openDriver();
    expect((await chat(g, richKey.key, fixedBody(FIXED.id, 0))).status).toBe(200);
    expect((await chat(g, poorKey.key, fixedBody(FIXED.id, 0))).status).toBe(200); // snapshot read at 5X, now 4X
    broken.mode = 'all';
    await until(async () => (await readyz(g.url)).json.status === 'degraded', 10_000, 'degraded');
    const ready = await readyz(g.url);
    expect(ready.status).toBe(200); // a load balancer keeps sending: this process serves under grace

    const upstreamBefore = g.provider.stats.requests;
    const burst = async (key: string) =>
      (await Promise.all(Array.from({ length: 30 }, (_, i) => chat(g, key, fixedBody(FIXED.id, i + 1))))).map(
        (r) => r.status,
      );
    const [richStatuses, poorStatuses] = await Promise.all([burst(richKey.key), burst(poorKey.key)]);
    const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;
    expect(count(richStatuses, 200)).toBe(3); // the exposure cap: 3 X
    expect(count(richStatuses, 503)).toBe(27);
    expect(count(poorStatuses, 200)).toBe(3); // capped by exposure too (the stale balance 5X would allow 5)
    expect(g.provider.stats.requests - upstreamBefore).toBe(6);

    broken.mode = 'ok';
    await until(async () => (await readyz(g.url)).json.status === 'ready', 20_000, 'ready again');
    const richAfter = await moneyTotals(driver, rich, richKey.hash);
    const poorAfter = await moneyTotals(driver, poor, poorKey.hash);
    expect(richAfter.accountUsage).toBe(BigInt(4 * X_UNITS));
    expect(poorAfter.accountUsage).toBe(BigInt(4 * X_UNITS));
    for (const t of [richAfter, poorAfter])
      expect([t.generations, t.keyUsage]).toEqual([t.accountUsage, t.accountUsage]);
  });

  it("grace outlives the key cache's TTL: a key cached before the outage still authenticates for the grace duration", async () => {
    const broken = breakableStore();
    const g = await start(
      broken,
      { on_store_error: 'grace', grace: { max_exposure_usd: 3 * X_USD, max_duration_ms: 60_000 } },
      { cache: { key_ttl_ms: 200 } },
    );
    const accountId = await g.createAccount(1);
    const cached = await g.createKey(accountId);
    const unseen = await g.createKey(accountId);
    expect((await chat(g, cached.key, fixedBody(FIXED.id, 0))).status).toBe(200);
    broken.mode = 'all';
    await until(async () => (await readyz(g.url)).json.status === 'degraded', 10_000, 'degraded');
    await new Promise((resolve) => setTimeout(resolve, 400)); // the key's cache entry has expired
    for (let i = 1; i <= 3; i++) expect((await chat(g, cached.key, fixedBody(FIXED.id, i))).status).toBe(200);
    // A key this process never loaded cannot be checked: refused, as a store outage.
    const refused = await chat(g, unseen.key, fixedBody(FIXED.id, 9));
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.text).error.message).toBe('Storage is unavailable');
    broken.mode = 'ok';
    await until(async () => (await readyz(g.url)).json.status === 'ready', 20_000, 'ready again');
    expect((await chat(g, unseen.key, fixedBody(FIXED.id, 10))).status).toBe(200);
  });

  it('grace: the overspend past zero is at most max_exposure_usd per account (a stale balance, measured)', async () => {
    const broken = breakableStore();
    const g = await start(broken, {
      on_store_error: 'grace',
      grace: { max_exposure_usd: 10 * X_USD, max_duration_ms: 60_000 },
    });
    const accountId = await g.createAccount(5 * X_USD);
    const { key, hash } = await g.createKey(accountId);
    expect((await chat(g, key, fixedBody(FIXED.id, 0))).status).toBe(200); // snapshot 5X; balance now 4X
    broken.mode = 'all';
    await until(async () => (await readyz(g.url)).json.status === 'degraded', 10_000, 'degraded');
    const statuses = await Promise.all(Array.from({ length: 30 }, (_, i) => chat(g, key, fixedBody(FIXED.id, i + 1))));
    const admitted = statuses.filter((s) => s.status === 200).length;
    expect(admitted).toBe(5); // what the last known balance covered
    broken.mode = 'ok';
    await until(async () => (await readyz(g.url)).json.status === 'ready', 20_000, 'ready again');
    const totals = await moneyTotals(g.database.openDriver(), accountId, hash);
    const balance = 5 * X_UNITS - Number(totals.accountUsage);
    expect(balance).toBe(-X_UNITS); // overspent by one X: ≤ max_exposure_usd (10 X)
    expect(totals.generations).toBe(totals.keyUsage);
  });

  it('grace ends after max_duration_ms: paid requests are refused again', async () => {
    const broken = breakableStore();
    const g = await start(broken, { on_store_error: 'grace', grace: { max_exposure_usd: 1, max_duration_ms: 300 } });
    const accountId = await g.createAccount(1);
    const { key } = await g.createKey(accountId);
    expect((await chat(g, key, fixedBody(FIXED.id, 0))).status).toBe(200);
    broken.mode = 'all';
    await until(
      async () => (await readyz(g.url)).json.reasons?.includes('grace_expired') === true,
      10_000,
      'grace expired',
    );
    const refused = await chat(g, key, fixedBody(FIXED.id, 1));
    expect(refused.status, refused.text).toBe(503);
    expect(JSON.parse(refused.text).error.metadata.reason).toBe('grace_expired');
  });

  it('a full journal refuses paid requests with 503 before anything is forwarded, and recovers when the store drains it', async () => {
    const broken = breakableStore();
    const g = await start(broken, { on_store_error: 'grace', journal: { max_entries: 2 } });
    const accountId = await g.createAccount(1);
    const { key, hash } = await g.createKey(accountId);
    expect((await chat(g, key, fixedBody(FIXED.id, 0))).status).toBe(200);
    broken.mode = 'writes'; // reads work, charges cannot be committed (a full or read-only disk under the store)
    expect((await chat(g, key, fixedBody(FIXED.id, 1))).status).toBe(200); // journaled
    expect((await chat(g, key, fixedBody(FIXED.id, 2))).status).toBe(200); // journaled, under grace
    expect(await metric(g.url, 'tollgate_charge_journal_depth')).toBe(2);
    const upstreamBefore = g.provider.stats.requests;
    const refused = await chat(g, key, fixedBody(FIXED.id, 3));
    expect(refused.status, refused.text).toBe(503);
    expect(JSON.parse(refused.text).error.metadata.reason).toBe('journal_full');
    expect(g.provider.stats.requests).toBe(upstreamBefore);
    expect((await readyz(g.url)).json.reasons).toContain('journal_full');
    broken.mode = 'ok';
    await until(async () => (await readyz(g.url)).status === 200, 20_000, 'drained');
    expect(await metric(g.url, 'tollgate_charge_journal_depth')).toBe(0);
    const totals = await moneyTotals(g.database.openDriver(), accountId, hash);
    expect(totals.accountUsage).toBe(BigInt(3 * X_UNITS));
    expect((await chat(g, key, fixedBody(FIXED.id, 4))).status).toBe(200);
  });
});
