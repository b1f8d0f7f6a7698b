import { useLayoutEffect, useRef } from 'react';
import { ApiError } from '../api/client';
import { focusIfLost } from './focus-lost';

/** The words of a failure, never swallowed: the error record's message, or what went wrong locally. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) {
    // The wait, unless the message already names it.
    return error.retryAfterSeconds && !/try again in/i.test(error.message)
      ? `${error.message} (try again in ${error.retryAfterSeconds} s)`
      : error.message;
  }
  return error instanceof Error ? error.message : String(error);
}

const HEADING = 'h1, h2, h3';

/** The nearest heading before a place in the page: a heading sibling, or the last heading inside one, else the parent's first. */
function headingBefore(before: Element | null, parent: Element | null): HTMLElement | null {
  for (let at = before; at; at = at.previousElementSibling) {
    if (at.matches(HEADING)) return at as HTMLElement;
    const inside = at.querySelectorAll<HTMLElement>(HEADING);
    if (inside.length > 0) return inside[inside.length - 1]!;
  }
  return parent?.querySelector<HTMLElement>(HEADING) ?? document.querySelector<HTMLElement>('main h1');
}

/**
 * A failure in words. `onRetry` (a load's `reload`): the notice offers to try again — a page that
 * could not load (the gateway restarting, the network gone) is one click from working again.
 */
export function ErrorNotice(props: { error: unknown; title?: string; onRetry?: () => void }) {
  const shown = props.error !== null && props.error !== undefined;
  // "Try again" that worked takes the notice, and the focus on its button, away: the focus goes to
  // the heading of what was loaded again (the nearest heading before the notice), not the document's
  // body — only if nobody took it meanwhile, and without scrolling.
  const retryFocused = useRef(false);
  const notice = useRef<HTMLParagraphElement>(null);
  const place = useRef<{ before: Element | null; parent: Element | null }>({ before: null, parent: null });
  useLayoutEffect(() => {
    if (!shown) return;
    place.current = {
      before: notice.current?.previousElementSibling ?? null,
      parent: notice.current?.parentElement ?? null,
    };
    return () => {
      if (!retryFocused.current) return;
      retryFocused.current = false;
      focusIfLost(headingBefore(place.current.before, place.current.parent));
    };
  }, [shown]);
  if (!shown) return null;
  return (
    <p className="notice notice-error" role="alert" ref={notice}>
      {props.title ? <strong>{props.title}: </strong> : null}
      {describeError(props.error)}
      {props.onRetry ? (
        <>
          {' '}
          <button
            type="button"
            className="link-button"
            onClick={props.onRetry}
            onFocus={() => (retryFocused.current = true)}
            onBlur={() => (retryFocused.current = false)}
          >
            Try again
          </button>
        </>
      ) : null}
    </p>
  );
}
