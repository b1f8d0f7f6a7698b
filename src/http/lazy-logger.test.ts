import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { lazyChild } from './lazy-logger.js';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const root = pino({ level }, stream);
  let children = 0;
  const child = root.child.bind(root);
  root.child = ((...args: Parameters<typeof child>) => (children++, child(...args))) as typeof root.child;
  return { root, lines, children: () => children };
}

describe('lazy child loggers', () => {
  it('build no pino child while nothing is logged at an enabled level', () => {
    const { root, lines, children } = capture('info');
    const log = lazyChild(lazyChild(root, { reqId: 'r1' }), { key: 'k1' });
    log.debug({ a: 1 }, 'not enabled');
    log.trace('not enabled either');
    expect(children()).toBe(0);
    expect(lines).toEqual([]);
    expect(log.level).toBe('info');
  });

  it('log with every binding of the chain, building each child once', async () => {
    const { root, lines, children } = capture('info');
    const log = lazyChild(lazyChild(root, { reqId: 'r1' }), { key: 'k1' });
    log.info({ a: 1 }, 'first');
    log.warn('second');
    await new Promise((resolve) => setImmediate(resolve));
    expect(children()).toBe(1);
    expect(lines.map((l) => [l.reqId, l.key, l.msg, l.a])).toEqual([
      ['r1', 'k1', 'first', 1],
      ['r1', 'k1', 'second', undefined],
    ]);
  });
});
