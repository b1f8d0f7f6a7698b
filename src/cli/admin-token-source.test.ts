import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN_FLAG_WARNING, adminTokenSource } from './admin-token-source.js';

function fakeIo(tty: boolean) {
  const stdin = Object.assign(new PassThrough(), { isTTY: tty }) as unknown as NodeJS.ReadStream;
  let err = '';
  const stderr = new PassThrough();
  stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return { io: { stdin, stderr }, stdin: stdin as unknown as PassThrough, stderr: () => err };
}

describe('the CLI admin token source', () => {
  it('prefers the environment and prints nothing', async () => {
    const { io, stderr } = fakeIo(false);
    expect(await adminTokenSource(undefined, { TOLLGATE_ADMIN_TOKEN: 'from-the-environment' }, io)()).toBe(
      'from-the-environment',
    );
    expect(stderr()).toBe('');
  });

  it('still takes --admin-token, with a warning on stderr that it is visible to other users', async () => {
    const { io, stderr } = fakeIo(false);
    const source = adminTokenSource('from-the-flag-0123', { TOLLGATE_ADMIN_TOKEN: 'env' }, io);
    expect(await source()).toBe('from-the-flag-0123');
    expect(await source()).toBe('from-the-flag-0123');
    expect(stderr()).toBe(ADMIN_TOKEN_FLAG_WARNING);
    expect(stderr()).toContain('TOLLGATE_ADMIN_TOKEN');
  });

  it('prompts on a terminal without echoing what is typed', async () => {
    const { io, stdin, stderr } = fakeIo(true);
    const pending = adminTokenSource(undefined, {}, io)();
    stdin.write('typed-secret-token-0001\n');
    expect(await pending).toBe('typed-secret-token-0001');
    expect(stderr()).toContain('Admin token: ');
    expect(stderr()).not.toContain('typed-secret');
  });

  it('without a terminal, environment or flag: no token (the command then explains how to give one)', async () => {
    const { io } = fakeIo(false);
    expect(await adminTokenSource(undefined, {}, io)()).toBeUndefined();
  });
});
