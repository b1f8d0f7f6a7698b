/**
 * Config values that go into upstream request headers. A value a header cannot carry is a boot
 * error here, not a request that undici refuses on every attempt (which would read as the
 * provider's connection failure and trip its breaker).
 */
import { z } from 'zod';
import { CREDENTIAL, HEADER_NAME, HEADER_VALUE } from '../core/header-values.js';

/**
 * An upstream API key. Surrounding whitespace is dropped (the trailing newline of a key read from a
 * secret file, the classic); a space or control character inside is refused. Empty: no key.
 */
export const credentialSchema = z
  .string()
  .trim()
  .refine(
    (key) => key === '' || CREDENTIAL.test(key),
    'must be printable ASCII without spaces or control characters (it is sent in a request header)',
  );

/** Extra request headers: names are HTTP tokens, values have no line breaks or other control characters. */
export const headersSchema = z.record(
  z.string().regex(HEADER_NAME, "header names are HTTP tokens (letters, digits and !#$%&'*+-.^_`|~)"),
  z.string().regex(HEADER_VALUE, 'header values may not contain line breaks or other control characters'),
);
