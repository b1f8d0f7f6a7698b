/**
 * An upstream 5xx's own text never reaches the caller (docs/api.md §1: never a stack trace or a
 * secret): a failing server may put its stack, addresses or connection strings in its error message.
 * The caller hears the status; a 4xx's message (the caller's own mistake) is still relayed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, chatStream, getJson, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { fixedCostModel } from './helpers/holds.js';
import { sqliteTarget } from './helpers/store-targets.js';
import { capturedLogger } from './helpers/log-capture.js';

const LEAKY = encodeURIComponent('TypeError: x at handler (/srv/app.js:120:7) db=postgres://admin:pw@10.0.0.5/prod');
const MODEL = fixedCostModel('test/leaky-500', `mock@status=500,message=${LEAKY}`);
// A 200 stream whose provider fails on its side with an error event: before any content, and after three tokens.
const EARLY = fixedCostModel('test/leaky-event-early', `mock@behavior=stream_error,breakAfter=0,message=${LEAKY}`);
const LATE = fixedCostModel('test/leaky-event-late', `mock@behavior=stream_error,breakAfter=3,message=${LEAKY}`);
const LEAKED = ['postgres://', 'admin:pw', '/srv/app.js', 'TypeError'];
const HELLO = [{ role: 'user', content: 'hi' }];

describe('an upstream 5xx message', () => {
  let gw: TestGateway;
  let key: string;
  const { logger, lines } = capturedLogger();
  beforeAll(async () => {
    gw = await startTestGateway({ target: sqliteTarget, extraModels: [MODEL, EARLY, LATE], logger });
    key = (await gw.createKey(await gw.createAccount(1))).key;
  });
  afterAll(() => gw.close());

  it('is replaced by its status, in JSON answers and streams', async () => {
    const r = await chat(gw, key, { model: MODEL.id, messages: HELLO });
    expect(r.status).toBe(502);
    expect(r.json.error.message).toBe('Provider returned error: HTTP 500');
    // Nothing was charged, so nothing was recorded: the id the answer named has no generation (docs/api.md).
    const id = r.headers['x-generation-id'] as string;
    expect(id).toMatch(/^gen-/);
    expect((await getJson(gw, `/generation?id=${id}`, key)).status).toBe(404);
    const s = await chatStream(gw, key, { model: MODEL.id, messages: HELLO });
    const text = JSON.stringify(s);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const logged = lines.join('');
    expect(logged).toContain('HTTP 500');
    for (const leaked of LEAKED) {
      expect(r.text).not.toContain(leaked);
      expect(text).not.toContain(leaked);
      expect(logged).not.toContain(leaked);
    }
  });

  it('is replaced in an error event of a 200 stream too, before the first token and after it', async () => {
    for (const model of [EARLY.id, LATE.id]) {
      const r = await chat(gw, key, { model, messages: HELLO });
      expect(r.status, r.text).toBe(502);
      expect(r.json.error.message).toBe('Provider returned error: server error');
      const s = await chatStream(gw, key, { model, messages: HELLO });
      const errors = s.events.filter((e) => e.error !== undefined);
      if (model === EARLY.id) {
        expect(s.status).toBe(502);
        expect(JSON.parse(s.raw).error.message).toBe('Provider returned error: server error');
      } else expect(errors.map((e) => e.error.message)).toEqual(['Provider returned error: server error']);
      for (const leaked of LEAKED) {
        expect(r.text).not.toContain(leaked);
        expect(s.raw).not.toContain(leaked);
      }
    }
  });

  it('a 4xx message is still relayed (the caller can fix the request)', async () => {
    const r = await chat(gw, key, { model: 'test/bad-request', messages: HELLO });
    expect(r.json.error.message).toContain('bad parameter');
  });
});
