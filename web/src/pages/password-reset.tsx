/**
 * "Forgot your password?": ask for a reset link by e-mail, then set a new password from the link
 * (`/reset-password?token=…`). The gateway answers the request the same way whether or not the
 * address has an account, and so does this page.
 */
import { useState, type FormEvent } from 'react';
import { api } from '../api/client';
import { ErrorNotice } from '../components/error-notice';
import { focusIfLost } from '../components/focus-lost';
import { useFocusReturn } from '../components/use-focus-return';
import { useLoader } from '../components/use-loader';
import { Link, useLocation } from '../router';
import { MAX_PASSWORD, MIN_PASSWORD, newPasswordProblem } from '../password-policy';
import { useSession } from '../session';
import { rememberTypedEmail, typedEmail } from '../typed-email';

/**
 * Whether the gateway can mail a reset link (`mail.public_url` set): null while asking; true when it
 * did not answer (the form is offered then; submitting it reports what the gateway says).
 */
function useResetAvailable(): boolean | null {
  const asked = useLoader(
    () => api<{ data: { available: boolean } }>('GET', '/password-reset', undefined, { quiet401: true }),
    [],
  );
  return asked.error ? true : asked.data ? asked.data.data.available === true : null;
}

export function ForgotPasswordPage() {
  const available = useResetAvailable();
  const [email, setEmail] = useState(typedEmail);
  const [busy, setBusy] = useState(false);
  const buttonFocus = useFocusReturn<HTMLButtonElement>(!busy);
  const [sent, setSent] = useState(false);
  const [error, setError] = useState<unknown>(null);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    buttonFocus.arm();
    setBusy(true);
    setError(null);
    try {
      await api('POST', '/password-reset', { email: email.trim() }, { quiet401: true });
      setSent(true);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="narrow">
      <h1>Reset your password</h1>
      {available === null ? (
        <p className="muted">Loading…</p>
      ) : available === false ? (
        <p className="notice notice-warning" role="status">
          Password reset by e-mail is not set up on this gateway. Ask its operator to set a new password for you.
        </p>
      ) : sent ? (
        <p className="notice notice-ok" role="status" tabIndex={-1} ref={(element) => void focusIfLost(element)}>
          If an account uses {email.trim()}, a link to set a new password is on its way. It works once, for 30 minutes.
        </p>
      ) : (
        <form onSubmit={(event) => void submit(event)} className="stack">
          <p className="muted">Enter the e-mail address you sign in with; we send a link to set a new password.</p>
          <label>
            E-mail
            <input
              type="email"
              name="email"
              autoComplete="username"
              required
              value={email}
              onChange={(e) => {
                setEmail(e.target.value);
                rememberTypedEmail(e.target.value);
              }}
            />
          </label>
          <ErrorNotice error={error} />
          <button type="submit" className="primary" disabled={busy} ref={buttonFocus.ref}>
            {busy ? 'Sending…' : 'Send reset link'}
          </button>
        </form>
      )}
      <p>
        <Link to="/signin">Back to sign in</Link>
      </p>
    </section>
  );
}

/**
 * Whether the link's token can still be used: null while asking; true when the gateway did not
 * answer (the form is offered, and submitting it reports what the gateway says).
 */
function useTokenUsable(token: string): boolean | null {
  const asked = useLoader(
    () =>
      token === ''
        ? Promise.resolve({ data: { valid: false } })
        : api<{ data: { valid: boolean } }>('POST', '/password-reset/check', { token }, { quiet401: true }),
    [token],
  );
  return asked.error ? true : asked.data ? asked.data.data.valid === true : null;
}

export function ResetPasswordPage() {
  const { search } = useLocation();
  const { retry: rereadSession } = useSession();
  const token = search.get('token') ?? '';
  const [password, setPassword] = useState('');
  const [repeat, setRepeat] = useState('');
  const [busy, setBusy] = useState(false);
  const buttonFocus = useFocusReturn<HTMLButtonElement>(!busy);
  const [done, setDone] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const usable = useTokenUsable(token);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    const problem = newPasswordProblem(password, repeat);
    if (problem !== null) {
      setError(new Error(problem));
      return;
    }
    buttonFocus.arm();
    setBusy(true);
    try {
      await api('POST', '/password-reset/confirm', { token, new_password: password }, { quiet401: true });
      setDone(true);
      // The used token leaves the address bar and the tab's history (not through the router: this
      // page goes on showing that the password was changed).
      window.history.replaceState(null, '', '/reset-password');
      // The reset ended every session of the account: this tab's too, when it was signed in as it
      // (the header went on showing the account until the next click).
      rereadSession();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  if (token === '') {
    return (
      <section className="narrow">
        <h1>Set a new password</h1>
        <p className="notice notice-error">This link has no reset token. Ask for a new link.</p>
        <p>
          <Link to="/forgot-password">Ask for a reset link</Link>
        </p>
      </section>
    );
  }
  return (
    <section className="narrow">
      <h1>Set a new password</h1>
      {usable === null && !done ? (
        <p className="muted">Loading…</p>
      ) : usable === false && !done ? (
        <>
          <p className="notice notice-error" role="alert">
            This link was already used or has expired (a link works once, for 30 minutes).
          </p>
          <p>
            <Link to="/forgot-password">Ask for a new link</Link>
          </p>
        </>
      ) : done ? (
        <>
          <p className="notice notice-ok" role="status" tabIndex={-1} ref={(element) => void focusIfLost(element)}>
            Your password was changed, and every session of your account was signed out.
          </p>
          <p>
            <Link to="/signin">Sign in</Link>
          </p>
        </>
      ) : (
        <form onSubmit={(event) => void submit(event)} className="stack">
          <label>
            New password ({MIN_PASSWORD} to {MAX_PASSWORD} characters)
            <input
              type="password"
              name="new-password"
              autoComplete="new-password"
              required
              value={password}
              onChange={(e) => setPassword(e.target.value)}
            />
          </label>
          <label>
            Repeat the new password
            <input
              type="password"
              name="repeat-password"
              autoComplete="new-password"
              required
              value={repeat}
              onChange={(e) => setRepeat(e.target.value)}
            />
          </label>
          <ErrorNotice error={error} />
          <button type="submit" className="primary" disabled={busy} ref={buttonFocus.ref}>
            {busy ? 'Saving…' : 'Set new password'}
          </button>
        </form>
      )}
    </section>
  );
}
