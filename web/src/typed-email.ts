/**
 * The e-mail address last typed on the sign-in or the reset page, so "Forgot your password?" and
 * "Back to sign in" carry it over. Kept in memory only (a reload forgets it): never in the address,
 * where it would reach the history and the access log.
 */
let typed = '';

export function typedEmail(): string {
  return typed;
}

export function rememberTypedEmail(email: string): void {
  typed = email;
}
