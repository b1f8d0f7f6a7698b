/**
 * Giving the keyboard focus back to a control the focus had to leave — a button disabled while its
 * action ran, or one that opened a confirmation now closed: `arm()` when that happens; the control
 * behind `ref` is focused once `ready` holds again.
 */
import { useEffect, useRef, type RefObject } from 'react';

export function useFocusReturn<T extends HTMLElement>(ready: boolean): { ref: RefObject<T | null>; arm(): void } {
  const ref = useRef<T>(null);
  const armed = useRef(false);
  useEffect(() => {
    if (!ready || !armed.current) return;
    armed.current = false;
    ref.current?.focus();
  }, [ready]);
  return {
    ref,
    arm: () => {
      armed.current = true;
    },
  };
}
