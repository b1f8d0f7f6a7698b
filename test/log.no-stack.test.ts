/**
 * No stack trace in the logs: an upstream failing a streamed request before its first byte (a 502
 * the caller gets as an error record) is logged as its code and message, as the non-streamed path
 * logs it — it used to be an error line with the error's stack (file paths of the gateway's code) —
 * and the production logger writes any error without its stack. Written through the production
 * logger (main.ts createLogger) to memory.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';
import { capturedLogger } from './helpers/log-capture.js';

describe('failures in the logs', () => {
  let gw: TestGateway;
  let key: string;
  const { logger, lines } = capturedLogger();
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget, logger });
    key = (await gw.createKey(await gw.createAccount(5))).key;
  });
  afterAll(() => gw?.close());

  it('an upstream failure, streamed or not, is logged without a stack', async () => {
    const streamed = await chatStream(gw, key, {
      model: 'test/server-error',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(streamed.status).toBeGreaterThanOrEqual(500);
    const plain = await chat(gw, key, { model: 'test/server-error', messages: [{ role: 'user', content: 'hi' }] });
    expect(plain.status).toBeGreaterThanOrEqual(500);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const failures = lines.filter((line) => /"level":(40|50)/.test(line));
    expect(failures.length).toBeGreaterThanOrEqual(2);
    expect(lines.filter((line) => /"stack"|\bat [^"]*\(file:|dist\/|src\//.test(line))).toEqual([]);
  });

  it('the production logger writes an error without its stack', () => {
    const { logger: alone, lines: written } = capturedLogger();
    const error = Object.assign(new TypeError('boom'), { code: 'E_BOOM' });
    alone.error({ err: error }, 'something failed');
    alone.flush();
    const line = JSON.parse(written.join('')) as { err: Record<string, unknown> };
    expect(line.err).toMatchObject({ type: 'TypeError', message: 'boom', code: 'E_BOOM' });
    expect(line.err).not.toHaveProperty('stack');
  });
});
