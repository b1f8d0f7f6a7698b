/**
 * A "Show older …" button keeps the keyboard focus through its load (it is disabled meanwhile, and a
 * disabled button loses the focus to the page's body): to the first row the load added (the button
 * when none was); only if the focus is still lost then, and without scrolling the page.
 * `ask(shown)` when the button is pressed, with the number of rows shown before the load.
 */
import { useEffect, useRef, type RefObject } from 'react';
import { focusIfLost } from './focus-lost';

export function useShowOlder(loading: boolean): {
  button: RefObject<HTMLButtonElement | null>;
  rows: RefObject<HTMLTableSectionElement | null>;
  ask(shown: number): void;
} {
  const button = useRef<HTMLButtonElement>(null);
  const rows = useRef<HTMLTableSectionElement>(null);
  const resumeAt = useRef<number | null>(null);
  useEffect(() => {
    if (loading || resumeAt.current === null) return;
    const index = resumeAt.current;
    resumeAt.current = null;
    // The first row the load added (where the reader goes on; the button, now below them, would take
    // a Space meant to scroll as another "Show older"); only if nobody has the focus, and without scrolling.
    focusIfLost((rows.current?.rows[index] as HTMLElement | undefined) ?? button.current);
  }, [loading]);
  return {
    button,
    rows,
    ask: (shown) => {
      resumeAt.current = shown;
    },
  };
}
