/**
 * Per-request loggers that cost nothing until something is logged. Fastify makes a child logger per
 * request (its request id) and the routes add bindings (the key, the generation id); a pino child is
 * built eagerly, several microseconds each on every request, though most requests log nothing but
 * their access line. A `LazyChildLogger` keeps the parent and the bindings and builds the real child
 * on the first call at an enabled level; a level that is off is checked against the parent and
 * never builds it.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';

type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';
type LogMethod = (...args: unknown[]) => void;

function levelEnabled(logger: FastifyBaseLogger, level: Level): boolean {
  const check = (logger as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled;
  return check ? check.call(logger, level) : true;
}

export class LazyChildLogger {
  #real: FastifyBaseLogger | null = null;

  /** Child options (Fastify passes `{}` when there are none). */
  private readonly options: ChildLoggerOptions | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    options?: ChildLoggerOptions,
  ) {
    this.options = options && Object.keys(options).length > 0 ? options : undefined;
    // A level of its own (a route's `logLevel`) decides differently from the parent's: build it now.
    if (this.options?.level !== undefined) this.#resolve();
  }

  #resolve(): FastifyBaseLogger {
    if (this.#real) return this.#real;
    // Unbuilt lazy ancestors fold their bindings into this one child of the nearest real logger.
    let bindings = this.bindings;
    let parent = this.parent;
    while (parent instanceof LazyChildLogger && parent.#real === null && parent.options === undefined) {
      bindings = { ...parent.bindings, ...bindings };
      parent = parent.parent;
    }
    const base = parent instanceof LazyChildLogger ? parent.#resolve() : parent;
    return (this.#real = base.child(bindings, this.options));
  }

  #log(level: Level, args: unknown[]): void {
    if (!levelEnabled(this.#real ?? this.parent, level)) return;
    const real = this.#resolve();
    (real[level] as LogMethod).apply(real, args);
  }

  get level(): string {
    return (this.#real ?? this.parent).level;
  }

  set level(value: string) {
    this.#resolve().level = value;
  }

  isLevelEnabled(level: Level): boolean {
    return levelEnabled(this.#real ?? this.parent, level);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return lazyChild(this.asLogger(), bindings, options);
  }

  trace(...args: unknown[]): void {
    this.#log('trace', args);
  }
  debug(...args: unknown[]): void {
    this.#log('debug', args);
  }
  info(...args: unknown[]): void {
    this.#log('info', args);
  }
  warn(...args: unknown[]): void {
    this.#log('warn', args);
  }
  error(...args: unknown[]): void {
    this.#log('error', args);
  }
  fatal(...args: unknown[]): void {
    this.#log('fatal', args);
  }
  silent(): void {}

  asLogger(): FastifyBaseLogger {
    return this as unknown as FastifyBaseLogger;
  }
}

export function lazyChild(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options?: ChildLoggerOptions,
): FastifyBaseLogger {
  return new LazyChildLogger(parent, bindings, options).asLogger();
}

/** Fastify's `childLoggerFactory`: the request's logger (bound to its request id) is lazy too. */
export function lazyChildLoggerFactory(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return lazyChild(logger, bindings, options);
}
