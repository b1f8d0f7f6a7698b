import { describe, expect, it } from 'vitest';
import type { Catalog } from '../routing/catalog.js';
import type { DayRange, ModelDay, RankedApp, UsageStore } from '../store/usage-types.js';
import { AsyncMutex } from '../store/async-mutex.js';
import { appRankings, rankingsDaily, rankingsSummary, resolveWindow, TOP_MODELS_PER_DAY } from './rankings.js';

const NOW = Date.parse('2026-11-23T15:00:00Z');

function fakeUsage(days: ModelDay[]): UsageStore {
  const unused = () => Promise.reject(new Error('not used'));
  return {
    activity: unused,
    daily: unused,
    keyOwner: unused,
    keyNames: unused,
    apps: unused,
    recentGenerations: unused,
    creditHistory: unused,
    appTotals: (): Promise<RankedApp[]> => Promise.resolve([]),
    modelDays: (range: DayRange) => Promise.resolve(days.filter((d) => d.day >= range.from && d.day <= range.to)),
  };
}

const deps = (days: ModelDay[]) => ({
  store: { usage: fakeUsage(days) },
  catalog: { models: new Map(), providers: new Map() } as Catalog,
  minAccounts: 1,
  now: () => NOW,
  reads: new AsyncMutex(),
});

describe('resolveWindow', () => {
  it('defaults to the 30 days before the last completed UTC day', () => {
    expect(resolveWindow(NOW, undefined, undefined)).toEqual({ from: '2026-10-23', to: '2026-11-22' });
    expect(resolveWindow(NOW, undefined, '2026-11-23')).toEqual({ from: '2026-10-24', to: '2026-11-23' });
    expect(resolveWindow(NOW, '2026-11-01', undefined)).toEqual({ from: '2026-11-01', to: '2026-11-22' });
  });
});

describe('rankingsDaily', () => {
  it('keeps the top 50 models of each day and sums the rest into one "other" row, pinned last', async () => {
    const days: ModelDay[] = [];
    for (let m = 0; m < TOP_MODELS_PER_DAY + 3; m++)
      days.push({ day: '2026-11-20', model: `m/${String(m).padStart(2, '0')}`, tokens: BigInt(1000 - m), requests: 1 });
    days.push(
      { day: '2026-11-21', model: 'm/tie-b', tokens: 5n, requests: 1 },
      { day: '2026-11-21', model: 'm/tie-a', tokens: 5n, requests: 1 },
    );
    const { data } = await rankingsDaily(deps(days), { start_date: '2026-11-20', end_date: '2026-11-21' });
    const first = data.filter((r) => r.date === '2026-11-20');
    expect(first).toHaveLength(TOP_MODELS_PER_DAY + 1);
    expect(first[0]).toEqual({ date: '2026-11-20', model_permaslug: 'm/00', total_tokens: '1000' });
    expect(first.at(-1)).toEqual({
      date: '2026-11-20',
      model_permaslug: 'other',
      total_tokens: String(950 + 949 + 948),
    });
    // Ties break alphabetically, so the order is stable.
    expect(data.filter((r) => r.date === '2026-11-21').map((r) => r.model_permaslug)).toEqual(['m/tie-a', 'm/tie-b']);
  });

  it('buckets by ISO week start or month start', async () => {
    const days: ModelDay[] = [
      { day: '2026-11-01', model: 'm/a', tokens: 1n, requests: 1 }, // a Sunday: week of Monday 2026-10-26
      { day: '2026-11-02', model: 'm/a', tokens: 2n, requests: 1 },
      { day: '2026-11-08', model: 'm/a', tokens: 4n, requests: 1 },
    ];
    const weekly = await rankingsDaily(deps(days), {
      start_date: '2026-11-01',
      end_date: '2026-11-08',
      period: 'week',
    });
    expect(weekly.data).toEqual([
      { date: '2026-10-26', model_permaslug: 'm/a', total_tokens: '1' },
      { date: '2026-11-02', model_permaslug: 'm/a', total_tokens: '6' },
    ]);
    const monthly = await rankingsDaily(deps(days), {
      start_date: '2026-11-01',
      end_date: '2026-11-08',
      period: 'month',
    });
    expect(monthly.data).toEqual([{ date: '2026-11-01', model_permaslug: 'm/a', total_tokens: '7' }]);
  });
});

describe("the public routes' store reads", () => {
  it('go one at a time, however many requests arrive together (each ran; none overlapped)', async () => {
    let running = 0;
    let most = 0;
    let reads = 0;
    const slow = async <T>(value: T): Promise<T> => {
      running++;
      reads++;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 5));
      running--;
      return value;
    };
    const usage: UsageStore = {
      ...fakeUsage([]),
      appTotals: () => slow([]),
      modelDays: () => slow([]),
    };
    const shared = { ...deps([]), store: { usage } };
    await Promise.all([
      rankingsDaily(shared, {}),
      rankingsDaily(shared, { period: 'week' }),
      rankingsSummary(shared, {}),
      appRankings(shared, {}),
      appRankings(shared, { sort: 'trending' }),
    ]);
    // 1 + 1 + 2 (the summary's apps and models) + 1 + 2 (trending reads the windows before).
    expect(reads).toBe(7);
    expect(most).toBe(1);
  });
});
