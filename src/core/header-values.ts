/**
 * What may travel in an HTTP request header (RFC 9110 §5.1, §5.5), checked where a value enters —
 * the config, an account holder's BYOK key — rather than at the upstream request, where undici
 * refuses it and the refusal would read as the provider's failure.
 */

/** A header name: an RFC 9110 token. */
export const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** A header value: visible characters, spaces and tabs (and obs-text); no line breaks or other controls. */
export const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** A credential sent in a header (`Authorization: Bearer …`, `x-api-key`): printable ASCII without spaces. */
export const CREDENTIAL = /^[\x21-\x7e]+$/;
