/** Creating a key: name, optional credit limit with its reset window, optional expiry, BYOK counting, management scope. */
import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { api } from '../api/client';
import type { ApiKey, LimitReset } from '../api/types';
import { ErrorNotice } from '../components/error-notice';
import { useFocusReturn } from '../components/use-focus-return';
import { LimitResetSelect, parseLimit } from './key-limit';

export interface CreatedKey {
  data: ApiKey;
  key: string;
}

/** A date input's day → the end of that UTC day, so a key "expiring on the 30th" works all of the 30th. */
function endOfUtcDay(day: string): string {
  return `${day}T23:59:59Z`;
}

/** Today as a date input's value, in UTC (the day a key's expiry is counted in). */
function todayUtc(): string {
  return new Date().toISOString().slice(0, 10);
}

export function KeyCreateForm(props: { onCreated(created: CreatedKey): void; onCancel(): void }) {
  const formId = useId();
  const [name, setName] = useState('');
  const [limit, setLimit] = useState('');
  const [reset, setReset] = useState<'' | LimitReset>('');
  const [expires, setExpires] = useState('');
  const [includeByok, setIncludeByok] = useState(false);
  const [management, setManagement] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  // Pressed, "Create key" is disabled while the request runs: a failure gives it the focus back.
  const submitFocus = useFocusReturn<HTMLButtonElement>(!busy);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    const limitValue = parseLimit(limit);
    if (limitValue instanceof Error) {
      setError(limitValue);
      return;
    }
    const body: Record<string, unknown> = { name: name.trim(), include_byok_in_limit: includeByok };
    if (limitValue !== null) {
      body.limit = limitValue;
      body.limit_reset = reset === '' ? null : reset;
    }
    if (expires !== '' && expires < todayUtc()) {
      setError(new Error('The expiry day has passed (days are UTC): choose today or a later day.'));
      return;
    }
    if (expires !== '') body.expires_at = endOfUtcDay(expires);
    if (management) body.management = true;
    submitFocus.armIfFocused();
    setBusy(true);
    try {
      const created = await api<CreatedKey>('POST', '/keys', body);
      props.onCreated(created);
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };

  return (
    <form
      className="panel stack"
      aria-labelledby={`${formId}-title`}
      onSubmit={(event) => void submit(event)}
      // The browser's own check stopped this submit: an earlier answer's error no longer applies.
      onInvalidCapture={() => setError(null)}
      onKeyDown={(event) => {
        if (event.key === 'Escape' && !busy) props.onCancel();
      }}
    >
      <h2 id={`${formId}-title`}>Create a key</h2>
      <label>
        Name
        <input
          name="name"
          required
          value={name}
          onChange={(e) => setName(e.target.value)}
          placeholder="e.g. production server"
          autoFocus
        />
      </label>
      <div className="row">
        <label>
          Credit limit (USD, optional)
          <input
            name="limit"
            type="number"
            min="0"
            step="any"
            inputMode="decimal"
            value={limit}
            onChange={(e) => setLimit(e.target.value)}
          />
        </label>
        <label>
          Limit resets
          <LimitResetSelect value={reset} onChange={setReset} disabled={limit.trim() === ''} />
        </label>
      </div>
      <label>
        Expires after (UTC day, optional)
        <input
          name="expires"
          type="date"
          min={todayUtc()}
          value={expires}
          onChange={(e) => setExpires(e.target.value)}
        />
      </label>
      <label className="check">
        <input type="checkbox" checked={includeByok} onChange={(e) => setIncludeByok(e.target.checked)} />
        Count usage on your own provider keys (BYOK) toward the limit
      </label>
      <label className="check">
        <input type="checkbox" checked={management} onChange={(e) => setManagement(e.target.checked)} />
        Management key (manages keys through the API; cannot call models)
      </label>
      <ErrorNotice error={error} />
      <div className="actions">
        <button type="submit" className="primary" disabled={busy} ref={submitFocus.ref}>
          {busy ? 'Creating…' : 'Create key'}
        </button>
        <button type="button" onClick={props.onCancel} disabled={busy}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** The full key, once: read-only, labelled, with a copy button and the warning; it takes the focus (the key selected). */
export function NewKeyNotice(props: { created: CreatedKey; onDone(): void }) {
  const [copied, setCopied] = useState<'no' | 'yes' | 'failed'>('no');
  const keyField = useRef<HTMLInputElement>(null);
  useEffect(() => keyField.current?.focus(), []);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.created.key);
      setCopied('yes');
    } catch {
      setCopied('failed');
    }
  };
  return (
    <section className="panel new-key" aria-labelledby="new-key-title">
      <h2 id="new-key-title">Key “{props.created.data.name}” created</h2>
      <p className="notice notice-warning">Copy this key now and store it safely. It will not be shown again.</p>
      <label>
        API key
        <input ref={keyField} readOnly value={props.created.key} className="mono" onFocus={(e) => e.target.select()} />
      </label>
      <div className="actions">
        <button type="button" className="primary" onClick={() => void copy()}>
          Copy
        </button>
        <button type="button" onClick={props.onDone}>
          Done
        </button>
        <span role="status" className="muted">
          {copied === 'yes'
            ? 'Copied to the clipboard.'
            : copied === 'failed'
              ? 'Copying failed: select the key and copy it by hand.'
              : ''}
        </span>
      </div>
    </section>
  );
}
