/** Settings: password, sign out everywhere, and notification e-mails (when this gateway offers them). */
import { useEffect, useState, type FormEvent } from 'react';
import { api, ApiError } from '../api/client';
import type { Notifications } from '../api/types';
import { ErrorNotice } from '../components/error-notice';
import { useFocusReturn } from '../components/use-focus-return';
import { useLoader } from '../components/use-loader';
import { navigate } from '../router';
import { useSession } from '../session';
import { MAX_PASSWORD, MIN_PASSWORD, passwordProblem } from '../password-policy';

function PasswordForm() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [repeat, setRepeat] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState(false);
  // The button is disabled while the change runs: the focus comes back to it after.
  const buttonFocus = useFocusReturn<HTMLButtonElement>(!busy);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    setDone(false);
    const problem = passwordProblem(next);
    if (problem !== null) return setError(new Error(problem));
    if (next !== repeat) return setError(new Error('The two new passwords differ'));
    buttonFocus.arm();
    setBusy(true);
    try {
      await api('POST', '/account/password', { current_password: current, new_password: next });
      setCurrent('');
      setNext('');
      setRepeat('');
      setDone(true);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      className="panel stack"
      aria-labelledby="password-title"
      onSubmit={(event) => void submit(event)}
      // The browser's own check stopped this submit: an earlier answer's error no longer applies.
      onInvalidCapture={() => setError(null)}
    >
      <h2 id="password-title">Change password</h2>
      <label>
        Current password
        <input
          type="password"
          autoComplete="current-password"
          required
          value={current}
          onChange={(e) => setCurrent(e.target.value)}
        />
      </label>
      <label>
        New password ({MIN_PASSWORD}–{MAX_PASSWORD} characters)
        <input
          type="password"
          autoComplete="new-password"
          required
          value={next}
          onChange={(e) => setNext(e.target.value)}
        />
      </label>
      <label>
        Repeat the new password
        <input
          type="password"
          autoComplete="new-password"
          required
          value={repeat}
          onChange={(e) => setRepeat(e.target.value)}
        />
      </label>
      <ErrorNotice error={error} />
      {done ? (
        <p className="notice notice-ok" role="status">
          Password changed. Your other sessions were signed out.
        </p>
      ) : null}
      <div className="actions">
        <button type="submit" className="primary" disabled={busy} ref={buttonFocus.ref}>
          Change password
        </button>
      </div>
    </form>
  );
}

function SignOutEverywhere() {
  const { forget } = useSession();
  const [busy, setBusy] = useState(false);
  const buttonFocus = useFocusReturn<HTMLButtonElement>(!busy);
  const [error, setError] = useState<unknown>(null);
  const run = async () => {
    buttonFocus.arm();
    setBusy(true);
    setError(null);
    try {
      await api('POST', '/session/revoke-all');
      forget();
      navigate('/signin');
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };
  return (
    <section className="panel stack" aria-labelledby="everywhere-title">
      <h2 id="everywhere-title">Sessions</h2>
      <p>Signs out every browser signed in to this account, this one included. API keys keep working.</p>
      <ErrorNotice error={error} />
      <div className="actions">
        <button type="button" onClick={() => void run()} disabled={busy} ref={buttonFocus.ref}>
          Sign out everywhere
        </button>
      </div>
    </section>
  );
}

/** Not every gateway has notification e-mails: a 404 means "not offered here", not a failure. */
function NotificationSettings() {
  const loaded = useLoader(async () => {
    try {
      return (await api<{ data: Notifications }>('GET', '/account/notifications')).data;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return null;
      throw error;
    }
  }, []);
  const [form, setForm] = useState<Notifications | null>(null);
  const [threshold, setThreshold] = useState('');
  const [busy, setBusy] = useState(false);
  const buttonFocus = useFocusReturn<HTMLButtonElement>(!busy);
  const [error, setError] = useState<unknown>(null);
  const [saved, setSaved] = useState(false);

  useEffect(() => {
    if (loaded.data) {
      setForm(loaded.data);
      setThreshold(loaded.data.low_balance.threshold === null ? '' : String(loaded.data.low_balance.threshold));
    }
  }, [loaded.data]);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!form) return;
    setError(null);
    setSaved(false);
    const value = threshold.trim() === '' ? null : Number(threshold);
    if (value !== null && (!Number.isFinite(value) || value < 0))
      return setError(new Error('The threshold must be a number of USD, 0 or more'));
    buttonFocus.arm();
    setBusy(true);
    try {
      const body = { ...form, low_balance: { enabled: form.low_balance.enabled, threshold: value } };
      const answer = await api<{ data: Notifications }>('PATCH', '/account/notifications', body);
      setForm(answer.data);
      setSaved(true);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  if (loaded.error)
    return <ErrorNotice error={loaded.error} title="Could not load notification settings" onRetry={loaded.reload} />;
  if (loaded.loading) return null;
  if (loaded.data === null) {
    return (
      <section className="panel" aria-labelledby="notifications-title">
        <h2 id="notifications-title">Notifications</h2>
        <p className="muted">This gateway does not send notification e-mails.</p>
      </section>
    );
  }
  if (!form) return null;
  return (
    <form className="panel stack" aria-labelledby="notifications-title" onSubmit={(event) => void submit(event)}>
      <h2 id="notifications-title">Notifications</h2>
      <label className="check">
        <input
          type="checkbox"
          checked={form.low_balance.enabled}
          onChange={(e) => setForm({ ...form, low_balance: { ...form.low_balance, enabled: e.target.checked } })}
        />
        E-mail me when my balance runs low
      </label>
      <label>
        Low-balance threshold (USD)
        <input
          type="number"
          min="0"
          step="any"
          inputMode="decimal"
          value={threshold}
          onChange={(e) => setThreshold(e.target.value)}
          disabled={!form.low_balance.enabled}
        />
      </label>
      <label className="check">
        <input
          type="checkbox"
          checked={form.key_limit.enabled}
          onChange={(e) => setForm({ ...form, key_limit: { enabled: e.target.checked } })}
        />
        E-mail me when a key reaches its credit limit
      </label>
      <label className="check">
        <input
          type="checkbox"
          checked={form.key_expiry.enabled}
          onChange={(e) => setForm({ ...form, key_expiry: { enabled: e.target.checked } })}
        />
        E-mail me before a key expires
      </label>
      <ErrorNotice error={error} />
      {saved ? (
        <p className="notice notice-ok" role="status">
          Notification settings saved.
        </p>
      ) : null}
      <div className="actions">
        <button type="submit" className="primary" disabled={busy} ref={buttonFocus.ref}>
          Save notification settings
        </button>
      </div>
    </form>
  );
}

export function SettingsPage() {
  const { state } = useSession();
  return (
    <section>
      <h1>Settings</h1>
      {state.status === 'signed-in' ? (
        <p className="muted wrap-anywhere">Signed in as {state.session.account.email}.</p>
      ) : null}
      <PasswordForm />
      <SignOutEverywhere />
      <NotificationSettings />
    </section>
  );
}
