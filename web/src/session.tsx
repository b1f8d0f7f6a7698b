/**
 * Who is signed in: probed at start (GET /session/status; again, backing off, while the gateway cannot
 * answer it), set by sign-in, cleared by sign-out or any 401. A mutation refused for a stale CSRF token (the holder signed in again in another tab) reads
 * the session again: the same account's new token is used; another account's session ends this one.
 */
import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { api, ApiError, setCsrfRefresher, setCsrfToken, setSignedOutHandler } from './api/client';
import type { Session } from './api/types';

type SessionState =
  | { status: 'loading' }
  | { status: 'signed-out'; problem: string | null }
  | { status: 'signed-in'; session: Session }
  /**
   * The session could not be read (the gateway or its store is down: a 503, no connection): not the
   * same as signed out. Probed again by itself at `retryAt` (backing off to 30 s), or on `retry()`.
   */
  | { status: 'unreachable'; problem: string; retryAt: number };

/**
 * The session now, null when there is none: `GET /session/status` (200 either way, so a signed-out
 * page load logs no failed request). A gateway from before that route (404: an older process behind
 * the same address during a rolling deploy) is asked `GET /session`, whose 401 means none.
 */
async function readSession(): Promise<Session | null> {
  try {
    return (await api<{ data: Session | null }>('GET', '/session/status')).data;
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 404) throw error;
  }
  try {
    return (await api<{ data: Session }>('GET', '/session', undefined, { quiet401: true })).data;
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return null;
    throw error;
  }
}

/** Waits before probing the session again: 2, 4, 8, 16, then every 30 seconds. */
const retryDelayMs = (failures: number) => Math.min(30_000, 1_000 * 2 ** Math.min(failures, 5));

interface SessionContextValue {
  state: SessionState;
  signIn(email: string, password: string): Promise<void>;
  /** Creates an account (where sign-up is open) and signs it in. */
  signUp(email: string, password: string): Promise<void>;
  signOut(): Promise<void>;
  /** After "sign out everywhere" or a password change that ended this session. */
  forget(): void;
  /** Probes the session again now (the state is `unreachable`). */
  retry(): void;
}

const SessionContext = createContext<SessionContextValue | null>(null);

