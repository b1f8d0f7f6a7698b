/** Daily activity rows → one chart series per group (the largest groups, the rest summed as "Other"). */
import type { DailyActivity } from '../api/types';
import type { ChartSeries } from '../components/time-chart';

export type Measure = 'usage' | 'tokens' | 'requests';

const MAX_SERIES = 8;

function valueOf(row: DailyActivity, measure: Measure): number {
  if (measure === 'usage') return row.usage;
  if (measure === 'tokens') return row.prompt_tokens + row.completion_tokens;
  return row.requests;
}

export function seriesOf(rows: DailyActivity[], days: string[], measure: Measure): ChartSeries[] {
  const dayIndex = new Map(days.map((day, i) => [day, i]));
  const groups = new Map<string, { label: string; values: number[]; total: number }>();
  for (const row of rows) {
    const index = dayIndex.get(row.date);
    if (index === undefined) continue;
    let group = groups.get(row.group);
    if (!group) {
      group = { label: row.group_label || row.group, values: days.map(() => 0), total: 0 };
      groups.set(row.group, group);
    }
    const value = valueOf(row, measure);
    group.values[index] = (group.values[index] ?? 0) + value;
    group.total += value;
  }
  const ranked = [...groups.values()].sort((a, b) => b.total - a.total);
  if (ranked.length === 0) return [{ label: 'No activity', values: days.map(() => 0) }];
  const shown = ranked.slice(0, MAX_SERIES - 1);
  const rest = ranked.slice(MAX_SERIES - 1);
  const series = shown.map((g) => ({ label: g.label, values: g.values }));
  if (rest.length === 1 && rest[0]) series.push({ label: rest[0].label, values: rest[0].values });
  else if (rest.length > 1)
    series.push({
      label: `Other (${rest.length})`,
      values: days.map((_, i) => rest.reduce((sum, g) => sum + (g.values[i] ?? 0), 0)),
    });
  return series;
}

export function totalsOf(rows: DailyActivity[]): { usage: number; tokens: number; requests: number } {
  let usage = 0;
  let tokens = 0;
  let requests = 0;
  for (const row of rows) {
    usage += row.usage;
    tokens += row.prompt_tokens + row.completion_tokens;
    requests += row.requests;
  }
  return { usage, tokens, requests };
}
