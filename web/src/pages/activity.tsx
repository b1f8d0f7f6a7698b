/** Activity: spend, tokens and requests per UTC day (30 days), grouped and filtered; the recent generations. */
import { useEffect, useMemo, useState } from 'react';
import { api, query } from '../api/client';
import type { DailyActivity, GenerationRow } from '../api/types';
import { ErrorNotice } from '../components/error-notice';
import { TimeChart } from '../components/time-chart';
import { useLoader } from '../components/use-loader';
import { useShowOlder } from '../components/use-show-older';
import { formatInteger, formatLatency, formatTime, formatUsd, lastUtcDays } from '../format';
import { seriesOf, totalsOf } from './activity-series';
import { loadKeys } from '../api/keys';

const DAYS = 30;
const GENERATIONS_PAGE = 50;

type GroupBy = 'model' | 'key' | 'app';
const GROUPINGS: readonly GroupBy[] = ['model', 'key', 'app'];

/** The filters in the address (`?group_by=&model=&key=`): a reload or a shared link shows the same view. */
function filtersOf(search: string): { groupBy: GroupBy; model: string; keyHash: string } {
  const params = new URLSearchParams(search);
  const groupBy = params.get('group_by');
  return {
    groupBy: GROUPINGS.find((g) => g === groupBy) ?? 'model',
    model: params.get('model') ?? '',
    keyHash: params.get('key') ?? '',
  };
}

const formatTokens = (v: number) => formatInteger(v);

