/**
 * Creating an account from the dashboard, where the operator opened sign-up (`accounts.signup:
 * open`; GET /api/v1/signup says so). A new account starts with no credits and signed in; with
 * sign-up closed the page says to ask the operator, and the sign-in page offers no link to it.
 */
import { useEffect, useState, type FormEvent } from 'react';
import { api } from '../api/client';
import { ErrorNotice } from '../components/error-notice';
import { useFocusReturn } from '../components/use-focus-return';
import { MAX_PASSWORD, MIN_PASSWORD, newPasswordProblem } from '../password-policy';
import { Link, navigate, safeNext, useLocation } from '../router';
import { useSession } from '../session';

/** Whether sign-up is open on this gateway: null while asking (or when the gateway did not answer). */
export function useSignUpOpen(): boolean | null {
  const [open, setOpen] = useState<boolean | null>(null);
  useEffect(() => {
    let current = true;
    api<{ data: { open: boolean } }>('GET', '/signup', undefined, { quiet401: true }).then(
      (answer) => {
        if (current) setOpen(answer.data.open === true);
      },
      () => undefined, // no link is offered then; the sign-up page itself reports its own failure
    );
    return () => {
      current = false;
    };
  }, []);
  return open;
}

export function SignUpPage() {
  const { state, signUp } = useSession();
  const { search } = useLocation();
  const next = safeNext(search.get('next')) ?? '/keys';
  const open = useSignUpOpen();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [repeat, setRepeat] = useState('');
  const [busy, setBusy] = useState(false);
  const buttonFocus = useFocusReturn<HTMLButtonElement>(!busy);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    if (state.status === 'signed-in') navigate(next, { replace: true });
  }, [state.status, next]);

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
      await signUp(email.trim(), password);
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };

  const signInLink = `/signin${next === '/keys' ? '' : `?next=${encodeURIComponent(next)}`}`;
  return (
    <section className="narrow">
      <h1>Create an account</h1>
      {open === false ? (
        <p className="notice" role="status">
          Sign-up is closed on this gateway: ask its operator for an account.
        </p>
      ) : (
        <>
          <p className="muted">
            An account holds your API keys and credits. It starts with no credits; the gateway's operator adds them.
          </p>
          <form onSubmit={(event) => void submit(event)} className="stack">
            <label>
              E-mail
              <input
                type="email"
                name="email"
                autoComplete="username"
                required
                value={email}
                onChange={(e) => setEmail(e.target.value)}
              />
            </label>
            <label>
              Password ({MIN_PASSWORD} to {MAX_PASSWORD} characters)
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
              Repeat the password
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
              {busy ? 'Creating…' : 'Create account'}
            </button>
          </form>
        </>
      )}
      <p>
        Already have an account? <Link to={signInLink}>Sign in</Link>
      </p>
    </section>
  );
}
