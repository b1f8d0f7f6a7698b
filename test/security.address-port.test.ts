/**
 * Behind a proxy that writes the client's source port into X-Forwarded-For (Azure Application
 * Gateway: `203.0.113.7:50123`, `[2001:db8::1]:50123`), the budgets count the address, not the
 * connection: a fresh source port per guess buys no more guesses at one account.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { call, expectError } from './helpers/api.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { createHolder } from './helpers/session.js';
import { sqliteTarget } from './helpers/store-targets.js';

describe('client addresses with a source port', () => {
  describe('sign-in behind a proxy that appends the port', () => {
    let gw: TestGateway;
    beforeAll(async () => {
      gw = await startTestGateway({
        target: sqliteTarget,
        configure: (file) => {
          (file.server as Record<string, unknown>).trust_proxy = true;
        },
      });
    });
    afterAll(() => gw.close());

    it('a fresh source port per guess does not buy more guesses at one account', async () => {
      const holder = await createHolder(gw);
      const attempt = (port: number) =>
        call(gw, 'POST', '/session', {
          json: { email: holder.email, password: `wrong password ${port}` },
          headers: { 'x-forwarded-for': `198.51.100.66:${port}` },
        });
      for (let port = 50001; port <= 50005; port++) expectError(await attempt(port), 401);
      expectError(await attempt(50006), 429);
    }, 60_000);
  });
});
