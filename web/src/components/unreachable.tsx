import { useEffect, useState } from 'react';
import { useSession } from '../session';

/**
 * The session could not be read (the gateway or its database is down, or the network is): not the
 * same as signed out, so it says so, counts down to the next automatic try, and offers one now.
 */
export function Unreachable() {
  const { state, retry } = useSession();
  const retryAt = state.status === 'unreachable' ? state.retryAt : 0;
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  if (state.status !== 'unreachable') return null;
  const seconds = Math.max(0, Math.ceil((retryAt - now) / 1000));
  return (
    <section className="narrow">
      <h1>Tollgate cannot be reached right now</h1>
      <p className="notice notice-error" role="alert">
        {state.problem}
      </p>
      <p className="muted" aria-live="polite">
        {seconds > 0 ? `Trying again in ${seconds} s.` : 'Trying again…'} Your session, if you had one, is kept.
      </p>
      <button type="button" className="primary" onClick={retry}>
        Try again now
      </button>
    </section>
  );
}
