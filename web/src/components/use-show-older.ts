/**
 * A "Show older …" button keeps the keyboard focus through its load (it is disabled meanwhile, and a
 * disabled button loses the focus to the page's body): back to the button once the rows are there,
 * or — when no older page is left and the button is gone — to the first row the load added; only if
 * the focus is still lost then, and without scrolling the page.
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
    // Only if nobody has it, and without scrolling: the reader stays at the rows the load added.
    focusIfLost(button.current ?? (rows.current?.rows[index] as HTMLElement | undefined));
  }, [loading]);
  return {
    button,
    rows,
    ask: (shown) => {
      resumeAt.current = shown;
    },
  };
}
