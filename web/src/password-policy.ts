/**
 * The password policy as the server checks it (src/auth/password.ts): 10 to 256 characters, counted
 * as Unicode code points — not as the browser's `minLength`/`maxLength` count them (UTF-16 units), and
 * never cut to fit: a field that silently dropped what was typed past its limit set a password the
 * holder did not know.
 */
export const MIN_PASSWORD = 10;
export const MAX_PASSWORD = 256;

/** Null when the password fits the policy, else the message to show. */
export function passwordProblem(password: string): string | null {
  const length = [...password].length;
  if (length < MIN_PASSWORD || length > MAX_PASSWORD)
    return `The new password must be ${MIN_PASSWORD} to ${MAX_PASSWORD} characters long`;
  return null;
}

/** Null when a new password fits the policy and was typed the same twice, else the message to show. */
export function newPasswordProblem(password: string, repeat: string): string | null {
  return passwordProblem(password) ?? (password === repeat ? null : 'The two passwords differ.');
}
