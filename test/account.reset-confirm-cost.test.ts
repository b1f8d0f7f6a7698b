/**
 * `POST /api/v1/password-reset/confirm` needs no credentials, so an unknown, used or expired token is
 * refused (400) before any password hash is derived: a flood of made-up tokens costs a lookup each,
 * not a scrypt (32 MiB on the thread pool that also serves sign-in and the charge journal). Counted
 * with a spy on hashPassword — no timing involved.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type * as PasswordModule from '../src/auth/password.js';

const counter = vi.hoisted(() => ({ hashes: 0 }));
vi.mock('../src/auth/password.js', async (importOriginal) => {
  const original = await importOriginal<typeof PasswordModule>();
  return {
    ...original,
    hashPassword: async (password: string) => {
      counter.hashes++;
      return original.hashPassword(password);
    },
  };
});

import { call, expectError } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

describe('made-up reset tokens', { timeout: 60_000 }, () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget });
  });
  afterAll(() => gw.close());

  it('10 confirms with made-up tokens: all 400, and no password hash derived for any of them', async () => {
    counter.hashes = 0;
    for (let i = 0; i < 10; i++) {
      const token = `${String(i).padStart(2, '0')}${'A'.repeat(41)}`;
      expectError(
        await call(gw, 'POST', '/password-reset/confirm', {
          json: { token, new_password: 'any ten characters' },
        }),
        400,
        /invalid, was already used or has expired/,
      );
    }
    expect(counter.hashes, 'scrypt runs spent on tokens that do not exist').toBe(0);
  });
});
