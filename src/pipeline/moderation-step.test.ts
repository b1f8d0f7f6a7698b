import { describe, expect, it } from 'vitest';
import { TollgateError } from '../core/errors.js';
import {
  ModerationFailure,
  type ModerationInput,
  type ModerationVerdict,
  type Moderator,
} from '../moderation/types.js';
import type { PlannedAttempt } from '../routing/plan.js';
import type { ChatContext } from './chat-context.js';
import type { ChatRequest } from './chat-request.js';
import { moderateRequest, moderationStep, type ModerationOutcome } from './moderation-step.js';

function fakeModerator(answer: (input: ModerationInput) => Promise<ModerationVerdict>) {
  const seen: ModerationInput[] = [];
  const moderator: Moderator = { name: 'Fake', check: (input) => (seen.push(input), answer(input)) };
  return { moderator, seen };
}

function setup(
  answer: (input: ModerationInput) => Promise<ModerationVerdict>,
  options: { onError?: 'block' | 'allow'; appliesTo?: 'all' | string[] } = {},
) {
  const { moderator, seen } = fakeModerator(answer);
  const logs: { level: string; obj: object; msg: string | undefined }[] = [];
  const log = {
    info: (obj: object, msg?: string) => logs.push({ level: 'info', obj, msg }),
    warn: (obj: object, msg?: string) => logs.push({ level: 'warn', obj, msg }),
    error: (obj: object, msg?: string) => logs.push({ level: 'error', obj, msg }),
  };
  const outcomes: ModerationOutcome[] = [];
  const config = {
    mode: 'patterns' as const,
    patterns: [],
    on_error: options.onError ?? 'block',
    applies_to: options.appliesTo ?? 'all',
  };
  const step = moderationStep(config, moderator, log, (o) => outcomes.push(o));
  return { step, seen, logs, outcomes };
}

const controller = new AbortController();
const ctx = {
  generationId: 'gen-1',
  key: { hash: 'ab'.repeat(32) },
  signal: controller.signal,
} as unknown as ChatContext;
const request = (content: unknown) =>
  ({ model: 'a/b', messages: [{ role: 'user', content }] }) as unknown as ChatRequest;
const plan = [{ model: { id: 'a/b' } }] as unknown as PlannedAttempt[];

describe('moderateRequest', () => {
  it('does nothing without a step, for models outside applies_to, or without text to check', async () => {
    expect(await moderateRequest(null, ctx, request('x'), plan)).toBeNull();
    const other = setup(async () => ({ flagged: false }), { appliesTo: ['c/d'] });
    expect(await moderateRequest(other.step, ctx, request('x'), plan)).toBeNull();
    const empty = setup(async () => ({ flagged: false }));
    expect(
      await moderateRequest(empty.step, ctx, request([{ type: 'image_url', image_url: { url: 'x' } }]), plan),
    ).toBeNull();
    expect([...other.seen, ...empty.seen]).toEqual([]);
  });

  it('returns the latency when the text passes', async () => {
    const { step, seen, outcomes } = setup(async () => ({ flagged: false }));
    const latency = await moderateRequest(step, ctx, request('hello'), plan);
    expect(latency).toBeGreaterThanOrEqual(0);
    expect(seen[0]).toMatchObject({ texts: ['hello'], model: 'a/b' });
    expect(outcomes).toEqual(['passed']);
  });

  it('throws moderation.flagged with the four metadata fields; logs reasons, never the text', async () => {
    const { step, logs, outcomes } = setup(async (input) => ({
      flagged: true,
      reasons: ['r1'],
      flaggedInput: input.texts[0] ?? '',
    }));
    const error = await moderateRequest(step, ctx, request('the secret text'), plan).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TollgateError);
    expect(error).toMatchObject({
      code: 'moderation.flagged',
      metadata: { reasons: ['r1'], flagged_input: 'the secret text', provider_name: 'Fake', model_slug: 'a/b' },
    });
    expect(JSON.stringify(logs)).not.toContain('secret text');
    expect(logs[0]).toMatchObject({
      level: 'info',
      obj: { reasons: ['r1'], key: 'abababababab', generation_id: 'gen-1' },
    });
    expect(outcomes).toEqual(['flagged']);
  });

  it('on failure: block → moderation.unavailable; allow → forwards; an unexpected error is logged as such', async () => {
    const blocked = setup(async () => Promise.reject(new ModerationFailure('down')));
    await expect(moderateRequest(blocked.step, ctx, request('x'), plan)).rejects.toMatchObject({
      code: 'moderation.unavailable',
    });
    expect(blocked.outcomes).toEqual(['error_blocked']);

    const allowed = setup(async () => Promise.reject(new TypeError('bug')), { onError: 'allow' });
    expect(await moderateRequest(allowed.step, ctx, request('x'), plan)).toBeGreaterThanOrEqual(0);
    expect(allowed.outcomes).toEqual(['error_allowed']);
    expect(allowed.logs.map((l) => l.level)).toEqual(['error', 'warn']);
  });

  it('a caller who left is not forwarded even with on_error: allow', async () => {
    const gone = new AbortController();
    gone.abort();
    const { step } = setup(async () => Promise.reject(new ModerationFailure('aborted')), { onError: 'allow' });
    await expect(moderateRequest(step, { ...ctx, signal: gone.signal }, request('x'), plan)).rejects.toMatchObject({
      code: 'moderation.unavailable',
    });
  });

  it('builds no step when moderation is off', () => {
    expect(
      moderationStep({ mode: 'off', patterns: [], on_error: 'block', applies_to: 'all' }, null, {
        info() {},
        warn() {},
        error() {},
      }),
    ).toBeNull();
  });
});
