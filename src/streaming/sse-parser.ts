/**
 * Incremental Server-Sent Events parser following the WHATWG event-stream rules
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).
 * Bytes go in as they arrive from the socket; complete events come out. Work is linear in the
 * input: a line split over many chunks is kept as a list of pieces and joined once.
 */
import { StringDecoder } from 'node:string_decoder';

export interface SseEvent {
  event: string | null; // `event:` field; null when absent (the spec's default type "message")
  data: string; // `data:` lines joined with "\n"
  id: string | null; // the last event id seen so far in the stream (the spec's "last event ID")
}

export interface SseParserOptions {
  /** Called with each comment line's text (after ':' and one optional space). Comments are dropped otherwise. */
  onComment?: (text: string) => void;
  /**
   * Dispatch an event that the stream ended in the middle of (no blank line after it). The spec
   * discards it; lenient consumers may want it to notice a truncated final chunk.
   */
  dispatchIncompleteAtEnd?: boolean;
  /**
   * Longest line, and longest event (its data lines together), in characters. Beyond it `push`
   * throws SseLimitError: a peer that never ends a line cannot make the parser buffer without bound.
   */
  maxLineLength?: number;
}

/** 8 Mi characters: far above any real chunk (a large tool call, an image as base64), far below the heap. */
export const DEFAULT_MAX_SSE_LINE = 8 * 1024 * 1024;

/** The stream broke the parser's size bound: it is not a valid event stream for us. */
export class SseLimitError extends Error {
  constructor(limit: number) {
    super(`event stream line or event longer than ${limit} characters`);
    this.name = 'SseLimitError';
  }
}

const LF = 10;
const COLON = 58;

export class SseParser {
  /**
   * UTF-8 across chunk boundaries (a character split between two reads is kept for the next). Node's
   * StringDecoder rather than TextDecoder: the same replacement of invalid bytes, several times less
   * work per chunk; the byte-order mark TextDecoder would drop is dropped by `scan`.
   */
  private readonly decoder = new StringDecoder('utf8');
  private readonly onComment: ((text: string) => void) | undefined;
  private readonly dispatchIncompleteAtEnd: boolean;
  private readonly maxLineLength: number;
  /** Pieces of the current, not yet terminated line, and their total length. */
  private linePieces: string[] = [];
  private pendingLength = 0;
  /** Characters of the current event's data lines. */
  private dataLength = 0;
  /** The previous chunk ended with CR: a LF opening the next chunk belongs to that same line break. */
  private skipLeadingLf = false;
  private atStreamStart = true;
  private dataLines: string[] = [];
  private eventType = '';
  private lastEventId = '';
  private out: SseEvent[] = [];
  /** The reconnection time the server asked for with `retry:`, in milliseconds. */
  retryMs: number | null = null;

  constructor(options: SseParserOptions = {}) {
    this.onComment = options.onComment;
    this.dispatchIncompleteAtEnd = options.dispatchIncompleteAtEnd ?? false;
    this.maxLineLength = options.maxLineLength ?? DEFAULT_MAX_SSE_LINE;
  }

  /**
   * Part of an event is in hand: data lines waiting for the blank line that ends their event, or a
   * line not ended yet that is not a comment. What a stream sends that leaves this false (comment
   * lines, blank lines) carries no event.
   */
  get midEvent(): boolean {
    return this.dataLines.length > 0 || (this.linePieces.length > 0 && this.linePieces[0]!.charCodeAt(0) !== COLON);
  }

  /** Feed the next piece of the stream. Feed either bytes or strings for one stream, not both. */
  push(chunk: Uint8Array | string): SseEvent[] {
    const text = typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    this.scan(text);
    return this.takeEvents();
  }

  /** The stream ended: flush the decoder and the last unterminated line. */
  end(): SseEvent[] {
    this.scan(this.decoder.end());
    if (this.linePieces.length > 0) {
      const line = this.linePieces.join('');
      this.linePieces = [];
      this.pendingLength = 0;
      this.processLine(line);
    }
    if (this.dispatchIncompleteAtEnd) this.dispatch();
    this.dataLines = [];
    this.dataLength = 0;
    this.eventType = '';
    return this.takeEvents();
  }

  private takeEvents(): SseEvent[] {
    if (this.out.length === 0) return [];
    const events = this.out;
    this.out = [];
    return events;
  }

  private scan(input: string): void {
    let text = input;
    if (text.length === 0) return;
    if (this.atStreamStart) {
      // A byte-order mark at the start of the stream is not part of the first line (spec).
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      this.atStreamStart = text.length === 0;
    }
    let start = 0;
    if (this.skipLeadingLf) {
      this.skipLeadingLf = false;
      if (text.charCodeAt(0) === LF) start = 1;
    }
    // Next CR and LF positions are cached so a chunk with many LFs and no CR is not rescanned per line.
    let nextLf = text.indexOf('\n', start);
    let nextCr = text.indexOf('\r', start);
    while (nextLf !== -1 || nextCr !== -1) {
      const isCr = nextCr !== -1 && (nextLf === -1 || nextCr < nextLf);
      const end = isCr ? nextCr : nextLf;
      if (this.pendingLength + (end - start) > this.maxLineLength) throw new SseLimitError(this.maxLineLength);
      let line = text.slice(start, end);
      if (this.linePieces.length > 0) {
        this.linePieces.push(line);
        line = this.linePieces.join('');
        this.linePieces = [];
        this.pendingLength = 0;
      }
      this.processLine(line);
      start = end + 1;
      if (isCr) {
        if (start === text.length) {
          this.skipLeadingLf = true;
        } else if (text.charCodeAt(start) === LF) {
          start += 1;
        }
      }
      if (nextLf !== -1 && nextLf < start) nextLf = text.indexOf('\n', start);
      if (nextCr !== -1 && nextCr < start) nextCr = text.indexOf('\r', start);
    }
    if (start < text.length) {
      this.pendingLength += text.length - start;
      if (this.pendingLength > this.maxLineLength) throw new SseLimitError(this.maxLineLength);
      this.linePieces.push(start === 0 ? text : text.slice(start));
    }
  }

  private processLine(line: string): void {
    if (line.length === 0) {
      this.dispatch();
      return;
    }
    const colon = line.indexOf(':');
    if (colon === 0) {
      if (this.onComment !== undefined) this.onComment(stripOneSpace(line, 1));
      return;
    }
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : stripOneSpace(line, colon + 1);
    switch (field) {
      case 'data':
        this.dataLength += value.length + 1;
        if (this.dataLength > this.maxLineLength) throw new SseLimitError(this.maxLineLength);
        this.dataLines.push(value);
        break;
      case 'event':
        this.eventType = value;
        break;
      case 'id':
        if (!value.includes('\0')) this.lastEventId = value;
        break;
      case 'retry':
        if (/^[0-9]+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        break; // unknown fields are ignored, per spec
    }
  }

  private dispatch(): void {
    if (this.dataLines.length > 0) {
      this.out.push({
        event: this.eventType === '' ? null : this.eventType,
        data: this.dataLines.length === 1 ? this.dataLines[0]! : this.dataLines.join('\n'),
        id: this.lastEventId === '' ? null : this.lastEventId,
      });
    }
    this.dataLines = [];
    this.dataLength = 0;
    this.eventType = '';
  }
}

function stripOneSpace(line: string, from: number): string {
  return line.charCodeAt(from) === 32 ? line.slice(from + 1) : line.slice(from);
}
