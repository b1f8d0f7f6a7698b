/** A key's credit limit as the forms take it: the amount field's text, and the reset window's select. */
import type { LimitReset } from '../api/types';

/** The field's USD amount: null when blank (no limit), an Error when it is not a number of USD ≥ 0. */
export function parseLimit(text: string): number | null | Error {
  if (text.trim() === '') return null;
  const value = Number(text);
  return Number.isFinite(value) && value >= 0
    ? value
    : new Error('The credit limit must be a number of USD, 0 or more');
}

export function LimitResetSelect(props: {
  value: '' | LimitReset;
  onChange(value: '' | LimitReset): void;
  disabled?: boolean;
}) {
  return (
    <select
      name="limit_reset"
      value={props.value}
      onChange={(e) => props.onChange(e.target.value as '' | LimitReset)}
      disabled={props.disabled}
    >
      <option value="">Never (total limit)</option>
      <option value="daily">Every UTC day</option>
      <option value="weekly">Every week (Monday, UTC)</option>
      <option value="monthly">Every month (UTC)</option>
    </select>
  );
}
