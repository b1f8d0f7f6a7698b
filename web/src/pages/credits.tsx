/** Credits: the balance and its parts, and every credit entry (purchases, grants, adjustments). */
import { useState } from 'react';
import { api, query } from '../api/client';
import type { Account, CreditEntry } from '../api/types';
import { ErrorNotice } from '../components/error-notice';
import { useLoader } from '../components/use-loader';
import { useShowOlder } from '../components/use-show-older';
import { formatTime, formatUsd } from '../format';

const PAGE = 100;
const KIND_WORDS = { purchase: 'Purchase', grant: 'Grant', adjustment: 'Adjustment' } as const;

export function CreditsPage() {
  const account = useLoader(() => api<{ data: Account }>('GET', '/account'), []);
  // The last entry shown: the next page starts after it, so entries added meanwhile repeat no row.
  const [before, setBefore] = useState<string | undefined>(undefined);
  const [entries, setEntries] = useState<CreditEntry[]>([]);
  const history = useLoader(async () => {
    const answer = await api<{ data: CreditEntry[] }>('GET', `/credits/history${query({ before })}`);
    setEntries((previous) => (before === undefined ? answer.data : [...previous, ...answer.data]));
    return answer.data;
  }, [before]);
  const a = account.data?.data;
  const older = useShowOlder(history.loading);

  return (
    <section>
      <h1>Credits</h1>
      <ErrorNotice error={account.error} title="Could not load your account" onRetry={account.reload} />
      {a ? (
        <dl className="stats" aria-label="Credit balance">
          <div className="stat-main">
            <dt>Balance</dt>
            <dd>{formatUsd(a.balance)}</dd>
          </div>
          <div>
            <dt>Purchased</dt>
            <dd>{formatUsd(a.total_purchased)}</dd>
          </div>
          <div>
            <dt>Granted</dt>
            <dd>{formatUsd(a.total_granted)}</dd>
          </div>
          <div>
            <dt>Used</dt>
            <dd>{formatUsd(a.total_usage)}</dd>
          </div>
        </dl>
      ) : account.loading ? (
        <p className="muted">Loading…</p>
      ) : null}
      {a?.free_model_daily_requests ? <FreeModelNote daily={a.free_model_daily_requests} /> : null}
      <p className="muted">Credits are added by the operator of this gateway. 1 credit = 1 USD.</p>
      <h2>History</h2>
      <ErrorNotice error={history.error} title="Could not load the credit history" onRetry={history.reload} />
      {entries.length === 0 && !history.loading && !history.error ? (
        <p className="empty">No credit entries yet.</p>
      ) : null}
      {entries.length > 0 ? (
        <table className="data-table cards">
          <caption className="visually-hidden">Credit entries, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Kind</th>
              <th scope="col" className="num">
                Amount
              </th>
              <th scope="col">Reference</th>
            </tr>
          </thead>
          <tbody ref={older.rows}>
            {entries.map((entry) => (
              <tr key={entry.id}>
                <td data-label="Time" className="nowrap">
                  {formatTime(entry.created_at)}
                </td>
                <td data-label="Kind">{KIND_WORDS[entry.kind] ?? entry.kind}</td>
                <td data-label="Amount" className={`num ${entry.amount < 0 ? 'negative' : ''}`}>
                  {formatUsd(entry.amount)}
                </td>
                <td data-label="Reference" className="mono small">
                  {entry.reference ?? '—'}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {history.data && history.data.length === PAGE ? (
        <button
          type="button"
          ref={older.button}
          onClick={() => {
            older.ask(entries.length);
            setBefore(entries.at(-1)?.id);
          }}
          disabled={history.loading}
        >
          Show older entries
        </button>
      ) : null}
    </section>
  );
}

/** Today's free-model allowance, as the gateway counts it (the operator sets the limits). */
function FreeModelNote(props: { daily: NonNullable<Account['free_model_daily_requests']> }) {
  const { limit, remaining } = props.daily;
  return (
    <p className="muted">
      Free models: {remaining.toLocaleString('en-US')} of {limit.toLocaleString('en-US')} requests left today (UTC).
    </p>
  );
}
