/**
 * /auth: the OAuth PKCE approval page. The gateway refused an invalid callback_url already (HTTP 400,
 * with the reason in a meta tag); otherwise the holder signs in if needed, sees which app asks, and
 * approves or denies. The API answers where to go next; the page only follows it.
 */
import { Unreachable } from '../components/unreachable';
import { useEffect, useState, type FormEvent } from 'react';
import { api, ApiError, query } from '../api/client';
import type { AuthorizeRequest } from '../api/types';
import { ErrorNotice } from '../components/error-notice';
import { useFocusReturn } from '../components/use-focus-return';
import { formatTime } from '../format';
import { useLoader } from '../components/use-loader';
import { navigate, useLocation } from '../router';
import { useSession } from '../session';
import { parseLimit } from './key-limit';

function serverProblem(): string | null {
  return document.querySelector('meta[name="tollgate-auth-problem"]')?.getAttribute('content') ?? null;
}

/**
 * What the app's authorization URL carries, all passed on when the holder decides (`state` comes back
 * on the callback untouched): `limit` (the app's
 * suggestion) only pre-fills the field the holder sets; the limit's reset and the key's expiry are
 * the app's terms, shown before approval.
 */
const PARAMS = [
  'callback_url',
  'code_challenge',
  'code_challenge_method',
  'key_label',
  'limit',
  'usage_limit_type',
  'expires_at',
  'state',
] as const;

const RESETS: Record<string, string> = { daily: 'every day', weekly: 'every week', monthly: 'every month' };

function Approval(props: { params: Record<(typeof PARAMS)[number], string | null>; account: string }) {
  const { params } = props;
  const request = useLoader(() => api<{ data: AuthorizeRequest }>('GET', `/oauth/authorize${query(params)}`), []);
  const [limit, setLimit] = useState(params.limit ?? '');
  const [busy, setBusy] = useState<'approve' | 'deny' | null>(null);
  const [error, setError] = useState<unknown>(null);
  // Pressed, Approve or Deny is disabled while the decision is sent: a failure gives it the focus back.
  const approveFocus = useFocusReturn<HTMLButtonElement>(busy === null);
  const denyFocus = useFocusReturn<HTMLButtonElement>(busy === null);

  const decide = async (decision: 'approve' | 'deny', event?: FormEvent) => {
    event?.preventDefault();
    setError(null);
    // As the keys page and the API take it: blank is no limit, else a number of USD, 0 or more.
    const limitValue = parseLimit(limit);
    if (decision === 'approve' && limitValue instanceof Error) {
      setError(limitValue);
      return;
    }
    approveFocus.armIfFocused();
    denyFocus.armIfFocused();
    setBusy(decision);
    try {
      const body: Record<string, unknown> = { decision };
      for (const name of PARAMS) if (name !== 'limit' && params[name] !== null) body[name] = params[name];
      if (decision === 'approve' && typeof limitValue === 'number') body.limit = limitValue;
      const answer = await api<{ data: { redirect_url: string } }>('POST', '/oauth/authorize', body);
      window.location.assign(answer.data.redirect_url);
    } catch (failure) {
      setError(failure);
      setBusy(null);
    }
  };

  if (request.error) {
    // A request the gateway refused (400: a bad callback, a bad limit) cannot be used; one it could not
    // answer (5xx, no connection) may work in a moment.
    const refused = request.error instanceof ApiError && request.error.status < 500;
    return refused ? (
      <ErrorNotice error={request.error} title="This authorization request cannot be used" />
    ) : (
      <ErrorNotice error={request.error} title="Could not load this authorization request" onRetry={request.reload} />
    );
  }
  if (!request.data) return <p className="muted">Loading…</p>;
  const app = request.data.data.app;
  return (
    <form
      className="panel stack authorize"
      onSubmit={(event) => void decide('approve', event)}
      aria-labelledby="authorize-title"
    >
      {/* The origin, not the name the app gives itself: the callback is what the holder can trust. The
          account that pays is named here too: at phone width the header does not show it. */}
      <h1 id="authorize-title">Authorize {app.origin}</h1>
      <p>
        <strong>{app.name || app.origin}</strong>
        {app.name && app.name !== app.origin ? (
          <>
            {' '}
            at <span className="mono">{app.origin}</span>
          </>
        ) : null}{' '}
        asks for an API key that spends the credits of your account <strong>{props.account}</strong>
        {request.data.data.key_label ? (
          <>
            {' '}
            (key label: <strong>{request.data.data.key_label}</strong>)
          </>
        ) : null}
        .
      </p>
      <p className="muted">
        After you decide, you are sent back to <span className="mono">{request.data.data.callback_url}</span>. You can
        revoke the key any time under Apps.
      </p>
      {request.data.data.usage_limit_type || request.data.data.expires_at ? (
        <ul className="muted">
          {request.data.data.usage_limit_type ? (
            <li>
              {limit.trim() === '' ? 'A credit limit you set here resets' : 'The credit limit resets'}{' '}
              {RESETS[request.data.data.usage_limit_type] ?? request.data.data.usage_limit_type} (UTC).
            </li>
          ) : null}
          {request.data.data.expires_at ? <li>The key expires {formatTime(request.data.data.expires_at)}.</li> : null}
        </ul>
      ) : null}
      <label>
        Credit limit for this app (USD, optional)
        <input
          type="number"
          min="0"
          step="any"
          inputMode="decimal"
          value={limit}
          onChange={(e) => setLimit(e.target.value)}
        />
      </label>
      <ErrorNotice error={error} />
      <div className="actions">
        <button type="submit" className="primary" disabled={busy !== null} ref={approveFocus.ref}>
          {busy === 'approve' ? 'Approving…' : 'Approve'}
        </button>
        <button type="button" onClick={() => void decide('deny')} disabled={busy !== null} ref={denyFocus.ref}>
          {busy === 'deny' ? 'Denying…' : 'Deny'}
        </button>
      </div>
    </form>
  );
}

export function AuthorizePage() {
  const { state } = useSession();
  const { search } = useLocation();
  const problem = serverProblem();
  const params = Object.fromEntries(PARAMS.map((name) => [name, search.get(name)])) as Record<
    (typeof PARAMS)[number],
    string | null
  >;

  useEffect(() => {
    if (!problem && state.status === 'signed-out') {
      navigate(`/signin?next=${encodeURIComponent(window.location.pathname + window.location.search)}`, {
        replace: true,
      });
    }
  }, [problem, state.status]);

  if (problem) {
    return (
      <section className="narrow">
        <h1>This app's callback URL is not allowed</h1>
        <p className="notice notice-error" role="alert">
          {problem}.
        </p>
        <p className="muted">
          Nothing was authorized. Tell the app's developer: the callback must use https, or http on localhost.
        </p>
      </section>
    );
  }
  if (state.status === 'unreachable') return <Unreachable />;
  if (state.status !== 'signed-in') return <p className="muted">Loading…</p>;
  return (
    <section className="narrow">
      <Approval params={params} account={state.session.account.email} />
    </section>
  );
}
