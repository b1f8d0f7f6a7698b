/**
 * Issue 13: an edge guard that protects without throttling health. With the defaults, one client at
 * the gateway's full rate gets no 429; under overload, a flood from one address beside a normal client
 * is refused (429, `limit_source: edge`) while the normal client keeps getting 200. Two client
 * addresses on loopback: 127.0.0.1 and 127.0.0.2 (Linux routes all of 127/8 to lo).
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import type { Agent } from 'undici';
import { Pool, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { sqliteTarget } from './helpers/store-targets.js';

const BODY = JSON.stringify({ model: 'test/chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });

async function send(dispatcher: Agent | Pool, url: string, key: string): Promise<{ status: number; source?: string }> {
  const response = await request(`${url}/api/v1/chat/completions`, {
    method: 'POST',
    dispatcher,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: BODY,
  });
  const json = (await response.body.json()) as { error?: { metadata?: { limit_source?: string } } };
  return {
    status: response.statusCode,
    ...(json.error?.metadata?.limit_source ? { source: json.error.metadata.limit_source } : {}),
  };
}

/** A gateway with the shipped edge guard (the test harness turns it off) and a funded key. */
async function withEdgeDefaults(): Promise<{ gw: TestGateway; key: string }> {
  const gw = await startTestGateway({
    target: sqliteTarget,
    configure: (file) => ((file.limits as Record<string, unknown>).edge = {}),
  });
  return { gw, key: (await gw.createKey(await gw.createAccount(1000))).key };
}

describe('edge guard defaults: no per-address cap while the gateway has capacity', () => {
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => ({ gw, key } = await withEdgeDefaults()), 30_000);
  afterAll(async () => gw?.close());

  it('one client at full rate (well past the old 200-burst / 100 per second) gets no 429', async () => {
    const pool = new Pool(gw.url, { connections: 50, pipelining: 1 });
    try {
      const statuses = new Map<number, number>();
      let next = 0;
      const TOTAL = 1_500;
      await Promise.all(
        Array.from({ length: 50 }, async () => {
          while (next < TOTAL) {
            next++;
            const { status } = await send(pool, gw.url, key);
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
          }
        }),
      );
      expect(Object.fromEntries(statuses)).toEqual({ 200: TOTAL });
    } finally {
      await pool.close();
    }
  }, 120_000);
});

describe('edge guard under overload: the flooding address is shed, the normal client is served', () => {
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => {
    gw = await startTestGateway({
      target: sqliteTarget,
      extraModels: [
        {
          id: 'test/slowish',
          name: 'slowish',
          context_length: 8192,
          endpoints: [
            { provider: 'mock', model: 'mock@latency=150', pricing: { prompt: '0.000001', completion: '0.000002' } },
          ],
        },
      ],
      // A tiny in-flight threshold stands for an overloaded process.
      configure: (file) => ((file.limits as Record<string, unknown>).edge = { overload: { max_in_flight: 10 } }),
    });
    key = (await gw.createKey(await gw.createAccount(1000))).key;
  }, 30_000);
  afterAll(async () => gw?.close());

  it('keeps the normal client at 200 while the flood from another address gets 429 from the edge', async () => {
    const { normalStatuses, floodRefusals } = await floodBeside(gw.url, key, BODY.replace('test/chat', 'test/slowish'));
    expect(normalStatuses).toEqual(Array(15).fill(200));
    expect(floodRefusals.length).toBeGreaterThan(0);
    expect(floodRefusals[0]).toMatchObject({
      status: 429,
      meta: { limit_source: 'edge', error_type: 'rate_limit_exceeded' },
      retryAfter: '1',
    });
  }, 120_000);
});

describe('edge guard defaults: a flood that saturates the process is shed, however short each turn of its loop', () => {
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => ({ gw, key } = await withEdgeDefaults()), 30_000);
  afterAll(async () => gw?.close());

  it('the busy loop (utilization past 0.9) is pressure: the flood gets 429s, the normal client none', async () => {
    // Instant answers: the loop's delay stays short, but it is never idle (outside check: a normal
    // client's answers took 40 times longer while the delay stayed under its threshold).
    const { normalStatuses, floodRefusals } = await floodBeside(gw.url, key, BODY);
    expect(normalStatuses).toEqual(Array(15).fill(200));
    expect(floodRefusals.length).toBeGreaterThan(0);
  }, 120_000);
});

interface Answer {
  status: number;
  meta?: { limit_source?: string; error_type?: string };
  retryAfter?: string | string[];
}

/**
 * 64 workers flooding from 127.0.0.2 and, once the flood is under way, a normal client at 127.0.0.1
 * sending 15 requests one at a time. node:http, because it binds the client's source address.
 */
async function floodBeside(
  url: string,
  key: string,
  body: string,
): Promise<{ normalStatuses: number[]; floodRefusals: Answer[] }> {
  const flood = new HttpAgent({ keepAlive: true, maxSockets: 64 });
  const normal = new HttpAgent({ keepAlive: true, maxSockets: 1 });
  const { port } = new URL(url);
  const post = (agent: HttpAgent, localAddress: string) =>
    new Promise<Answer>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: Number(port),
          path: '/api/v1/chat/completions',
          method: 'POST',
          agent,
          localAddress,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => {
            const json = JSON.parse(text) as { error?: { metadata?: { limit_source?: string; error_type?: string } } };
            resolve({
              status: res.statusCode ?? 0,
              ...(json.error?.metadata ? { meta: json.error.metadata } : {}),
              ...(res.headers['retry-after'] ? { retryAfter: res.headers['retry-after'] } : {}),
            });
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  let flooding = true;
  let floodAnswers = 0;
  const floodRefusals: Answer[] = [];
  const floodWorkers = Array.from({ length: 64 }, async () => {
    while (flooding) {
      const r = await post(flood, '127.0.0.2');
      floodAnswers++;
      if (r.status === 429) floodRefusals.push(r);
    }
  });
  const normalStatuses: number[] = [];
  try {
    while (floodAnswers < 200) await new Promise((resolve) => setTimeout(resolve, 20));
    for (let i = 0; i < 15; i++) normalStatuses.push((await post(normal, '127.0.0.1')).status);
  } finally {
    flooding = false;
    await Promise.all(floodWorkers);
    flood.destroy();
    normal.destroy();
  }
  return { normalStatuses, floodRefusals };
}