export function SessionProvider(props: { children: ReactNode }) {
  const [state, setState] = useState<SessionState>({ status: 'loading' });
  /** The account this page shows, for the CSRF refresher (which runs outside React's render). */
  const accountId = useRef<string | null>(null);
  /** Session probes that failed in a row (the wait before the next grows with them). */
  const failures = useRef(0);
  /** Bumped by sign-in and sign-out: a probe that started before one of them has nothing to say. */
  const era = useRef(0);
  useEffect(() => {
    accountId.current = state.status === 'signed-in' ? state.session.account.id : null;
  }, [state]);

  /** Tells the other tabs of this browser that the session changed (set up below). */
  const announce = useRef<() => void>(() => undefined);

  const forget = useCallback(() => {
    era.current++;
    setCsrfToken(null);
    setState({ status: 'signed-out', problem: null });
    // Other tabs of this browser re-read theirs (sign out everywhere ended them too).
    announce.current();
  }, []);

  useEffect(() => {
    setSignedOutHandler(() => {
      setCsrfToken(null);
      setState({ status: 'signed-out', problem: 'Your session ended. Sign in again.' });
    });
    setCsrfRefresher(async () => {
      // The session now: null when there is none; undefined when it cannot be read (the refusal stands).
      const current = await readSession().catch(() => undefined);
      if (current === undefined) return null;
      if (current === null || current.account.id !== accountId.current) {
        setCsrfToken(null);
        setState({ status: 'signed-out', problem: 'Your session ended. Sign in again.' });
        return null;
      }
      setCsrfToken(current.csrf_token);
      return current.csrf_token;
    });
    return () => {
      setSignedOutHandler(null);
      setCsrfRefresher(null);
    };
  }, []);

  /**
   * Another tab of this browser shares the cookie: when it signs in or out it says so on this
   * channel, and this tab reads the session again (also when it becomes visible, for changes made
   * elsewhere). Another account now: this tab shows that one (its pages remount, app.tsx), so no
   * page shows one account's data under another's name; none: signed out.
   */
  useEffect(() => {
    const recheck = async () => {
      const started = era.current;
      const current = await readSession().catch(() => undefined);
      if (current === undefined || era.current !== started) return;
      const shown = accountId.current;
      if (current === null) {
        if (shown === null) return;
        era.current++;
        setCsrfToken(null);
        setState({ status: 'signed-out', problem: 'Your session ended. Sign in again.' });
      } else if (current.account.id !== shown) {
        era.current++;
        setCsrfToken(current.csrf_token);
        setState({ status: 'signed-in', session: current });
      } else setCsrfToken(current.csrf_token);
    };
    const channel = typeof BroadcastChannel === 'undefined' ? null : new BroadcastChannel('tollgate-session');
    const onMessage = () => void recheck();
    const onVisible = () => {
      if (document.visibilityState === 'visible') void recheck();
    };
    channel?.addEventListener('message', onMessage);
    document.addEventListener('visibilitychange', onVisible);
    announce.current = () => channel?.postMessage('changed');
    return () => {
      announce.current = () => undefined;
      channel?.close();
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, []);

  /** Probes bumped by `retry()`; a probe's answer is dropped once a newer one started. */
  const [probe, setProbe] = useState(0);
  const retry = useCallback(() => setProbe((n) => n + 1), []);
  useEffect(() => {
    let current = true;
    const started = era.current;
    const stale = () => !current || era.current !== started;
    let timer: ReturnType<typeof setTimeout> | undefined;
    // The status route answers 200 signed in or not: a signed-out page load logs no failed request.
    readSession().then(
      (session) => {
        if (stale()) return;
        failures.current = 0;
        if (session === null) {
          setState({ status: 'signed-out', problem: null });
          return;
        }
        setCsrfToken(session.csrf_token);
        setState({ status: 'signed-in', session });
      },
      (error: unknown) => {
        if (stale()) return;
        // Only a gateway that could not answer is "unreachable": no connection, a 5xx, a 429. Any
        // other answer is the gateway's word on this session (401: none).
        const status = error instanceof ApiError ? error.status : 0;
        if (status !== 0 && status !== 429 && status < 500) {
          failures.current = 0;
          setState({ status: 'signed-out', problem: status === 401 ? null : (error as Error).message });
          return;
        }
        const delay = retryDelayMs(failures.current++);
        const problem = error instanceof Error ? error.message : 'The gateway could not be reached.';
        setState({ status: 'unreachable', problem, retryAt: Date.now() + delay });
        timer = setTimeout(() => {
          if (!stale()) retry();
        }, delay);
      },
    );
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [probe, retry]);

  /** A session the gateway just gave this tab (sign-in or sign-up): shown here, announced to the others. */
  const adopt = useCallback((session: Session) => {
    era.current++;
    failures.current = 0;
    setCsrfToken(session.csrf_token);
    setState({ status: 'signed-in', session });
    announce.current();
  }, []);

  const signIn = useCallback(
    async (email: string, password: string) => {
      adopt((await api<{ data: Session }>('POST', '/session', { email, password }, { quiet401: true })).data);
    },
    [adopt],
  );

  const signUp = useCallback(
    async (email: string, password: string) => {
      adopt((await api<{ data: Session }>('POST', '/signup', { email, password }, { quiet401: true })).data);
    },
    [adopt],
  );

  const signOut = useCallback(async () => {
    await api('DELETE', '/session', undefined, { quiet401: true }).catch((error: unknown) => {
      // Already signed out is the outcome we wanted; anything else is shown.
      if (!(error instanceof ApiError && error.status === 401)) throw error;
    });
    forget();
  }, [forget]);

  const value = useMemo(
    () => ({ state, signIn, signUp, signOut, forget, retry }),
    [state, signIn, signUp, signOut, forget, retry],
  );
  return <SessionContext.Provider value={value}>{props.children}</SessionContext.Provider>;
}

export function useSession(): SessionContextValue {
  const value = useContext(SessionContext);
  if (!value) throw new Error('useSession outside SessionProvider');
  return value;
}
