/**
 * The wire schema of `POST /chat/completions` (api.md §2.1). Known fields are type-checked; unknown
 * fields pass through to the upstream untouched.
 */
import { z } from 'zod';

const contentPart = z.looseObject({ type: z.string() });
const message = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), z.array(contentPart), z.null()]).optional(),
  name: z.string().optional(),
  tool_calls: z.array(z.looseObject({})).optional(),
  tool_call_id: z.string().optional(),
});

// USD per million tokens; more than 9 decimals is below a femto-dollar per token: numbers are rounded
// there (0.1 + 0.2 arrives as 0.30000000000000004), strings must not carry more.
const priceLimit = z.union([
  z
    .number()
    .nonnegative()
    .max(1e9)
    .transform((value) => value.toFixed(9)),
  z.string().regex(/^\d{1,10}(\.\d{1,9})?$/, 'must be a decimal number of USD per million tokens with at most 9 decimals'),
]);

const providerPreferences = z.looseObject({
  order: z.array(z.string()).optional(),
  only: z.array(z.string()).optional(),
  ignore: z.array(z.string()).optional(),
  allow_fallbacks: z.boolean().optional(),
  sort: z.union([z.enum(['price', 'throughput', 'latency']), z.looseObject({ by: z.enum(['price', 'throughput', 'latency']) })]).optional(),
  max_price: z.looseObject({ prompt: priceLimit.optional(), completion: priceLimit.optional() }).optional(),
  require_parameters: z.boolean().optional(),
  data_collection: z.enum(['allow', 'deny']).optional(),
});


export const chatRequestSchema = z.looseObject({
  model: z.string().min(1, 'model must be a non-empty string'),
  messages: z.array(message).min(1, 'messages must be a non-empty array'),
  models: z.array(z.string().min(1)).max(10).optional(),
  provider: providerPreferences.optional(),
  stream: z.boolean().optional(),
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
  stop: z.union([z.string(), z.array(z.string()).max(4)]).nullable().optional(),
  tools: z.array(z.looseObject({ type: z.string() })).optional(),
  tool_choice: z.union([z.string(), z.looseObject({})]).optional(),
  response_format: z.looseObject({ type: z.string() }).optional(),
  logit_bias: z.record(z.string(), z.number()).nullable().optional(),
  logprobs: z.boolean().nullable().optional(),
  top_logprobs: z.number().int().nullable().optional(),
  user: z.string().optional(),
  // Legacy OpenRouter fields: accepted, ignored (usage is always reported).
  usage: z.unknown().optional(),
  stream_options: z.unknown().optional(),
  transforms: z.unknown().optional(),
  route: z.unknown().optional(),
});

export type ChatRequest = z.output<typeof chatRequestSchema>;

/** One precise sentence for the first problems of a failed parse: "messages.0.role: Invalid option...". */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length ? issue.path.join('.') : 'body'}: ${issue.message}`)
    .join('; ');
}
