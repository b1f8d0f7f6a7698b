/** Keys: every key of the account (inference and management) with usage, limits and the actions on it. */
import { useEffect, useRef, useState, type FormEvent, type ReactNode } from 'react';
import { api } from '../api/client';
import type { ApiKey, LimitReset } from '../api/types';
import { announce } from '../components/announcer';
import { focusIfLost } from '../components/focus-lost';
import { Confirm } from '../components/confirm';
import { ErrorNotice } from '../components/error-notice';
import { useFocusReturn } from '../components/use-focus-return';
import { useLoader } from '../components/use-loader';
import { formatDate, formatExpiry, formatLimit, formatUsd } from '../format';
import { KeyCreateForm, NewKeyNotice, type CreatedKey } from './key-create-form';
import { loadKeys } from '../api/keys';
import { LimitResetSelect, parseLimit } from './key-limit';

function statusOf(key: ApiKey, now: number): 'Active' | 'Disabled' | 'Expired' | 'Compromised' {
  if (key.compromised) return 'Compromised';
  if (key.disabled) return 'Disabled';
  if (key.expires_at && Date.parse(key.expires_at) <= now) return 'Expired';
  return 'Active';
}

function limitText(key: ApiKey): string {
  const limit = formatLimit(key.limit, key.limit_reset);
  return key.limit === null ? limit : `${limit}, ${formatUsd(key.limit_remaining)} left`;
}

/**
 * A form in a key's row that PATCHes it: `patch` answers the body (or an Error to show instead);
 * Save and Cancel, the wait and the failure in words.
 */
