/** Who is signed in: probed once at start (GET /session), set by sign-in, cleared by sign-out or any 401. */
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { api, ApiError, setCsrfToken, setSignedOutHandler } from './api/client';
import type { Session } from './api/types';

type SessionState =
  { status: 'loading' } | { status: 'signed-out'; problem: string | null } | { status: 'signed-in'; session: Session };

interface SessionContextValue {
  state: SessionState;
  signIn(email: string, password: string): Promise<void>;
  signOut(): Promise<void>;
  /** After "sign out everywhere" or a password change that ended this session. */
  forget(): void;
}

const SessionContext = createContext<SessionContextValue | null>(null);

export function SessionProvider(props: { children: ReactNode }) {
  const [state, setState] = useState<SessionState>({ status: 'loading' });

  const forget = useCallback(() => {
    setCsrfToken(null);
    setState({ status: 'signed-out', problem: null });
  }, []);

  useEffect(() => {
    setSignedOutHandler(() => {
      setCsrfToken(null);
      setState({ status: 'signed-out', problem: 'Your session ended. Sign in again.' });
    });
    let cancelled = false;
    api<{ data: Session }>('GET', '/session', undefined, { quiet401: true }).then(
      (answer) => {
        if (cancelled) return;
        setCsrfToken(answer.data.csrf_token);
        setState({ status: 'signed-in', session: answer.data });
      },
      (error: unknown) => {
        if (cancelled) return;
        const problem = error instanceof ApiError && error.status !== 401 ? error.message : null;
        setState({ status: 'signed-out', problem });
      },
    );
    return () => {
      cancelled = true;
      setSignedOutHandler(null);
    };
  }, []);

  const signIn = useCallback(async (email: string, password: string) => {
    const answer = await api<{ data: Session }>('POST', '/session', { email, password }, { quiet401: true });
    setCsrfToken(answer.data.csrf_token);
    setState({ status: 'signed-in', session: answer.data });
  }, []);

  const signOut = useCallback(async () => {
    await api('DELETE', '/session', undefined, { quiet401: true }).catch((error: unknown) => {
      // Already signed out is the outcome we wanted; anything else is shown.
      if (!(error instanceof ApiError && error.status === 401)) throw error;
    });
    forget();
  }, [forget]);

  const value = useMemo(() => ({ state, signIn, signOut, forget }), [state, signIn, signOut, forget]);
  return <SessionContext.Provider value={value}>{props.children}</SessionContext.Provider>;
}

export function useSession(): SessionContextValue {
  const value = useContext(SessionContext);
  if (!value) throw new Error('useSession outside SessionProvider');
  return value;
}
