/**
 * Spoken results of actions whose only visible sign is a changed row ("Key renamed", "Key deleted"):
 * one live region, always in the page (a region inserted together with its text is the pattern
 * screen readers announce least reliably), whose text `announce()` replaces.
 */
import { useEffect, useState } from 'react';

let speak: ((text: string) => void) | null = null;

export function announce(text: string): void {
  speak?.(text);
}

export function Announcer() {
  const [text, setText] = useState('');
  useEffect(() => {
    speak = (next) => {
      // The same words again are a new result: cleared first, so the region changes.
      setText('');
      requestAnimationFrame(() => setText(next));
    };
    return () => {
      speak = null;
    };
  }, []);
  return (
    <div className="visually-hidden" role="status" aria-live="polite" data-testid="announcer">
      {text}
    </div>
  );
}
