/**
 * The OpenAI-format request body → an Anthropic Messages API body. Only parameters Anthropic has
 * are sent; OpenAI-only ones (frequency_penalty, seed, response_format, logprobs...) are dropped,
 * as OpenRouter does for providers that lack them.
 */
import { numberOrNull, readFunctionTools, readMaxTokens, readStopSequences, readToolChoice } from '../openai-input.js';
import { toAnthropicPrompt } from './messages.js';

/** Anthropic requires max_tokens; OpenAI callers may omit it. */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 4096;

export function toAnthropicBody(
  body: Record<string, unknown>,
  model: string,
  stream: boolean,
): Record<string, unknown> {
  const { system, messages } = toAnthropicPrompt(body.messages);
  const out: Record<string, unknown> = {
    model,
    max_tokens: readMaxTokens(body) ?? DEFAULT_ANTHROPIC_MAX_TOKENS,
    messages,
  };
  if (system.length > 0) out.system = system;
  // Same names as OpenAI's; temperature passes as is (Anthropic's range is 0-1 and it rejects more).
  for (const name of ['temperature', 'top_p', 'top_k'] as const) {
    const value = numberOrNull(body[name]);
    if (value !== null) out[name] = value;
  }
  const stop = readStopSequences(body.stop);
  if (stop !== null) out.stop_sequences = stop;
  if (stream) out.stream = true;
  if (typeof body.user === 'string') out.metadata = { user_id: body.user };
  Object.assign(out, toolFields(body));
  return out;
}

function toolFields(body: Record<string, unknown>): Record<string, unknown> {
  const tools = readFunctionTools(body.tools);
  if (tools.length === 0) return {};
  const out: Record<string, unknown> = {
    tools: tools.map((tool) => ({
      name: tool.name,
      ...(tool.description === null ? {} : { description: tool.description }),
      input_schema: tool.parameters ?? { type: 'object', properties: {} },
    })),
  };
  const choice = readToolChoice(body.tool_choice);
  let toolChoice: Record<string, unknown> | null = null;
  if (choice?.mode === 'auto') toolChoice = { type: 'auto' };
  else if (choice?.mode === 'none') toolChoice = { type: 'none' };
  else if (choice?.mode === 'required') toolChoice = { type: 'any' };
  else if (choice?.mode === 'function') toolChoice = { type: 'tool', name: choice.name };
  if (body.parallel_tool_calls === false && toolChoice?.type !== 'none') {
    toolChoice = { ...(toolChoice ?? { type: 'auto' }), disable_parallel_tool_use: true };
  }
  if (toolChoice !== null) out.tool_choice = toolChoice;
  return out;
}
