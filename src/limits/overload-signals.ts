/**
 * Is this process overloaded? Four signals, sampled a few times a second off the request path:
 * the event loop's delay (p99 over the last sample window, from `monitorEventLoopDelay`), its
 * utilization over the window (the share of time it was busy: a saturated loop queues requests though
 * each turn is short — a flood of 256 connections kept the delay under its threshold while a normal
 * client's answers took 40 times longer, outside check), the number of requests in flight, and the
 * heap's use of its limit. Thresholds not given in the config are
 * derived from the machine: in-flight requests from the heap limit (an open stream costs tens of
 * KiB), the heap share as a fixed fraction of V8's own limit.
 */
import { monitorEventLoopDelay, performance, type EventLoopUtilization, type IntervalHistogram } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import type { Pressure } from './load-shedder.js';

export interface OverloadThresholds {
  maxEventLoopDelayMs: number;
  /** 1: never (a utilization is at most 1). */
  maxEventLoopUtilization: number;
  maxInFlight: number;
  maxHeapRatio: number;
}

export interface LoadSignals {
  eventLoopDelayMs: number;
  eventLoopUtilization: number;
  inFlight: number;
  heapRatio: number;
}

/** Memory one in-flight request may need at worst (an open stream measured ~56 KB). */
const BYTES_PER_IN_FLIGHT = 64 * 1024;
const SAMPLE_EVERY_MS = 250;

export function derivedMaxInFlight(heapLimitBytes: number = getHeapStatistics().heap_size_limit): number {
  return Math.max(1_000, Math.floor(heapLimitBytes / BYTES_PER_IN_FLIGHT));
}

export function pressureOf(signals: LoadSignals, thresholds: OverloadThresholds): Pressure {
  const over =
    signals.eventLoopDelayMs > thresholds.maxEventLoopDelayMs ||
    (thresholds.maxEventLoopUtilization < 1 && signals.eventLoopUtilization > thresholds.maxEventLoopUtilization) ||
    signals.inFlight > thresholds.maxInFlight ||
    signals.heapRatio > thresholds.maxHeapRatio;
  return over ? 'overloaded' : 'none';
}

export class OverloadMonitor {
  private histogram: IntervalHistogram | null = null;
  private timer: NodeJS.Timeout | null = null;
  private delayMs = 0;
  private utilization = 0;
  private lastUtilization: EventLoopUtilization | null = null;
  private heapRatio = 0;
  /** Requests being handled now (maintained by the HTTP layer). */
  inFlight = 0;

  constructor(readonly thresholds: OverloadThresholds) {}

  start(): void {
    if (this.timer) return;
    this.histogram = monitorEventLoopDelay({ resolution: 10 });
    this.histogram.enable();
    this.lastUtilization = performance.eventLoopUtilization();
    this.timer = setInterval(() => this.sample(), SAMPLE_EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.histogram?.disable();
    this.histogram = null;
  }

  private sample(): void {
    if (this.histogram) {
      // Nanoseconds; the histogram holds the window since the last sample.
      this.delayMs = this.histogram.count > 0 ? this.histogram.percentile(99) / 1e6 : 0;
      this.histogram.reset();
    }
    if (this.lastUtilization) {
      const now = performance.eventLoopUtilization();
      this.utilization = performance.eventLoopUtilization(now, this.lastUtilization).utilization;
      this.lastUtilization = now;
    }
    const heap = getHeapStatistics();
    this.heapRatio = heap.used_heap_size / heap.heap_size_limit;
  }

  signals(): LoadSignals {
    return {
      eventLoopDelayMs: this.delayMs,
      eventLoopUtilization: this.utilization,
      inFlight: this.inFlight,
      heapRatio: this.heapRatio,
    };
  }

  pressure(): Pressure {
    return pressureOf(this.signals(), this.thresholds);
  }
}
