/** Apps: the OAuth authorizations of the account (each one a key issued to an app), with revoke. */
import { useRef, useState } from 'react';
import { api } from '../api/client';
import type { AppAuthorization } from '../api/types';
import { announce } from '../components/announcer';
import { Confirm } from '../components/confirm';
import { ErrorNotice } from '../components/error-notice';
import { useFocusReturn } from '../components/use-focus-return';
import { useLoader } from '../components/use-loader';
import { formatDate, formatLimit, formatTime } from '../format';

/** As the Keys page says it of the same key: an expired app key no longer works. */
function statusOf(a: AppAuthorization, now: number): 'Active' | 'Disabled' | 'Expired' {
  if (a.disabled) return 'Disabled';
  if (a.expires_at && Date.parse(a.expires_at) <= now) return 'Expired';
  return 'Active';
}

function AppRow(props: {
  authorization: AppAuthorization;
  /** This row's revoke confirmation is the page's one open (opening another closes this one). */
  confirming: boolean;
  onConfirming(open: boolean): void;
  onRevoked(): void;
  /** How many other authorizations (keys) the account gave the same app: each approval makes one. */
  others: number;
}) {
  const a = props.authorization;
  const { confirming, onConfirming: setConfirming, others } = props;
  const name = a.app.name || a.app.origin;
  // Two rows of one app differ by their key: its rows and buttons are named by it then.
  const named = others > 0 ? `${name} (key ${a.key_label})` : name;
  // A confirmation closed without revoking gives the focus back to the button that opened it.
  const revokeFocus = useFocusReturn<HTMLButtonElement>(!confirming);
  return (
    <tr aria-label={`App ${named}`}>
      <td data-label="App">
        <span className="key-name">{name}</span>
        {name !== a.app.origin ? <div className="muted small key-name-detail">{a.app.origin}</div> : null}
      </td>
      <td data-label="Key" className="mono">
        <span className="masked-key">{a.key_label}</span>
      </td>
      <td data-label="Limit">{formatLimit(a.limit, a.limit_reset)}</td>
      <td data-label="Created" className="nowrap">
        {formatDate(a.created_at)}
      </td>
      <td data-label="Expires">{a.expires_at ? formatTime(a.expires_at) : 'Never'}</td>
      <td data-label="Status">{statusOf(a, Date.now())}</td>
      <td data-label="Actions">
        {confirming ? (
          <Confirm
            title={others > 0 ? `Revoke this key of ${name}?` : `Revoke access for ${name}?`}
            body={
              others > 0
                ? `Its key ${a.key_label} is deleted. The app holds ${others === 1 ? 'another key' : `${others} other keys`} from ${others === 1 ? 'another approval' : 'other approvals'}: ${others === 1 ? 'it keeps' : 'they keep'} working until revoked too.`
                : 'Its key is deleted and the app can no longer use your credits.'
            }
            confirmLabel="Revoke access"
            onConfirm={async () => {
              await api('DELETE', `/apps/${encodeURIComponent(a.id)}`);
              announce(`Access for ${name} revoked`);
              props.onRevoked();
            }}
            onCancel={() => {
              revokeFocus.arm();
              setConfirming(false);
            }}
          />
        ) : (
          <button
            type="button"
            className="danger"
            ref={revokeFocus.ref}
            onClick={() => setConfirming(true)}
            aria-label={`Revoke ${named}`}
          >
            Revoke
          </button>
        )}
      </td>
    </tr>
  );
}

export function AppsPage() {
  const apps = useLoader(() => api<{ data: AppAuthorization[] }>('GET', '/apps'), []);
  // One revoke confirmation at a time, as on the Keys page.
  const [revoking, setRevoking] = useState<string | null>(null);
  // The revoked app's row (and the focus in it) goes: the focus moves to the heading, not the page's body.
  const heading = useRef<HTMLHeadingElement>(null);
  return (
    <section>
      <h1 ref={heading} tabIndex={-1}>
        Apps
      </h1>
      <p className="muted">Apps you approved through OAuth. Each holds its own key drawing on your credits.</p>
      <ErrorNotice error={apps.error} title="Could not load your apps" onRetry={apps.reload} />
      {apps.data === null ? (
        apps.loading ? (
          <p className="muted">Loading…</p>
        ) : null
      ) : apps.data.data.length === 0 ? (
        <p className="empty">You have not authorized any app.</p>
      ) : (
        <div className="table-scroll">
          <table className="data-table cards">
            <caption className="visually-hidden">Authorized apps</caption>
            <thead>
              <tr>
                <th scope="col">App</th>
                <th scope="col">Key</th>
                <th scope="col">Limit</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">Status</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {apps.data.data.map((a, _, all) => (
                <AppRow
                  key={a.id}
                  authorization={a}
                  others={all.filter((other) => other.app.id === a.app.id).length - 1}
                  confirming={revoking === a.id}
                  onConfirming={(open) => setRevoking((current) => (open ? a.id : current === a.id ? null : current))}
                  onRevoked={() => {
                    heading.current?.focus();
                    apps.reload();
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
