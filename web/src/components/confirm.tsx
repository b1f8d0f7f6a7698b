/**
 * An inline confirmation for destructive actions: a labelled dialog region with the consequence in
 * words. It takes the focus (on Cancel, the safe choice); Escape cancels.
 */
import { useEffect, useId, useRef, useState } from 'react';
import { ErrorNotice } from './error-notice';
import { useFocusReturn } from './use-focus-return';

export function Confirm(props: {
  title: string;
  body: string;
  confirmLabel: string;
  onConfirm(): Promise<void>;
  onCancel(): void;
}) {
  const titleId = useId();
  const bodyId = useId();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const cancelRef = useRef<HTMLButtonElement>(null);
  useEffect(() => cancelRef.current?.focus(), []);
  // The buttons are disabled while the action runs (the focus leaves them): a failure gives it back.
  const confirmFocus = useFocusReturn<HTMLButtonElement>(!busy);
  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await props.onConfirm();
    } catch (failure) {
      confirmFocus.arm();
      setError(failure);
      setBusy(false);
    }
  };
  return (
    <div
      className="confirm"
      role="alertdialog"
      aria-labelledby={titleId}
      aria-describedby={bodyId}
      onKeyDown={(event) => {
        if (event.key === 'Escape' && !busy) {
          event.stopPropagation();
          props.onCancel();
        }
      }}
    >
      <p id={titleId} className="confirm-title">
        {props.title}
      </p>
      <p id={bodyId}>{props.body}</p>
      <ErrorNotice error={error} />
      <div className="actions">
        <button type="button" className="danger" ref={confirmFocus.ref} onClick={() => void confirm()} disabled={busy}>
          {props.confirmLabel}
        </button>
        <button type="button" ref={cancelRef} onClick={props.onCancel} disabled={busy}>
          Cancel
        </button>
      </div>
    </div>
  );
}