/** Remounted (by key) when a filter changes, so paging starts again from the newest. */
function GenerationsTable(props: { model: string; keyHash: string }) {
  // The last row shown: the next page starts after it, so generations made meanwhile repeat no row.
  const [before, setBefore] = useState<string | undefined>(undefined);
  const [rows, setRows] = useState<GenerationRow[]>([]);
  const page = useLoader(async () => {
    const answer = await api<{ data: GenerationRow[] }>(
      'GET',
      `/generations${query({ limit: GENERATIONS_PAGE, before, model: props.model, api_key_hash: props.keyHash })}`,
    );
    setRows((previous) => (before === undefined ? answer.data : [...previous, ...answer.data]));
    return answer.data;
  }, [before]);
  const older = useShowOlder(page.loading);

  return (
    <section aria-labelledby="generations-title">
      <h2 id="generations-title">Recent generations</h2>
      <ErrorNotice error={page.error} title="Could not load generations" onRetry={page.reload} />
      {rows.length === 0 && page.loading ? <p className="muted">Loading generations…</p> : null}
      {rows.length === 0 && !page.loading && !page.error ? <p className="empty">No generations yet.</p> : null}
      {rows.length > 0 ? (
        <div className="table-scroll">
          <table className="data-table cards">
            <caption className="visually-hidden">Recent generations, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Model</th>
                <th scope="col">Provider</th>
                <th scope="col">App</th>
                <th scope="col">Key</th>
                <th scope="col" className="num">
                  Tokens (in → out)
                </th>
                <th scope="col" className="num">
                  Cost
                </th>
                <th scope="col" className="num">
                  Latency
                </th>
                <th scope="col">Finish</th>
                <th scope="col">Streamed</th>
                <th scope="col">Generation id</th>
              </tr>
            </thead>
            <tbody ref={older.rows}>
              {rows.map((row) => (
                <tr key={row.id}>
                  <td data-label="Time">{formatTime(row.created_at)}</td>
                  <td data-label="Model">{row.model}</td>
                  <td data-label="Provider">{row.provider_name ?? '—'}</td>
                  <td data-label="App">{row.app ? row.app.name || row.app.origin : '—'}</td>
                  <td data-label="Key">{row.key_name ?? row.key_label ?? '—'}</td>
                  <td data-label="Tokens" className="num">
                    {formatInteger(row.tokens_prompt)} → {formatInteger(row.tokens_completion)}
                  </td>
                  <td data-label="Cost" className="num">
                    {formatUsd(row.total_cost)}
                  </td>
                  <td data-label="Latency" className="num">
                    {formatLatency(row.latency)}
                  </td>
                  <td data-label="Finish">{row.finish_reason ?? '—'}</td>
                  <td data-label="Streamed">{row.streamed === null ? '—' : row.streamed ? 'Yes' : 'No'}</td>
                  <td data-label="Generation id" className="mono small id-cell">
                    {row.id}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {page.data && page.data.length === GENERATIONS_PAGE ? (
        <button
          type="button"
          ref={older.button}
          onClick={() => {
            older.ask(rows.length);
            setBefore(rows.at(-1)?.id);
          }}
          disabled={page.loading}
        >
          Show older generations
        </button>
      ) : null}
    </section>
  );
}

export function ActivityPage() {
  const [initial] = useState(() => filtersOf(window.location.search));
  const [groupBy, setGroupBy] = useState<GroupBy>(initial.groupBy);
  const [model, setModel] = useState(initial.model);
  const [keyHash, setKeyHash] = useState(initial.keyHash);
  // Written back in place (not a history entry per filter, and not through the router: no scroll to the top).
  useEffect(() => {
    const params = new URLSearchParams();
    if (groupBy !== 'model') params.set('group_by', groupBy);
    if (model !== '') params.set('model', model);
    if (keyHash !== '') params.set('key', keyHash);
    const search = params.toString();
    window.history.replaceState(window.history.state, '', `/activity${search === '' ? '' : `?${search}`}`);
  }, [groupBy, model, keyHash]);
  const [refresh, setRefresh] = useState(0);
  const days = useMemo(() => lastUtcDays(DAYS), []);

  const keys = useLoader(async () => ({ data: await loadKeys() }), []);
  const models = useLoader(() => api<{ data: { id: string; name: string }[] }>('GET', '/models'), []);
  const daily = useLoader(
    () =>
      api<{ data: DailyActivity[] }>(
        'GET',
        `/activity/daily${query({ days: DAYS, group_by: groupBy, model, api_key_hash: keyHash })}`,
      ),
    [groupBy, model, keyHash, refresh],
  );

  const rows = useMemo(() => daily.data?.data ?? [], [daily.data]);
  const spend = useMemo(() => seriesOf(rows, days, 'usage'), [rows, days]);
  const tokens = useMemo(() => seriesOf(rows, days, 'tokens'), [rows, days]);
  const requests = useMemo(() => seriesOf(rows, days, 'requests'), [rows, days]);
  const totals = useMemo(() => totalsOf(rows), [rows]);
  // The figures are the current filters' only once their load has answered: while another loads, or
  // after it failed, the last ones belong to another selection.
  const known = daily.data !== null && !daily.loading && daily.error === null;
  const unknown = daily.loading ? '…' : '—';

  return (
    <section>
      <div className="page-title">
        <h1>Activity</h1>
        <button type="button" onClick={() => setRefresh((n) => n + 1)}>
          Refresh
        </button>
      </div>
      <form className="filters row" onSubmit={(e) => e.preventDefault()} aria-label="Activity filters">
        {/* Labels point at their selects (not wrapped), so each select's name is exactly its label. */}
        <div className="field">
          <label htmlFor="activity-group-by">Group by</label>
          <select id="activity-group-by" value={groupBy} onChange={(e) => setGroupBy(e.target.value as GroupBy)}>
            <option value="model">Model</option>
            <option value="key">Key</option>
            <option value="app">App</option>
          </select>
        </div>
        <div className="field">
          <label htmlFor="activity-model">Model</label>
          <select id="activity-model" value={model} onChange={(e) => setModel(e.target.value)}>
            <option value="">All models</option>
            {(models.data?.data ?? []).map((m) => (
              <option key={m.id} value={m.id}>
                {m.id}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="activity-key">Key</label>
          <select id="activity-key" value={keyHash} onChange={(e) => setKeyHash(e.target.value)}>
            <option value="">All keys</option>
            {(keys.data?.data ?? []).map((k) => (
              <option key={k.hash} value={k.hash}>
                {k.name} ({k.label})
              </option>
            ))}
          </select>
        </div>
      </form>
      <ErrorNotice error={keys.error} title="Could not load your keys" onRetry={keys.reload} />
      <ErrorNotice error={models.error} title="Could not load the models" onRetry={models.reload} />
      <ErrorNotice error={daily.error} title="Could not load daily activity" onRetry={daily.reload} />
      {/* No figures before the activity is known: zeros and empty charts would read as "no spend". */}
      <dl className="stats" aria-label="Last 30 days" aria-busy={known ? undefined : daily.loading}>
        <div>
          <dt>Spend, last {DAYS} days</dt>
          <dd>{known ? formatUsd(totals.usage) : unknown}</dd>
        </div>
        <div>
          <dt>Tokens</dt>
          <dd>{known ? formatInteger(totals.tokens) : unknown}</dd>
        </div>
        <div>
          <dt>Requests</dt>
          <dd>{known ? formatInteger(totals.requests) : unknown}</dd>
        </div>
      </dl>
      {known ? (
        <div className="charts">
          <TimeChart title="Spend (USD)" days={days} series={spend} format={formatUsd} />
          <TimeChart title="Tokens" days={days} series={tokens} format={formatTokens} whole />
          <TimeChart title="Requests" days={days} series={requests} format={formatTokens} whole />
        </div>
      ) : daily.loading ? (
        <p className="muted">Loading activity…</p>
      ) : null}
      <GenerationsTable key={`${model}|${keyHash}|${refresh}`} model={model} keyHash={keyHash} />
    </section>
  );
}
