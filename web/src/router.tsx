/** A small history-API router: the gateway serves index.html at each of these paths (src/http/routes/web.ts). */
import { useEffect, useState, type MouseEvent, type ReactNode } from 'react';

export const PATHS = [
  '/',
  '/signin',
  '/signup',
  '/forgot-password',
  '/reset-password',
  '/keys',
  '/activity',
  '/credits',
  '/apps',
  '/settings',
  '/auth',
  '/rankings',
  '/docs',
] as const;

const listeners = new Set<() => void>();

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) window.history.replaceState(null, '', to);
  else window.history.pushState(null, '', to);
  for (const listener of listeners) listener();
  window.scrollTo(0, 0);
}

export interface Location {
  path: string;
  search: URLSearchParams;
}

function current(): Location {
  return { path: window.location.pathname, search: new URLSearchParams(window.location.search) };
}

export function useLocation(): Location {
  const [location, setLocation] = useState(current);
  useEffect(() => {
    const update = () => setLocation(current());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return location;
}

/**
 * Only one of the dashboard's own pages: `?next=` can send no one elsewhere. Read as the browser
 * reads a URL — it drops tabs and line breaks, so `/\t/host` is `//host` — and kept only when it
 * stays on this origin and names a page of PATHS (not `/api/…`, which the dashboard does not render).
 */
export function safeNext(raw: string | null): string | null {
  if (!raw || !raw.startsWith('/')) return null;
  let url: URL;
  try {
    url = new URL(raw, window.location.origin);
  } catch {
    return null;
  }
  if (url.origin !== window.location.origin || !(PATHS as readonly string[]).includes(url.pathname)) return null;
  return url.pathname + url.search + url.hash;
}

export function Link(props: { to: string; children: ReactNode; className?: string; current?: boolean }) {
  const onClick = (event: MouseEvent<HTMLAnchorElement>) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(props.to);
  };
  return (
    <a href={props.to} onClick={onClick} className={props.className} aria-current={props.current ? 'page' : undefined}>
      {props.children}
    </a>
  );
}
