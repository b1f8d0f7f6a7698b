import { useLayoutEffect, useRef } from 'react';
import { ApiError } from '../api/client';

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

/**
 * A failure in words. `onRetry` (a load's `reload`): the notice offers to try again — a page that
 * could not load (the gateway restarting, the network gone) is one click from working again.
 */
export function ErrorNotice(props: { error: unknown; title?: string; onRetry?: () => void }) {
  const shown = props.error !== null && props.error !== undefined;
  // "Try again" that worked takes the notice, and the focus on its button, away: the focus goes to
  // the page's heading, not the document's body (a keyboard user was sent back to the top).
  const retryFocused = useRef(false);
  useLayoutEffect(() => {
    if (!shown) return;
    return () => {
      if (!retryFocused.current) return;
      retryFocused.current = false;
      const active = document.activeElement;
      if (active && active !== document.body && active.isConnected) return;
      const heading = document.querySelector<HTMLElement>('main h1');
      if (!heading) return;
      if (!heading.hasAttribute('tabindex')) heading.tabIndex = -1;
      heading.focus();
    };
  }, [shown]);
  if (!shown) return null;
  return (
    <p className="notice notice-error" role="alert">
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
