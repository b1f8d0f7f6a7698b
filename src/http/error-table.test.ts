import { describe, expect, it } from 'vitest';
import { ERROR_CODES, TollgateError } from '../core/errors.js';
import { ERROR_STATUS, renderError } from './error-table.js';

describe('error table', () => {
  it('maps every error code to a 4xx/5xx status, and nothing else', () => {
    for (const code of ERROR_CODES) {
      const status = ERROR_STATUS[code];
      expect(status, code).toBeGreaterThanOrEqual(400);
      expect(status, code).toBeLessThan(600);
    }
    expect(Object.keys(ERROR_STATUS).sort()).toEqual([...ERROR_CODES].sort());
  });

  it('renders the error record with code = status', () => {
    const rendered = renderError(
      new TollgateError('billing.insufficient_credits', 'Insufficient credits', { metadata: { a: 1 } }),
    );
    expect(rendered.status).toBe(402);
    expect(rendered.body).toEqual({ error: { code: 402, message: 'Insufficient credits', metadata: { a: 1 } } });
  });

  it('treats every text in the metadata as the message: keys redacted, echoed input cut at 1,000 characters', () => {
    const key = `sk-tg-v1-${'ab'.repeat(32)}`;
    const long = 'm'.repeat(5_000);
    const rendered = renderError(
      new TollgateError('request.invalid_body', `allowed_models: "${key}" is not a valid model ID`, {
        metadata: { field: 'allowed_models', unknown: [key, long], nested: { email: `${key}@example.com`, n: 3 } },
      }),
    );
    const text = JSON.stringify(rendered.body);
    expect(text).not.toContain(key.slice(9, 30));
    expect(rendered.body.error.metadata).toEqual({
      field: 'allowed_models',
      unknown: ['[redacted]', `${'m'.repeat(1_000)}…`],
      nested: { email: '[redacted]@example.com', n: 3 },
    });
  });

  it('hides unexpected errors behind a generic 500', () => {
    const rendered = renderError(new Error('secret connection string postgres://u:p@h'));
    expect(rendered.status).toBe(500);
    expect(JSON.stringify(rendered.body)).not.toContain('postgres');
  });

  it("passes through an upstream 4xx status for the caller's own fault", () => {
    const rendered = renderError(new TollgateError('upstream.request_rejected', 'bad', { status: 422 }));
    expect(rendered.status).toBe(422);
    expect(rendered.body.error.code).toBe(422);
  });
});
