/**
 * The idle budget counts silence between stream events: SSE comment lines (an upstream's keep-alive)
 * carry no event, so an upstream that sends nothing but comments after its first token is given up
 * on like a silent one — the caller gets the in-band timeout and is charged for what it received,
 * instead of waiting as long as the upstream keeps commenting. Comments between events, and one
 * event arriving in pieces slower than the budget allows for the whole, stay fine. So are an upstream
 * writing a line it never ends one byte at a time (a piece re-arms the budget only a few times per
 * event), and one sending empty deltas (chunks that carry nothing are not progress): both kept a
 * stream open for as long as they went on, before a review.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balanceUnits, chat, chatStream, getJson, toUnits, type TestGateway } from './helpers/gateway.js';
import {
  DONE,
  chunk,
  startGatewayWith,
  startScriptedUpstream,
  usageChunk,
  type ScriptedUpstream,
  type Step,
} from './helpers/scripted-upstream.js';

const IDLE_MS = 600;
const KEEP_ALIVE: Step[] = [{ write: ': keep-alive\n\n' }, { wait: 100 }];

let up: ScriptedUpstream;
let gw: TestGateway;
let key: string;
let accountId: string;

beforeAll(async () => {
  up = await startScriptedUpstream();
  // One token, then ~4 s of comments every 100 ms (well past the 600 ms budget), then the rest.
  up.scripts.set('comments-only', () => [
    { write: chunk({ role: 'assistant', content: '' }) },
    { write: chunk({ content: 'one ' }) },
    ...Array.from({ length: 40 }, () => KEEP_ALIVE).flat(),
    { write: chunk({ content: 'never' }) },
    { write: chunk({}, 'stop') + usageChunk() + DONE },
  ]);
  // Tokens 400 ms apart with comments between them: every gap between events is within the budget.
  up.scripts.set('comments-between', () => [
    { write: chunk({ role: 'assistant', content: '' }) },
    ...['one ', 'two ', 'three'].flatMap((content) => [
      { write: chunk({ content }) },
      ...Array.from({ length: 4 }, () => KEEP_ALIVE).flat(),
    ]),
    { write: chunk({}, 'stop') + usageChunk() + DONE },
  ]);
  // One event written in five pieces 300 ms apart: 1.2 s for the event, each piece within the budget.
  const slowEvent = chunk({ content: 'slow event' });
  const pieces = Array.from({ length: 5 }, (_, i) =>
    slowEvent.slice((i * slowEvent.length) / 5, ((i + 1) * slowEvent.length) / 5),
  );
  up.scripts.set('event-in-pieces', () => [
    { write: chunk({ role: 'assistant', content: '' }) },
    { write: chunk({ content: 'one ' }) },
    ...pieces.flatMap((piece, i): Step[] => (i === 0 ? [{ write: piece }] : [{ wait: 300 }, { write: piece }])),
    { write: chunk({}, 'stop') + usageChunk() + DONE },
  ]);
  // One token, then a line it never ends, one byte every 100 ms for 4 s (each read a piece of one event).
  up.scripts.set('trickle', () => [
    { write: chunk({ role: 'assistant', content: '' }) },
    { write: chunk({ content: 'one ' }) },
    { write: 'data: {"x":"' },
    ...Array.from({ length: 40 }, (): Step[] => [{ wait: 100 }, { write: 'A' }]).flat(),
    { write: '"}\n\n' },
    { write: chunk({}, 'stop') + usageChunk() + DONE },
  ]);
  // One token, then empty deltas every 100 ms for 4 s: chunks that carry nothing.
  up.scripts.set('empty-deltas', () => [
    { write: chunk({ role: 'assistant', content: '' }) },
    { write: chunk({ content: 'one ' }) },
    ...Array.from({ length: 40 }, (): Step[] => [{ wait: 100 }, { write: chunk({ content: '' }) }]).flat(),
    { write: chunk({ content: 'never' }) },
    { write: chunk({}, 'stop') + usageChunk() + DONE },
  ]);
  gw = await startGatewayWith(up, ['comments-only', 'comments-between', 'event-in-pieces', 'trickle', 'empty-deltas'], {
    idleMs: IDLE_MS,
  });
  accountId = await gw.createAccount(10);
  key = (await gw.createKey(accountId)).key;
});
afterAll(async () => {
  await gw.close();
  await up.close();
});

const MESSAGES = [{ role: 'user', content: 'hi' }];

function contentOf(events: any[]): string {
  return events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('');
}

describe('upstream keep-alive comments and the idle budget', () => {
  it('gives up on an upstream that sends only comments after its first token (in-band timeout, charged)', async () => {
    const before = await balanceUnits(gw, accountId);
    const s = await chatStream(gw, key, { model: 'scripted/comments-only', messages: MESSAGES });
    expect(s.status).toBe(200);
    const error = s.events.find((e) => e.error !== undefined)?.error;
    expect(error?.code).toBe(408);
    expect(error?.metadata?.error_type).toBe('timeout');
    expect(contentOf(s.events)).toBe('one ');
    expect(s.done).toBe(true);
    // The upstream request was ended before its script ran out (it would have sent 'never').
    expect(up.logs.get('comments-only')!.at(-1)!.finishedWriting).toBe(false);

    const g = await getJson(gw, `/generation?id=${s.headers['x-generation-id']}`, key);
    expect(g.json.data.finish_reason).toBe('error');
    expect(g.json.data.total_cost).toBeGreaterThan(0);
    expect(await balanceUnits(gw, accountId)).toBe(before - toUnits(g.json.data.total_cost));
  }, 15_000);

  it('a non-streamed request read from such an upstream ends with a timeout, not when the comments stop', async () => {
    const before = await balanceUnits(gw, accountId);
    const r = await chat(gw, key, { model: 'scripted/comments-only', messages: MESSAGES });
    expect(r.status).toBe(408);
    expect(r.json.error.metadata.error_type).toBe('timeout');
    expect(up.logs.get('comments-only')!.at(-1)!.finishedWriting).toBe(false);
    // Nothing was answered, so nothing is charged (as for any non-streamed answer that broke).
    expect(await balanceUnits(gw, accountId)).toBe(before);
  }, 15_000);

  for (const model of ['trickle', 'empty-deltas']) {
    it(`gives up on an upstream that keeps the line busy without an answer (${model}): in-band timeout`, async () => {
      const s = await chatStream(gw, key, { model: `scripted/${model}`, messages: MESSAGES });
      expect(s.status).toBe(200);
      expect(s.events.find((e) => e.error !== undefined)?.error?.code).toBe(408);
      expect(contentOf(s.events)).toBe('one ');
      expect(s.done).toBe(true);
      expect(up.logs.get(model)!.at(-1)!.finishedWriting).toBe(false);
    }, 15_000);
  }

  it('completes a stream whose events come within the budget with comments between them', async () => {
    const s = await chatStream(gw, key, { model: 'scripted/comments-between', messages: MESSAGES });
    expect(s.events.filter((e) => e.error !== undefined)).toEqual([]);
    expect(contentOf(s.events)).toBe('one two three');
    expect(s.events.at(-1).usage.completion_tokens).toBe(5);
    expect(s.done).toBe(true);
  }, 15_000);

  it('completes a stream with one event arriving in pieces, each within the budget', async () => {
    const s = await chatStream(gw, key, { model: 'scripted/event-in-pieces', messages: MESSAGES });
    expect(s.events.filter((e) => e.error !== undefined)).toEqual([]);
    expect(contentOf(s.events)).toBe('one slow event');
    expect(s.done).toBe(true);
  }, 15_000);
});
