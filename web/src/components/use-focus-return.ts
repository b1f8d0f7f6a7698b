/**
 * Giving the keyboard focus back to a control the focus had to leave — a button disabled while its
 * action ran, or one that opened a confirmation now closed: `arm()` when that happens (`armIfFocused()`
 * when only a press of the control itself should bring the focus back); the control behind `ref` is
 * focused once `ready` holds again.
 */
import { useEffect, useRef, type RefObject } from 'react';
import { focusIsLost } from './focus-lost';

export function useFocusReturn<T extends HTMLElement>(
  ready: boolean,
): { ref: RefObject<T | null>; arm(): void; armIfFocused(): void } {
  const ref = useRef<T>(null);
  const armed = useRef(false);
  useEffect(() => {
    if (!ready || !armed.current) return;
    armed.current = false;
    // Only if nobody has it: a user who clicked into a field meanwhile keeps typing there (a key
    // pressed on a button that took the focus back would press it).
    if (focusIsLost()) ref.current?.focus();
  }, [ready]);
  return {
    ref,
    arm: () => {
      armed.current = true;
    },
    /** Only when the control has the focus now (pressed, not a form submitted with Enter from a field that keeps it). */
    armIfFocused: () => {
      if (ref.current !== null && document.activeElement === ref.current) armed.current = true;
    },
  };
}
