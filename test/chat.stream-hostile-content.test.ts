import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatStream, type TestGateway } from './helpers/gateway.js';
import {
  DONE,
  chunk,
  startGatewayWith,
  startScriptedUpstream,
  usageChunk,
  type ScriptedUpstream,
} from './helpers/scripted-upstream.js';

const MESSAGES = [{ role: 'user', content: 'hi' }];
const HOSTILE = [
  'a"b',
  ']}',
  '\\',
  '\\"',
  '\u2028x\u2029',
  '\ud800',
  '\udfff\ud800',
  '\u0000',
  '😀',
  '"],"usage":{"prompt_tokens":9}}',
  '\n\r',
  'data: [DONE]\n\n',
];

let up: ScriptedUpstream;
let gw: TestGateway;
let key: string;

beforeAll(async () => {
  up = await startScriptedUpstream();
  up.scripts.set('hostile', () => [
    { write: chunk({ role: 'assistant', content: '' }) },
    ...HOSTILE.map((c) => ({ write: chunk({ content: c }) })),
    { write: chunk({}, 'stop') },
    { write: usageChunk() },
    { write: DONE },
  ]);
  gw = await startGatewayWith(up, ['hostile']);
  key = (await gw.createKey(await gw.createAccount(10))).key;
});
afterAll(async () => {
  await gw.close();
  await up.close();
});

function content(events: any[]) {
  return events.flatMap((e) => (e.choices ?? []).map((c: any) => c.delta?.content ?? '')).join('');
}

/** Hostile content through the OpenAI template decoder and the relay, end to end. */
describe('relay contract', () => {
  it('relays hostile content exactly', async () => {
    const s = await chatStream(gw, key, { model: 'scripted/hostile', messages: MESSAGES });
    expect(s.status, s.raw).toBe(200);
    expect(content(s.events)).toBe(HOSTILE.join(''));
    expect(s.raw.match(/^data: \[DONE\]$/gm)).toHaveLength(1);
    expect(s.events.filter((e) => e.usage)).toHaveLength(1);
  });
});
