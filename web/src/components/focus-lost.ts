/**
 * Whether the keyboard focus is nowhere — on the document's body, or on an element no longer in it —
 * so that moving it takes it from no one. Every "give the focus back" of the dashboard asks this at
 * the moment it would move the focus: someone who moved on meanwhile (typing in a field, a link
 * clicked, another tab) keeps it.
 */
export function focusIsLost(): boolean {
  const active = document.activeElement;
  return !active || active === document.body || !active.isConnected;
}

/** Moves the focus to `element` when it is lost, without scrolling the page (the reader stays where they are). */
export function focusIfLost(element: HTMLElement | null | undefined): boolean {
  if (!element || !focusIsLost()) return false;
  if (!element.hasAttribute('tabindex') && !element.matches('a[href], button, input, select, textarea'))
    element.tabIndex = -1;
  element.focus({ preventScroll: true });
  return true;
}
