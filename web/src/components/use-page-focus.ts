/**
 * After the page changes, the keyboard focus goes to the new page's heading when it was left nowhere
 * — on the document's body, because the control that had it went with the old page ("Sign out
 * everywhere", "Sign in" on the way to an app's approval): a keyboard or screen-reader user then
 * starts at the page, not at the top of the document. Focus that is somewhere (a tab of the
 * navigation just clicked) stays. A page that shows its heading only once its data is there (the
 * approval page) is waited for, up to a few seconds.
 */
import { useEffect, useRef } from 'react';

const WAIT_FOR_HEADING_MS = 5_000;

export function usePageFocus(path: string): void {
  const first = useRef(true);
  useEffect(() => {
    // The first page of a visit: the browser's own start (the skip link first) is right.
    if (first.current) {
      first.current = false;
      return;
    }
    const until = performance.now() + WAIT_FOR_HEADING_MS;
    let frame = 0;
    const attempt = () => {
      const active = document.activeElement;
      if (active && active !== document.body && active.isConnected) return;
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
