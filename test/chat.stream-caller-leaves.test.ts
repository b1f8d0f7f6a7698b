import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForGeneration, getJson, balanceUnits, toUnits, type TestGateway } from './helpers/gateway.js';
import {
  DONE,
  chunk,
  startGatewayWith,
  startScriptedUpstream,
  streamAndLeave,
  usageChunk,
  type ScriptedUpstream,
} from './helpers/scripted-upstream.js';

let up: ScriptedUpstream;
let gw: TestGateway;
let key: string;
let accountId: string;

beforeAll(async () => {
  up = await startScriptedUpstream();
  up.scripts.set('pause', () => [
    { write: chunk({ role: 'assistant', content: '' }) },
    { write: chunk({ content: 'one ' }) },
    { write: chunk({ content: 'two ' }) },
    { wait: 4000 },
    { write: chunk({ content: 'three' }) },
    { write: chunk({}, 'stop') + usageChunk() + DONE },
  ]);
  gw = await startGatewayWith(up, ['pause']);
  accountId = await gw.createAccount(10);
  key = (await gw.createKey(accountId)).key;
});
afterAll(async () => {
  await gw.close();
  await up.close();
});

/** The caller leaves while the upstream sends nothing (no next chunk to notice it by). */
describe('caller leaves / stalls', () => {
  it('a caller who leaves while the upstream is quiet: upstream aborted, charged once', async () => {
    const before = await balanceUnits(gw, accountId);
    const id = await streamAndLeave(gw, key, 'scripted/pause', 'two ', 200);
    const g = await waitForGeneration(gw, id, key, 8000);
    expect(g.status).toBe(200);
    expect(g.json.data.cancelled).toBe(true);
    const log = up.logs.get('pause')!.at(-1)!;
    expect(log.closedAt).not.toBeNull(); // the upstream request was ended, not left to run its course
    await new Promise((r) => setTimeout(r, 4500));
    const again = await getJson(gw, `/generation?id=${id}`, key);
    expect(again.json.data.total_cost).toBe(g.json.data.total_cost);
    expect(await balanceUnits(gw, accountId)).toBe(before - toUnits(g.json.data.total_cost));
  }, 20_000);
});
