/**
 * The built `tollgate serve` process: without TOLLGATE_SMTP_URL the boot log says mail is not being
 * sent and messages wait in the outbox; with it, the composition root's sender delivers them to a
 * real SMTP server on loopback, and SIGTERM stops it cleanly.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce, startServe } from './helpers/process.js';
import { startInbox } from './helpers/smtp-inbox.js';

const ADMIN = 'process-admin-token-0123456789';

async function admin(url: string, method: 'GET' | 'POST', path: string, body?: unknown) {
  const response = await request(`${url}/api/v1/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: response.statusCode, json: (await response.body.json()) as any };
}

describe('mail in the tollgate serve process', { timeout: 90_000 }, () => {
  let dir: string;
  beforeAll(async () => {
    await buildOnce();
    dir = await mkdtemp(join(tmpdir(), 'tollgate-mail-proc-'));
  }, 200_000);
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('records mail without SMTP (and says so at boot), then sends it once SMTP is configured', async () => {
    const dataDir = join(dir, 'data');
    const first = await startServe({
      TOLLGATE_DATA_DIR: dataDir,
      TOLLGATE_ADMIN_TOKEN: ADMIN,
      TOLLGATE_LOG_LEVEL: 'info',
    });
    let key: string;
    try {
      // pino writes asynchronously: the line may follow the banner.
      for (let i = 0; i < 50 && !first.stdout().includes('mail is NOT being sent'); i++)
        await new Promise((r) => setTimeout(r, 100));
      expect(first.stdout()).toMatch(/mail is NOT being sent: TOLLGATE_SMTP_URL is not set/);
      key = /sk-tg-v1-[0-9a-f]{64}/.exec(first.stdout())![0];
      const hash = createHash('sha256').update(key).digest('hex');
      expect((await admin(first.url, 'POST', `/keys/${hash}/compromised`, { reason: 'test' })).status).toBe(200);
      const outbox = await admin(first.url, 'GET', '/outbox');
      expect(outbox.json.sending).toBe(false);
      expect(outbox.json.data).toHaveLength(1);
      expect(outbox.json.data[0]).toMatchObject({
        kind: 'key_compromised',
        to: 'demo@tollgate.local',
        status: 'pending',
        attempts: 0,
      });
    } finally {
      expect(await first.stop()).toBe(0);
    }

    const inbox = await startInbox();
    const second = await startServe({
      TOLLGATE_DATA_DIR: dataDir,
      TOLLGATE_ADMIN_TOKEN: ADMIN,
      TOLLGATE_LOG_LEVEL: 'info',
      TOLLGATE_SMTP_URL: `smtp://user:secret-pass@127.0.0.1:${inbox.port}`,
    });
    try {
      const [mail] = await inbox.waitFor(1);
      expect(mail!.to).toEqual(['demo@tollgate.local']);
      expect(mail!.decoded).not.toContain(key!.slice(9));
      expect(second.stdout()).toMatch(/mail: sending the outbox through SMTP/);
      expect(second.stdout()).not.toContain('secret-pass');
      for (let i = 0; i < 50 && (await admin(second.url, 'GET', '/outbox')).json.data.length > 0; i++)
        await new Promise((r) => setTimeout(r, 100));
      expect((await admin(second.url, 'GET', '/outbox')).json.data).toEqual([]);
    } finally {
      expect(await second.stop()).toBe(0);
      await inbox.close();
    }
    expect(inbox.messages).toHaveLength(1);
  });
});
