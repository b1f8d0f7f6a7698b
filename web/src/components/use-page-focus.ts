/**
 * After the page changes, the keyboard focus goes to the new page's heading when the control that
 * had it went with the old page ("Sign out everywhere", "Sign in" on the way to an app's approval) —
 * focus left on the document's body would send a keyboard or screen-reader user back to its top.
 * Focus that is somewhere (a tab of the navigation just clicked) stays, and so does the browser's
 * own start on a visit's first page, redirects included (nothing had the focus: the skip link is
 * first). A page that shows its heading only once its data is there (the approval page) is waited
 * for, up to a few seconds.
 */
import { useEffect, useRef } from 'react';
import { focusIsLost } from './focus-lost';

const WAIT_FOR_HEADING_MS = 5_000;

export function usePageFocus(path: string): void {
  // The element that last had the focus, whichever it was (a control of the page, the header's).
  const lastFocused = useRef<Element | null>(null);
  useEffect(() => {
    const remember = (event: FocusEvent) => {
      lastFocused.current = event.target instanceof Element ? event.target : null;
    };
    document.addEventListener('focusin', remember);
    return () => document.removeEventListener('focusin', remember);
  }, []);

  useEffect(() => {
    const until = performance.now() + WAIT_FOR_HEADING_MS;
    let frame = 0;
    const attempt = () => {
      if (!focusIsLost()) return;
      // Nothing had the focus, or it is still there: not ours to move.
      const previous = lastFocused.current;
      if (!previous || previous.isConnected) return;
      const heading = document.querySelector<HTMLElement>('main h1');
      if (heading) {
        if (!heading.hasAttribute('tabindex')) heading.tabIndex = -1;
        heading.focus();
        return;
      }
      if (performance.now() < until) frame = requestAnimationFrame(attempt);
    };
    frame = requestAnimationFrame(attempt);
    return () => cancelAnimationFrame(frame);
  }, [path]);
}
