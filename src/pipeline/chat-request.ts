/**
 * The wire schema of `POST /chat/completions` (docs/api.md). Known fields are type-checked; unknown
 * top-level fields are not refused here. Messages are checked per role (chat-messages.ts), and
 * every list is bounded before its elements are checked, so a failed validation reports a few
 * problems, never one per element of a huge array.
 */
import { z } from 'zod';
import { findMessagesProblem, MESSAGE_ROLES, withEmptyAssistantText, type ChatMessage } from './chat-messages.js';
import { formatInputPath } from './input-path.js';

const messages = z
  .custom<ChatMessage[]>()
  .superRefine((value, ctx) => {
    const problem = findMessagesProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem.message, path: [...problem.path] });
  })
  .transform(withEmptyAssistantText)
  // Checked by hand (chat-messages.ts); the OpenAPI document says what it accepts.
  .meta({
    type: 'array',
    minItems: 1,
    items: {
      type: 'object',
      properties: { role: { type: 'string', enum: [...MESSAGE_ROLES] }, content: {} },
      required: ['role'],
    },
    description: 'The conversation; each message has the shape of its role (docs/api.md §2.1)',
  });

/** A list of at most `max` items: the length is checked first, the items only when it fits. */
function boundedArray<T extends z.ZodType>(item: T, max: number) {
  // The OpenAPI document shows the items' schema, not the length check's `unknown`.
  const { $schema: _, ...items } = z.toJSONSchema(item, { io: 'input', unrepresentable: 'any' });
  return z.array(z.unknown()).max(max, `must have at most ${max} items`).pipe(z.array(item)).meta({ items });
}

/** Token id → bias in [-100, 100], at most 300 entries (OpenAI's bounds), checked up to the first bad entry. */
const logitBias = z.custom<Record<string, number>>().superRefine((value, ctx) => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    ctx.addIssue({ code: 'custom', message: 'must be an object of token ids to numbers' });
    return;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > 300) {
    ctx.addIssue({ code: 'custom', message: 'must have at most 300 entries' });
    return;
  }
  const badId = entries.find(([id]) => !/^\d{1,9}$/.test(id));
  if (badId) {
    ctx.addIssue({ code: 'custom', message: 'must be a token id (a whole number)', path: [badId[0]] });
    return;
  }
  const bad = entries.find(([, bias]) => typeof bias !== 'number' || !(bias >= -100 && bias <= 100));
  if (bad) ctx.addIssue({ code: 'custom', message: 'must be a number from -100 to 100', path: [bad[0]] });
});

/** A stop sequence or up to four (OpenAI's bound), named when it is exceeded. */
const stopSequences = z.custom<string | string[]>().superRefine((value, ctx) => {
  if (typeof value === 'string') return;
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string'))
    ctx.addIssue({ code: 'custom', message: 'must be a string or an array of strings' });
  else if (value.length > 4) ctx.addIssue({ code: 'custom', message: 'must have at most 4 items' });
});

/**
 * A function tool names its function (the name is what the model calls) and, when it gives them (not
 * null), its parameters as a JSON Schema object, its description as a string and `strict` as a boolean — what
 * every provider refuses otherwise, so the caller hears it before any upstream request; other tool
 * types pass as sent.
 */
const absent = (value: unknown) => value === undefined || value === null;

const tool = z.looseObject({ type: z.string() }).superRefine((value, ctx) => {
  if (value.type !== 'function') return;
  const fn = (value as { function?: unknown }).function;
  if (typeof fn !== 'object' || fn === null || Array.isArray(fn)) {
    ctx.addIssue({ code: 'custom', message: 'must be an object with a "name"', path: ['function'] });
    return;
  }
  const { name, parameters, description, strict } = fn as Record<string, unknown>;
  if (typeof name !== 'string' || name.length === 0)
    ctx.addIssue({ code: 'custom', message: 'must be a non-empty string', path: ['function', 'name'] });
  // null is absent, as clients that write every field send it (go-openai: `"parameters": null`).
  if (!absent(parameters) && (typeof parameters !== 'object' || Array.isArray(parameters)))
    ctx.addIssue({ code: 'custom', message: 'must be a JSON Schema object', path: ['function', 'parameters'] });
  if (!absent(description) && typeof description !== 'string')
    ctx.addIssue({ code: 'custom', message: 'must be a string', path: ['function', 'description'] });
  if (!absent(strict) && typeof strict !== 'boolean')
    ctx.addIssue({ code: 'custom', message: 'must be a boolean', path: ['function', 'strict'] });
});

/** `none`, `auto`, `required`, or `{ type: "function", function: { name } }`. */
const toolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.looseObject({
    type: z.literal('function'),
    function: z.looseObject({ name: z.string().min(1, 'must be a non-empty string') }),
  }),
]);

/** `text`, `json_object`, or `json_schema` with its schema object. */
const responseFormat = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text') }),
  z.looseObject({ type: z.literal('json_object') }),
  z.looseObject({ type: z.literal('json_schema'), json_schema: z.looseObject({}) }),
]);

/**
 * Optional, and `null` means the same as absent: OpenAI's schema makes optional parameters nullable,
 * OpenRouter's its provider preferences too, and clients generated from them, or written in
 * languages with nil pointers, send them so.
 */
function nullMeansAbsent<T extends z.ZodType>(schema: T) {
  return schema.nullish().transform((value): z.output<T> | undefined => value ?? undefined);
}

