import { useEffect, useState, type FormEvent } from 'react';
import { ErrorNotice } from '../components/error-notice';
import { useFocusReturn } from '../components/use-focus-return';
import { Link, navigate, safeNext, useLocation } from '../router';
import { useSession } from '../session';
import { rememberTypedEmail, typedEmail } from '../typed-email';
import { useSignUpOpen } from './sign-up';

export function SignInPage() {
  const { state, signIn } = useSession();
  const { search } = useLocation();
  const next = safeNext(search.get('next')) ?? '/keys';
  const [email, setEmail] = useState(typedEmail);
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const buttonFocus = useFocusReturn<HTMLButtonElement>(!busy);
  const [error, setError] = useState<unknown>(null);
  const signUpOpen = useSignUpOpen();

  useEffect(() => {
    if (state.status === 'signed-in') navigate(next, { replace: true });
  }, [state.status, next]);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    buttonFocus.arm();
    setBusy(true);
    setError(null);
    try {
      await signIn(email.trim(), password);
      // Signed in: the address is not offered to whoever signs in next in this tab.
      rememberTypedEmail('');
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };

  return (
    <section className="narrow">
      <h1>Sign in</h1>
      <p className="muted">Sign in to manage your API keys, credits and the apps you authorized.</p>
      {state.status === 'signed-out' && state.problem ? <p className="notice">{state.problem}</p> : null}
      {state.status === 'unreachable' ? (
        <p className="notice notice-error" role="alert">
          {/[.!?]$/.test(state.problem) ? state.problem : `${state.problem}.`} Signing in may fail until the gateway
          answers again.
        </p>
      ) : null}
      <form onSubmit={(event) => void submit(event)} className="stack">
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
        <label>
          Password
          <input
            type="password"
            name="password"
            autoComplete="current-password"
            required
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </label>
        <ErrorNotice error={error} />
        <button type="submit" className="primary" disabled={busy} ref={buttonFocus.ref}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <p>
        <Link to="/forgot-password">Forgot your password?</Link>
      </p>
      {signUpOpen === true ? (
        <p>
          New here?{' '}
          <Link to={`/signup${next === '/keys' ? '' : `?next=${encodeURIComponent(next)}`}`}>Create an account</Link>
        </p>
      ) : null}
    </section>
  );
}
