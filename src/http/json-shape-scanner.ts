/**
 * A byte-level pass over a JSON text as it arrives, before `JSON.parse` sees it: it tracks strings,
 * nesting depth and the number of values (array elements and object members), so a hostile body —
 * megabytes of `[[[[`, or hundreds of thousands of tiny elements — is refused after a linear scan
 * of at most the bytes that cross the limit, instead of being parsed and then validated.
 * It does not check the grammar: `JSON.parse` does that afterwards.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;

export interface JsonShapeLimits {
  maxDepth: number;
  maxElements: number;
}

export class JsonShapeScanner {
  private depth = 0;
  /** Commas plus containers: one more than the values of each container, i.e. an upper bound of the values. */
  private elements = 0;
  private inString = false;
  private escaped = false;

  constructor(private readonly limits: JsonShapeLimits) {}

  /** Scans the next bytes; returns why the body is refused, or null while it is within the limits. */
  feed(chunk: Uint8Array): string | null {
    const { maxDepth, maxElements } = this.limits;
    let { depth, elements, inString, escaped } = this;
    let i = 0;
    while (i < chunk.length) {
      if (inString) {
        // Strings are most of a large body: jump from quote to quote (memchr) instead of walking bytes.
        if (escaped) {
          escaped = false;
          i += 1;
          continue;
        }
        const quote = chunk.indexOf(QUOTE, i);
        if (quote === -1) {
          escaped = trailingBackslashes(chunk, chunk.length, i) % 2 === 1;
          i = chunk.length;
          break;
        }
        // A quote after an odd run of backslashes is escaped (the run starts unescaped at or after i).
        if (trailingBackslashes(chunk, quote, i) % 2 === 0) inString = false;
        i = quote + 1;
        continue;
      }
      const byte = chunk[i]!;
      i += 1;
      if (byte === QUOTE) inString = true;
      else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
        if (++depth > maxDepth) return `JSON body nests deeper than ${maxDepth} levels`;
        if (++elements > maxElements) return `JSON body has more than ${maxElements} values`;
      } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) depth -= 1;
      else if (byte === COMMA && ++elements > maxElements) return `JSON body has more than ${maxElements} values`;
    }
    this.depth = depth;
    this.elements = elements;
    this.inString = inString;
    this.escaped = escaped;
    return null;
  }
}

/** How many backslashes directly precede `end`, not looking before `start`. */
function trailingBackslashes(chunk: Uint8Array, end: number, start: number): number {
  let count = 0;
  for (let j = end - 1; j >= start && chunk[j] === BACKSLASH; j--) count += 1;
  return count;
}
