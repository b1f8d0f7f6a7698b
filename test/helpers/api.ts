/**
 * Calls to a test gateway (through Fastify's inject) and wire-contract assertions shared by the `api.*` integration suites.
 */
import { expect } from 'vitest';
import type { TestGateway } from './gateway.js';

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT';

export interface CallOptions {
  /** Sent as `Authorization: Bearer <key>`. */
  key?: string;
  /** Serialized as JSON with `content-type: application/json`. */
  json?: unknown;
  /** Sent as is (with the given headers); overrides `json`. */
  raw?: string | Buffer;
  headers?: Record<string, string>;
}

export interface CallResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

/** Every response body seen through `call`, so suites can check "never a stack trace, never a secret" at the end. */
export const seenBodies: string[] = [];

/** One request to `gw.api + path` (`/api/v1` + path). */
export async function call(
  gw: TestGateway,
  method: Method,
  path: string,
  options: CallOptions = {},
): Promise<CallResult> {
  const headers: Record<string, string> = {
    ...(options.key === undefined ? {} : { authorization: `Bearer ${options.key}` }),
  };
  let body: string | Buffer | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] = 'application/json';
  }
  Object.assign(headers, options.headers);
  // No socket is needed to read an answer: Fastify's inject runs the same hooks, parsers and routes.
  // Suites about the wire itself (connections, partial bodies) use helpers/raw-http.ts.
  const response = await gw.gateway.app.inject({
    method,
    url: `/api/v1${path}`,
    // The Host a client of the listening gateway sends (the Origin checks compare with it).
    headers: { host: new URL(gw.url).host, ...headers },
    ...(body === undefined ? {} : { payload: body }),
  });
  const text = response.body;
  seenBodies.push(text);
  let json: any = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  const answered = Object.fromEntries(
    Object.entries(response.headers).map(([name, value]) => [name, typeof value === 'number' ? String(value) : value]),
  );
  return { status: response.statusCode, headers: answered, text, json };
}

/** The error record of docs/api.md: `{ error: { code: <int = status>, message, metadata? } }`, JSON, no leak. */
export function expectError(
  result: { status: number; headers: Record<string, string | string[] | undefined>; text: string },
  status: number,
  message?: string | RegExp,
): any {
  expect(result.status, result.text).toBe(status);
  expect(String(result.headers['content-type'])).toMatch(/^application\/json/);
  const body = JSON.parse(result.text);
  expect(Object.keys(body)).toEqual(['error']);
  expect(Number.isInteger(body.error.code)).toBe(true);
  expect(body.error.code).toBe(status);
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message.length).toBeGreaterThan(0);
  for (const field of Object.keys(body.error)) expect(['code', 'message', 'metadata']).toContain(field);
  if ('metadata' in body.error)
    expect(
      typeof body.error.metadata === 'object' && body.error.metadata !== null && !Array.isArray(body.error.metadata),
    ).toBe(true);
  if (typeof message === 'string') expect(body.error.message).toBe(message);
  else if (message) expect(body.error.message).toMatch(message);
  expectNoLeak(result.text);
  return body.error;
}

/** No stack frames, no source paths, no upstream provider key. */
export function expectNoLeak(text: string): void {
  expect(text).not.toMatch(/\n\s*at /);
  expect(text).not.toMatch(/\bat [\w.<>$]+ \(/);
  expect(text).not.toMatch(/node:internal|node_modules|\.ts:\d+/);
  expect(text).not.toContain('upstream-secret-key');
}

/** Asserts the type of every listed field, and that each is present (a `null`-able field must still be there). */
export function expectFields(object: Record<string, unknown>, spec: Record<string, FieldType>): void {
  for (const [field, type] of Object.entries(spec)) {
    expect(object, `field ${field}`).toHaveProperty([field]);
    const value = object[field];
    const ok = matches(value, type);
    expect(ok, `field ${field} = ${JSON.stringify(value)} is not ${type}`).toBe(true);
  }
}

export type FieldType =
  | 'string'
  | 'number'
  | 'int'
  | 'boolean'
  | 'object'
  | 'array'
  | 'null'
  | 'string|null'
  | 'number|null'
  | 'int|null'
  | 'boolean|null'
  | 'object|null'
  | 'array|null'
  | 'any';

function matches(value: unknown, type: FieldType): boolean {
  if (type === 'any') return true;
  return type.split('|').some((t) => {
    switch (t) {
      case 'null':
        return value === null;
      case 'string':
        return typeof value === 'string';
      case 'number':
        return typeof value === 'number' && Number.isFinite(value);
      case 'int':
        return Number.isInteger(value);
      case 'boolean':
        return typeof value === 'boolean';
      case 'array':
        return Array.isArray(value);
      case 'object':
        return typeof value === 'object' && value !== null && !Array.isArray(value);
      default:
        return false;
    }
  });
}

/** USD (JSON number) → integer nano-USD units, for exact money comparisons. */
export function units(usd: number): number {
  return Math.round(usd * 1e9);
}

export const HELLO = [{ role: 'user', content: 'hello' }];

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