function KeyPatchForm(props: {
  keyRecord: ApiKey;
  submitLabel: string;
  patch(): Record<string, unknown> | Error;
  onDone(changed: boolean): void;
  children: ReactNode;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  // Pressed, the submit button is disabled while the change runs: a failure gives it the focus back.
  const submitFocus = useFocusReturn<HTMLButtonElement>(!busy);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    const body = props.patch();
    if (body instanceof Error) {
      setError(body);
      return;
    }
    submitFocus.armIfFocused();
    setBusy(true);
    try {
      await api('PATCH', `/keys/${props.keyRecord.hash}`, body);
      props.onDone(true);
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };
  return (
    <form
      className="inline-form"
      onSubmit={(event) => void submit(event)}
      onKeyDown={(event) => {
        if (event.key === 'Escape' && !busy) props.onDone(false);
      }}
    >
      {props.children}
      <div className="actions">
        <button type="submit" className="primary" disabled={busy} ref={submitFocus.ref}>
          {props.submitLabel}
        </button>
        <button type="button" onClick={() => props.onDone(false)} disabled={busy}>
          Cancel
        </button>
      </div>
      <ErrorNotice error={error} />
    </form>
  );
}

function RenameForm(props: { keyRecord: ApiKey; onDone(changed: boolean): void }) {
  const [name, setName] = useState(props.keyRecord.name);
  return (
    <KeyPatchForm {...props} submitLabel="Save name" patch={() => ({ name: name.trim() })}>
      <label>
        New name for {props.keyRecord.name}
        <input required value={name} onChange={(e) => setName(e.target.value)} autoFocus />
      </label>
    </KeyPatchForm>
  );
}

/** A key's credit limit and its reset window: a blank limit removes it. */
function LimitForm(props: { keyRecord: ApiKey; onDone(changed: boolean): void }) {
  const key = props.keyRecord;
  const [limit, setLimit] = useState(key.limit === null ? '' : String(key.limit));
  const [reset, setReset] = useState<'' | LimitReset>(key.limit_reset ?? '');
  const patch = () => {
    const value = parseLimit(limit);
    if (value instanceof Error) return value;
    return { limit: value, limit_reset: value === null || reset === '' ? null : reset };
  };
  return (
    <KeyPatchForm {...props} submitLabel="Save limit" patch={patch}>
      <label>
        Credit limit for {key.name} (USD; blank: no limit)
        <input
          type="number"
          min="0"
          step="any"
          inputMode="decimal"
          value={limit}
          onChange={(e) => setLimit(e.target.value)}
          autoFocus
        />
      </label>
      <label>
        Limit resets
        <LimitResetSelect value={reset} onChange={setReset} />
      </label>
    </KeyPatchForm>
  );
}

type RowMode = 'view' | 'rename' | 'limit' | 'delete';

function KeyRow(props: {
  keyRecord: ApiKey;
  now: number;
  /** This row's delete confirmation is the page's one open (opening another closes this one). */
  deleting: boolean;
  onDeleting(open: boolean): void;
  onChanged(): void;
  onDeleted(): void;
  rowRef(row: HTMLTableRowElement | null): void;
}) {
  const key = props.keyRecord;
  const [mode, setMode] = useState<RowMode>('view');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const status = statusOf(key, props.now);
  // Back from a form or a confirmation, the focus returns to the button that opened it.
  const buttons = {
    rename: useRef<HTMLButtonElement>(null),
    limit: useRef<HTMLButtonElement>(null),
    delete: useRef<HTMLButtonElement>(null),
  };
  const openedFrom = useRef<Exclude<RowMode, 'view'> | null>(null);
  const open = (next: Exclude<RowMode, 'view'>) => {
    openedFrom.current = next;
    setMode(next);
    props.onDeleting(next === 'delete');
  };
  // Another row's confirmation opened: this one closes, and the focus stays where it went.
  useEffect(() => {
    if (mode !== 'delete' || props.deleting) return;
    openedFrom.current = null;
    setMode('view');
  }, [mode, props.deleting]);
  useEffect(() => {
    if (mode !== 'view' || openedFrom.current === null) return;
    buttons[openedFrom.current].current?.focus();
    openedFrom.current = null;
  });

  // Disable/Enable is disabled while its change runs (the focus leaves it): it gets the focus back.
  const toggleFocus = useFocusReturn<HTMLButtonElement>(!busy);
  const toggle = async () => {
    setBusy(true);
    setError(null);
    toggleFocus.arm();
    try {
      await api('PATCH', `/keys/${key.hash}`, { disabled: !key.disabled });
      announce(`Key ${key.name} ${key.disabled ? 'enabled' : 'disabled'}`);
      props.onChanged();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <tr aria-label={`Key ${key.name}`} ref={props.rowRef} tabIndex={-1}>
      <td data-label="Name">
        {mode === 'rename' ? (
          <RenameForm
            keyRecord={key}
            onDone={(changed) => {
              setMode('view');
              if (!changed) return;
              announce('Key renamed');
              props.onChanged();
            }}
          />
        ) : (
          <>
            <span className="key-name">{key.name}</span>
            {key.is_management_key ? <span className="badge badge-management">Management</span> : null}
            {key.app ? <span className="badge">App: {key.app.name}</span> : null}
          </>
        )}
        {/* Under the name rather than a column of its own, for the table to fit a desktop screen. */}
        <div className="mono small muted key-label">{key.label}</div>
      </td>
      <td data-label="Status">
        <span className={`status status-${status.toLowerCase()}`}>{status}</span>
      </td>
      <td data-label="Limit">
        {mode === 'limit' ? (
          <LimitForm
            keyRecord={key}
            onDone={(changed) => {
              setMode('view');
              if (!changed) return;
              announce(`Limit of ${key.name} saved`);
              props.onChanged();
            }}
          />
        ) : (
          limitText(key)
        )}
      </td>
      <td data-label="Usage" className="num">
        {/* One column for the three windows: ten columns did not fit a desktop screen. */}
        <div className="usage-lines">
          <span>{formatUsd(key.usage_daily)} today</span>
          <span>{formatUsd(key.usage_weekly)} this week</span>
          <span>{formatUsd(key.usage_monthly)} this month</span>
        </div>
      </td>
      <td data-label="Created" className="nowrap">
        {formatDate(key.created_at)}
      </td>
      <td data-label="Expires">{key.expires_at ? <Expiry iso={key.expires_at} /> : 'Never'}</td>
      <td data-label="Actions">
        {mode === 'delete' ? (
          <Confirm
            title={`Delete key “${key.name}”?`}
            body="Programs using this key stop working at once. This cannot be undone."
            confirmLabel="Delete key"
            onConfirm={async () => {
              await api('DELETE', `/keys/${key.hash}`);
              announce(`Key ${key.name} deleted`);
              props.onDeleted();
            }}
            onCancel={() => {
              setMode('view');
              props.onDeleting(false);
            }}
          />
        ) : (
          <div className="actions compact key-actions">
            <button
              type="button"
              ref={buttons.rename}
              onClick={() => open('rename')}
              disabled={busy || mode === 'rename'}
              aria-label={`Rename ${key.name}`}
            >
              Rename
            </button>
            {/* A management key calls no model, a compromised one never again: a credit limit would limit nothing. */}
            {key.is_management_key || key.compromised ? null : (
              <button
                type="button"
                ref={buttons.limit}
                onClick={() => open('limit')}
                disabled={busy || mode === 'limit'}
                aria-label={`Change the limit of ${key.name}`}
              >
                Limit
              </button>
            )}
            {key.compromised ? null : (
              <button
                type="button"
                ref={toggleFocus.ref}
                onClick={() => void toggle()}
                disabled={busy}
                aria-label={`${key.disabled ? 'Enable' : 'Disable'} ${key.name}`}
              >
                {key.disabled ? 'Enable' : 'Disable'}
              </button>
            )}
            <button
              type="button"
              className="danger"
              ref={buttons.delete}
              onClick={() => open('delete')}
              disabled={busy}
              aria-label={`Delete ${key.name}`}
            >
              Delete
            </button>
          </div>
        )}
        <ErrorNotice error={error} />
      </td>
    </tr>
  );
}

export function KeysPage() {
  const keys = useLoader(loadKeys, []);
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<CreatedKey | null>(null);
  // One delete confirmation at a time: two open side by side read as one decision about two keys.
  const [deleting, setDeleting] = useState<string | null>(null);
  const now = Date.now();
  // Where the focus goes once the element is there: back to "Create key" when its form or the new
  // key's notice closes; when a row was deleted, to the row that took its place (else the one above,
  // else the heading), so the list stays where it was on the screen (never to the page's body).
  // A deleted row's place is looked up in the list read again after the delete (a neighbour deleted
  // meanwhile, elsewhere, is not in it); the focus goes there only if it is still lost then (the
  // confirmation's buttons are disabled meanwhile) — someone who moved on keeps it — without scrolling.
  const [focusTo, setFocusTo] = useState<'create' | 'heading' | { deleted: string; at: number } | null>(null);
  const createButton = useRef<HTMLButtonElement>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  const rows = useRef(new Map<string, HTMLTableRowElement>());
  useEffect(() => {
    let target: HTMLElement | null = null;
    if (focusTo === 'create') target = createButton.current;
    else if (focusTo === 'heading') target = heading.current;
    else if (focusTo) {
      const list = keys.data;
      if (keys.loading) return;
      if (keys.error || !list) target = heading.current;
      else if (list.some((key) => key.hash === focusTo.deleted)) return;
      else {
        const neighbour = list[focusTo.at] ?? list[focusTo.at - 1];
        target = (neighbour && rows.current.get(neighbour.hash)) ?? heading.current;
      }
    }
    if (!target) return;
    setFocusTo(null);
    if (typeof focusTo === 'object') focusIfLost(target);
    else target.focus();
  });
  const focusAfterDeleting = (hash: string) => {
    const at = (keys.data ?? []).findIndex((key) => key.hash === hash);
    setFocusTo({ deleted: hash, at: Math.max(0, at) });
  };

  return (
    <section>
      <div className="page-title">
        <h1 ref={heading} tabIndex={-1}>
          API keys
        </h1>
        {!creating && !created ? (
          <button type="button" className="primary" ref={createButton} onClick={() => setCreating(true)}>
            Create key
          </button>
        ) : null}
      </div>
      <p className="muted">
        Inference keys call models at <span className="mono">/api/v1/chat/completions</span>; management keys manage
        keys through the API. Usage windows are UTC.
      </p>
      {created ? (
        <NewKeyNotice
          created={created}
          onDone={() => {
            setCreated(null);
            setFocusTo('create');
          }}
        />
      ) : null}
      {creating ? (
        <KeyCreateForm
          onCreated={(result) => {
            setCreating(false);
            setCreated(result);
            keys.reload();
          }}
          onCancel={() => {
            setCreating(false);
            setFocusTo('create');
          }}
        />
      ) : null}
      <ErrorNotice error={keys.error} title="Could not load your keys" onRetry={keys.reload} />
      {keys.data === null ? (
        keys.loading ? (
          <p className="muted">Loading keys…</p>
        ) : null
      ) : keys.data.length === 0 ? (
        <p className="empty">You have no keys yet. Create one to call models.</p>
      ) : (
        <div className="table-scroll">
          <table className="data-table cards">
            <caption className="visually-hidden">Your API keys</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Limit</th>
                <th scope="col" className="num">
                  Usage
                </th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {keys.data.map((key) => (
                <KeyRow
                  key={key.hash}
                  keyRecord={key}
                  now={now}
                  deleting={deleting === key.hash}
                  onDeleting={(open) =>
                    setDeleting((current) => (open ? key.hash : current === key.hash ? null : current))
                  }
                  onChanged={keys.reload}
                  onDeleted={() => {
                    focusAfterDeleting(key.hash);
                    keys.reload();
                  }}
                  rowRef={(row) => {
                    if (row) rows.current.set(key.hash, row);
                    else rows.current.delete(key.hash);
                  }}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/**
 * An expiry: its day, and its time when it is not the day's end, which wraps under the day where the
 * column is narrow. One element: the phone layout spreads a cell's children apart.
 */
function Expiry(props: { iso: string }) {
  const [day, ...time] = formatExpiry(props.iso).split(' ');
  return (
    <span>
      <span className="unbroken">{day}</span>
      {time.length > 0 ? ' ' : null}
      {time.length > 0 ? <span className="unbroken">{time.join(' ')}</span> : null}
    </span>
  );
}
