/** The production logger (main.ts createLogger) writing to memory: each line as written. */
import { Writable } from 'node:stream';
import { createLogger } from '../../src/main.js';

export function capturedLogger(level = 'info'): { logger: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: createLogger(level, sink), lines };
}
