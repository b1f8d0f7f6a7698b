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

export function Announcer(props: { path: string }) {
  const [said, setSaid] = useState({ text: '', count: 0 });
  useEffect(() => {
    speak = (text) => setSaid((previous) => ({ text, count: previous.count + 1 }));
    return () => {
      speak = null;
    };
  }, []);
  // A result belongs to its page: another page (signing out too) does not keep it to be read later.
  useEffect(() => setSaid((previous) => ({ text: '', count: previous.count })), [props.path]);
  // The same words again are a new result: every other one ends in a no-break space, so the
  // region's text changes each time (clearing it first was sometimes rendered together with the text).
  const text = said.text === '' ? '' : said.count % 2 === 0 ? `${said.text}\u00a0` : said.text;
  return (
    <div className="visually-hidden" role="status" aria-live="polite" data-testid="announcer">
      {text}
    </div>
  );
}
