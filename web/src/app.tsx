/** The page frame (header, navigation) and which page a path shows; account pages need a session. */
import { Unreachable } from './components/unreachable';
import { useEffect, useRef, useState } from 'react';
import { Announcer } from './components/announcer';
import { ErrorNotice } from './components/error-notice';
import { usePageFocus } from './components/use-page-focus';
import { ActivityPage } from './pages/activity';
import { ApiReferencePage } from './pages/api-reference';
import { AppsPage } from './pages/apps';
import { AuthorizePage } from './pages/authorize';
import { CreditsPage } from './pages/credits';
import { KeysPage } from './pages/keys';
import { RankingsPage } from './pages/rankings';
import { SettingsPage } from './pages/settings';
import { ForgotPasswordPage, ResetPasswordPage } from './pages/password-reset';
import { SignInPage } from './pages/sign-in';
import { SignUpPage } from './pages/sign-up';
import { Link, navigate, useLocation } from './router';
import { useSession } from './session';

const NAV = [
  { to: '/keys', label: 'Keys' },
  { to: '/activity', label: 'Activity' },
  { to: '/credits', label: 'Credits' },
  { to: '/apps', label: 'Apps' },
  { to: '/settings', label: 'Settings' },
  { to: '/rankings', label: 'Rankings' },
  { to: '/docs', label: 'API' },
] as const;

const TITLES: Record<string, string> = {
  '/keys': 'API keys',
  '/activity': 'Activity',
  '/credits': 'Credits',
  '/apps': 'Apps',
  '/settings': 'Settings',
  '/rankings': 'Rankings',
  '/signin': 'Sign in',
  '/signup': 'Create an account',
  '/forgot-password': 'Reset your password',
  '/reset-password': 'Set a new password',
  '/auth': 'Authorize an app',
  '/docs': 'API reference',
};

/** Scrolls the tab bar sideways just enough for `tab` to show whole; the page does not move. */
function revealInBar(bar: HTMLElement, tab: HTMLElement): void {
  const barBox = bar.getBoundingClientRect();
  const tabBox = tab.getBoundingClientRect();
  if (tabBox.left < barBox.left) bar.scrollLeft -= barBox.left - tabBox.left;
  else if (tabBox.right > barBox.right) bar.scrollLeft += tabBox.right - barBox.right;
}

function Header(props: { path: string }) {
  const { state, signOut } = useSession();
  const [error, setError] = useState<unknown>(null);
  const signedIn = state.status === 'signed-in';
  // On a narrow screen the tab bar scrolls sideways: the current page's tab is brought into view
  // (on /rankings or /docs at 390 px it was off the edge).
  const nav = useRef<HTMLElement>(null);
  useEffect(() => {
    const current = nav.current?.querySelector<HTMLElement>('[aria-current="page"]');
    current?.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  }, [props.path, signedIn]);
  return (
    <header className="site-header">
      <div className="header-row">
        <Link to={signedIn ? '/keys' : '/rankings'} className="brand">
          Tollgate
        </Link>
        {signedIn ? (
          <div className="account">
            <span className="account-email" title={state.session.account.email}>
              {state.session.account.email}
            </span>
            <button
              type="button"
              className="link-button"
              onClick={() => {
                setError(null);
                signOut().then(() => navigate('/signin'), setError);
              }}
            >
              Sign out
            </button>
          </div>
        ) : props.path !== '/signin' && state.status !== 'unreachable' ? (
          <Link to={`/signin`} className="account">
            Sign in
          </Link>
        ) : null}
      </div>
      {signedIn ? (
        <nav
          aria-label="Dashboard"
          ref={nav}
          // A tab reached with the keyboard is brought into view too (at 390 px "Rankings" got the
          // focus with only a sliver of it on the screen): the bar scrolls sideways, never the page
          // (the browser focuses the tab again when its window comes back).
          onFocus={(event) => revealInBar(event.currentTarget, event.target)}
        >
          <ul>
            {NAV.map((item) => (
              <li key={item.to}>
                <Link to={item.to} current={props.path === item.to}>
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
      ) : null}
      <ErrorNotice error={error} title="Sign out failed" />
    </header>
  );
}

/** Pages that need no account: the public rankings, the API reference, sign-in, sign-up and password reset, and /auth (which handles its own sign-in hop). */
const PUBLIC = new Set(['/rankings', '/docs', '/signin', '/signup', '/forgot-password', '/reset-password', '/auth']);

function Page(props: { path: string }) {
  const { state } = useSession();
  const { path } = props;
  const needsSession = !PUBLIC.has(path);

  useEffect(() => {
    if (state.status === 'loading' || state.status === 'unreachable') return;
    if (path === '/') navigate(state.status === 'signed-in' ? '/keys' : '/signin', { replace: true });
    else if (needsSession && state.status === 'signed-out')
      navigate(`/signin?next=${encodeURIComponent(path + window.location.search)}`, { replace: true });
  }, [state.status, path, needsSession]);

  if (path === '/rankings') return <RankingsPage />;
  if (path === '/docs') return <ApiReferencePage />;
  if (path === '/signin') return <SignInPage />;
  if (path === '/signup') return <SignUpPage />;
  if (path === '/forgot-password') return <ForgotPasswordPage />;
  if (path === '/reset-password') return <ResetPasswordPage />;
  if (path === '/auth') return <AuthorizePage />;
  if (state.status === 'unreachable') return <Unreachable />;
  if (state.status !== 'signed-in') return <p className="muted">Loading…</p>;
  // Keyed by the account: another account signed in (another tab) remounts the page with its data.
  return <AccountPage key={state.session.account.id} path={path} />;
}

function AccountPage(props: { path: string }) {
  const { path } = props;
  switch (path) {
    case '/keys':
      return <KeysPage />;
    case '/activity':
      return <ActivityPage />;
    case '/credits':
      return <CreditsPage />;
    case '/apps':
      return <AppsPage />;
    case '/settings':
      return <SettingsPage />;
    default:
      return (
        <section>
          <h1>Page not found</h1>
          <p>
            There is no page at {path}. <Link to="/keys">Go to your keys</Link>.
          </p>
        </section>
      );
  }
}

export function App() {
  const { path } = useLocation();
  usePageFocus(path);
  useEffect(() => {
    document.title = TITLES[path] ? `${TITLES[path]} · Tollgate` : 'Tollgate';
  }, [path]);
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <Header path={path} />
      <main id="main">
        <Page path={path} />
      </main>
      <Announcer path={path} />
    </>
  );
}