// USD per million tokens; more than 9 decimals is below a femto-dollar per token: numbers are rounded
// there (0.1 + 0.2 arrives as 0.30000000000000004), strings must not carry more.
const priceLimit = z.union([
  z
    .number()
    .nonnegative()
    .max(1e9)
    .transform((value) => value.toFixed(9)),
  z
    .string()
    .regex(/^\d{1,10}(\.\d{1,9})?$/, 'must be a decimal number of USD per million tokens with at most 9 decimals'),
]);

// order/only/ignore name providers by id or display name, in any case (routing/plan.ts).
const providerPreferences = z.looseObject({
  order: nullMeansAbsent(boundedArray(z.string(), 100)),
  only: nullMeansAbsent(boundedArray(z.string(), 100)),
  ignore: nullMeansAbsent(boundedArray(z.string(), 100)),
  allow_fallbacks: nullMeansAbsent(z.boolean()),
  sort: nullMeansAbsent(
    z.union([
      z.enum(['price', 'throughput', 'latency']),
      z.looseObject({ by: z.enum(['price', 'throughput', 'latency']) }),
    ]),
  ),
  // prompt and completion in USD per million tokens; request in USD per request (as /models' pricing.request).
  max_price: nullMeansAbsent(
    z.looseObject({
      prompt: nullMeansAbsent(priceLimit),
      completion: nullMeansAbsent(priceLimit),
      request: nullMeansAbsent(priceLimit),
    }),
  ),
  require_parameters: nullMeansAbsent(z.boolean()),
  // Endpoint filters on the providers' declared data policies (config `data_collection`, `zdr`).
  data_collection: nullMeansAbsent(z.enum(['allow', 'deny'])),
  zdr: nullMeansAbsent(z.boolean()),
  // OpenRouter's quantization filter: endpoints serving one of these (config `quantization`; none declared: `unknown`).
  quantizations: nullMeansAbsent(
    boundedArray(z.enum(['int4', 'int8', 'fp4', 'fp6', 'fp8', 'fp16', 'bf16', 'fp32', 'unknown']), 9),
  ),
});

export const chatRequestSchema = z.looseObject({
  model: z.string().min(1, 'model must be a non-empty string'),
  messages,
  models: nullMeansAbsent(boundedArray(z.string().min(1), 10)),
  provider: nullMeansAbsent(providerPreferences),
  stream: nullMeansAbsent(z.boolean()),
  // At least 1: some providers read 0 as "use your default", which would escape the credit hold's estimate.
  max_tokens: z.number().int().min(1, 'max_tokens must be at least 1').nullable().optional(),
  max_completion_tokens: z.number().int().min(1, 'max_completion_tokens must be at least 1').nullable().optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  top_k: z.number().int().nullable().optional(),
  frequency_penalty: z.number().min(-2).max(2).nullable().optional(),
  presence_penalty: z.number().min(-2).max(2).nullable().optional(),
  repetition_penalty: z.number().nullable().optional(),
  seed: z.number().int().nullable().optional(),
  n: z.number().int().min(1).max(1, 'n > 1 is not supported').nullable().optional(),
  stop: stopSequences.nullable().optional(),
  tools: nullMeansAbsent(boundedArray(tool, 128)),
  tool_choice: nullMeansAbsent(toolChoice),
  parallel_tool_calls: nullMeansAbsent(z.boolean()),
  response_format: nullMeansAbsent(responseFormat),
  logit_bias: logitBias.nullable().optional(),
  logprobs: z.boolean().nullable().optional(),
  // OpenRouter's reasoning switch, read by the adapters that translate it (Anthropic thinking, Gemini
  // thinkingConfig): its fields' types are checked here, so a mistyped one is a 400, not ignored.
  reasoning: nullMeansAbsent(
    z.looseObject({
      effort: nullMeansAbsent(z.enum(['xhigh', 'high', 'medium', 'low', 'minimal', 'none'])),
      max_tokens: nullMeansAbsent(z.number().int().min(0)),
      exclude: nullMeansAbsent(z.boolean()),
      enabled: nullMeansAbsent(z.boolean()),
    }),
  ),
  reasoning_effort: nullMeansAbsent(z.enum(['xhigh', 'high', 'medium', 'low', 'minimal', 'none'])),
  include_reasoning: nullMeansAbsent(z.boolean()),
  top_logprobs: z.number().int().min(0).max(20).nullable().optional(),
  // Stored with the generation: an end-user id, bounded like every stored value a caller chooses.
  user: nullMeansAbsent(z.string().max(1000, 'must be at most 1000 characters')),
  // Legacy OpenRouter fields: accepted, ignored (usage is always reported).
  usage: z.unknown().optional(),
  stream_options: z.unknown().optional(),
  transforms: z.unknown().optional(),
  route: z.unknown().optional(),
});

export type ChatRequest = z.output<typeof chatRequestSchema>;

/**
 * The body as the OpenAPI document describes it: `model` may be left out when `models` is given (the
 * first of `models` is then the model; chat-completion.ts fills it in before `chatRequestSchema` checks
 * the body), as OpenRouter takes it and @openrouter/sdk sends it.
 */
export const chatRequestDocSchema = chatRequestSchema.extend({
  model: z
    .string()
    .min(1)
    .optional()
    .meta({ description: 'The model; may be left out when `models` is given (its first is then the model)' }),
});

/** One precise sentence for the first problems of a failed parse: "messages[3].content[0].text: must be a string". */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => `${formatInputPath(issue.path)}: ${issue.message}`)
    .join('; ');
}
