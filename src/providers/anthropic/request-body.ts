/**
 * The OpenAI-format request body → an Anthropic Messages API body. Only parameters Anthropic has
 * are sent; OpenAI-only ones (frequency_penalty, seed, logprobs...) are dropped, as OpenRouter does
 * for providers that lack them. `response_format: json_schema` becomes Anthropic's structured output
 * (`output_config.format`) on endpoints that list `structured_outputs` (the models that have it);
 * elsewhere it is dropped too. OpenRouter's `reasoning` becomes `thinking`
 * (reasoning.ts), and what Anthropic refuses alongside it is left out rather than failing the request.
 */
import { numberOrNull, readFunctionTools, readMaxTokens, readStopSequences, readToolChoice } from '../openai-input.js';
import { isRecord } from '../json-shape.js';
import { toAnthropicPrompt, type AnthropicMessage } from './messages.js';
import { thinkingBudget } from './reasoning.js';

/** Anthropic requires max_tokens; OpenAI callers may omit it. */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 4096;

const SAMPLING = ['temperature', 'top_p', 'top_k'] as const;

/**
 * OpenAI-format parameters this translation never sends: an Anthropic endpoint does not support them,
 * whatever the config lists (routing/catalog.ts), so `provider.require_parameters` routes elsewhere.
 * `response_format` is sent only where the endpoint lists `structured_outputs`.
 */
export function anthropicUnsentParameters(declared: readonly string[]): readonly string[] {
  const unsent = [
    'seed',
    'frequency_penalty',
    'presence_penalty',
    'repetition_penalty',
    'logit_bias',
    'logprobs',
    'top_logprobs',
  ];
  return declared.includes('structured_outputs') ? unsent : [...unsent, 'response_format'];
}

export interface AnthropicBodyOptions {
  /** The endpoint's model has structured outputs (its config lists `structured_outputs`). */
  structuredOutputs?: boolean;
}

/**
 * Whether Anthropic takes thinking on this conversation. It refuses thinking (400, the whole request)
 * with a prefill — a trailing assistant message: a caller's, or a broken stream's continuation — and
 * in a tool loop whose assistant turn does not start with its thinking block ("Expected `thinking` or
 * `redacted_thinking`"): a client that dropped the `reasoning_details`, or never saw them
 * (`reasoning.exclude`). Such a request is sent without thinking — an ordinary request to Anthropic —
 * rather than refused by this provider alone. The turn is the trailing run of assistant tool calls
 * and their results: the model thinks at its start (later steps carry thinking only when it is
 * interleaved), so its first assistant message is the one that must start with thinking.
 */
function thinkingTakes(messages: readonly AnthropicMessage[]): boolean {
  if (messages.at(-1)?.role === 'assistant') return false;
  let turnStart: AnthropicMessage | null = null;
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    const kind = message.role === 'assistant' ? 'tool_use' : 'tool_result';
    if (!message.content.some((block) => block.type === kind)) break;
    if (message.role === 'assistant') turnStart = message;
  }
  if (turnStart === null) return true;
  const first = turnStart.content[0]?.type;
  return first === 'thinking' || first === 'redacted_thinking';
}

export function toAnthropicBody(
  body: Record<string, unknown>,
  model: string,
  stream: boolean,
  options: AnthropicBodyOptions = {},
): Record<string, unknown> {
  const structured = options.structuredOutputs === true;
  const { system, messages } = toAnthropicPrompt(body.messages);
  const maxTokens = readMaxTokens(body) ?? DEFAULT_ANTHROPIC_MAX_TOKENS;
  const out: Record<string, unknown> = { model, max_tokens: maxTokens, messages };
  if (system.length > 0) out.system = system;
  const budget = thinkingTakes(messages) ? thinkingBudget(body, maxTokens) : null;
  if (budget !== null) out.thinking = { type: 'enabled', budget_tokens: budget };
  // Same names as OpenAI's. Anthropic's temperature range is 0–1 where OpenAI's is 0–2: a higher one
  // is sent as 1, its most random, rather than refused by this provider alone (a request that may
  // land on several providers should not fail on one). With thinking on, Anthropic refuses a
  // temperature other than 1 (its default), top_k, and on some models any top_p: all three are left out.
  for (const name of budget === null ? SAMPLING : []) {
    const value = numberOrNull(body[name]);
    if (value !== null) out[name] = name === 'temperature' ? Math.min(value, 1) : value;
  }
  // Passed as given: Anthropic refuses a stop sequence of whitespace alone (400, the caller's to fix),
  // and leaving it out would let the answer run past where the caller asked it to stop, at their cost.
  const stop = readStopSequences(body.stop);
  if (stop !== null) out.stop_sequences = stop;
  if (stream) out.stream = true;
  if (typeof body.user === 'string') out.metadata = { user_id: body.user };
  Object.assign(out, toolFields(body, budget !== null, structured));
  const schema = structured ? jsonSchemaOf(body.response_format) : null;
  if (schema !== null) out.output_config = { format: { type: 'json_schema', schema } };
  return out;
}

/**
 * The schema of `response_format: {type: "json_schema", json_schema: {schema}}`, sent as given: Anthropic
 * answers a schema it cannot enforce (an object without `additionalProperties: false`, numeric or
 * length bounds) with a 400 that names it, which is the caller's to fix — rewriting the schema would
 * return JSON the caller's own validation may refuse. `json_object` has no Anthropic form (dropped).
 */
function jsonSchemaOf(format: unknown): Record<string, unknown> | null {
  if (!isRecord(format) || format.type !== 'json_schema' || !isRecord(format.json_schema)) return null;
  const schema = format.json_schema.schema;
  return isRecord(schema) ? schema : null;
}

/**
 * Function tools and the tool choice. Thinking cannot be combined with a forced tool (`any`, `tool`):
 * with thinking on, the choice becomes `auto`, as a caller asking for reasoning is better served by an
 * answer that may skip the tool than by a 400.
 */
function toolFields(body: Record<string, unknown>, thinking: boolean, structured: boolean): Record<string, unknown> {
  const tools = readFunctionTools(body.tools);
  if (tools.length === 0) return {};
  const out: Record<string, unknown> = {
    tools: tools.map((tool) => ({
      name: tool.name,
      ...(tool.description === null ? {} : { description: tool.description }),
      input_schema: tool.parameters ?? { type: 'object', properties: {} },
      // Strict tool use comes with structured outputs: only the models that have them accept it.
      ...(structured && tool.strict ? { strict: true } : {}),
    })),
  };
  const choice = readToolChoice(body.tool_choice);
  let toolChoice: Record<string, unknown> | null = null;
  if (choice?.mode === 'auto') toolChoice = { type: 'auto' };
  else if (choice?.mode === 'none') toolChoice = { type: 'none' };
  else if (choice?.mode === 'required') toolChoice = { type: thinking ? 'auto' : 'any' };
  else if (choice?.mode === 'function') toolChoice = thinking ? { type: 'auto' } : { type: 'tool', name: choice.name };
  if (body.parallel_tool_calls === false && toolChoice?.type !== 'none') {
    toolChoice = { ...(toolChoice ?? { type: 'auto' }), disable_parallel_tool_use: true };
  }
  if (toolChoice !== null) out.tool_choice = toolChoice;
  return out;
}
