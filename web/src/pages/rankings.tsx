/** Public rankings: the apps and models that used the most tokens today, this week or this month (UTC). */
import { useState } from 'react';
import { api, ApiError } from '../api/client';
import type { RankingPeriod, RankingSummary } from '../api/types';
import { ErrorNotice } from '../components/error-notice';
import { useLoader } from '../components/use-loader';
import { formatInteger } from '../format';

const PERIODS: { value: RankingPeriod; label: string }[] = [
  { value: 'day', label: 'Today' },
  { value: 'week', label: 'This week' },
  { value: 'month', label: 'This month' },
];

export function RankingsPage() {
  const [period, setPeriod] = useState<RankingPeriod>('day');
  const summary = useLoader(async () => {
    try {
      return (
        await api<{ data: RankingSummary }>('GET', `/rankings/summary?period=${period}`, undefined, { quiet401: true })
      ).data;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return null;
      throw error;
    }
  }, [period]);
  const data = summary.data;

  return (
    <section>
      <h1>Rankings</h1>
      <p className="muted">
        Apps and models on this gateway by tokens processed (prompt and completion). Periods are UTC; nothing about any
        account is shown.
      </p>
      <div className="segmented" role="group" aria-label="Period">
        {PERIODS.map((p) => (
          <button key={p.value} type="button" aria-pressed={period === p.value} onClick={() => setPeriod(p.value)}>
            {p.label}
          </button>
        ))}
      </div>
      <ErrorNotice error={summary.error} title="Could not load the rankings" onRetry={summary.reload} />
      {summary.loading && !data ? <p className="muted">Loading…</p> : null}
      {!summary.loading && data === null && !summary.error ? (
        <p className="empty">Rankings are not public on this gateway.</p>
      ) : null}
      {data ? (
        <>
          <p className="muted">
            {data.start_date === data.end_date ? data.start_date : `${data.start_date} to ${data.end_date}`}
          </p>
          <div className="two-columns">
            <section aria-labelledby="top-apps">
              <h2 id="top-apps">Top apps</h2>
              {data.apps.length === 0 ? (
                <p className="empty">No app has sent attributed requests in this period.</p>
              ) : (
                <table className="data-table">
                  <caption className="visually-hidden">Top apps by tokens</caption>
                  <thead>
                    <tr>
                      <th scope="col" className="num">
                        #
                      </th>
                      <th scope="col">App</th>
                      <th scope="col" className="num">
                        Tokens
                      </th>
                      <th scope="col" className="num">
                        Requests
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.apps.map((app) => (
                      <tr key={app.origin}>
                        <td className="num">{app.rank}</td>
                        <td>
                          <span className="key-name">{app.name || app.origin}</span>
                          {app.name && app.name !== app.origin ? (
                            <div className="muted small key-name-detail">{app.origin}</div>
                          ) : null}
                        </td>
                        <td className="num">{formatInteger(app.total_tokens)}</td>
                        <td className="num">{formatInteger(app.requests)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </section>
            <section aria-labelledby="top-models">
              <h2 id="top-models">Top models</h2>
              {data.models.length === 0 ? (
                <p className="empty">No model was used in this period.</p>
              ) : (
                <table className="data-table">
                  <caption className="visually-hidden">Top models by tokens</caption>
                  <thead>
                    <tr>
                      <th scope="col" className="num">
                        #
                      </th>
                      <th scope="col">Model</th>
                      <th scope="col" className="num">
                        Tokens
                      </th>
                      <th scope="col" className="num">
                        Requests
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.models.map((model) => (
                      <tr key={model.model}>
                        <td className="num">{model.rank}</td>
                        <td>
                          <span className="key-name">{model.name || model.model}</span>
                          {model.name && model.name !== model.model ? (
                            <div className="muted small mono key-name-detail">{model.model}</div>
                          ) : null}
                        </td>
                        <td className="num">{formatInteger(model.total_tokens)}</td>
                        <td className="num">{formatInteger(model.requests)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </section>
          </div>
        </>
      ) : null}
    </section>
  );
}
