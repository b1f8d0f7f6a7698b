/**
 * The OpenAI-format request body → a Gemini generateContent body. Sampling parameters go to
 * `generationConfig`; function tools to one `functionDeclarations` tool, with their JSON Schema
 * passed as `parametersJsonSchema` (the `parameters` field only takes an OpenAPI subset and rejects
 * common JSON Schema keywords such as `additionalProperties`). OpenRouter's `reasoning` becomes
 * `generationConfig.thinkingConfig`.
 */
import { isRecord, stringOrNull } from '../json-shape.js';
import {
  REASONING_EFFORT_RATIO,
  numberOrNull,
  readFunctionTools,
  readMaxTokens,
  readStopSequences,
  readToolChoice,
} from '../openai-input.js';
import { toGeminiPrompt } from './contents.js';

const GENERATION_NUMBERS = [
  ['temperature', 'temperature'],
  ['top_p', 'topP'],
  ['top_k', 'topK'],
  ['seed', 'seed'],
  ['presence_penalty', 'presencePenalty'],
  ['frequency_penalty', 'frequencyPenalty'],
] as const;

/** OpenAI-format parameters this translation never sends (see `ANTHROPIC_UNSENT_PARAMETERS`). */
export const GEMINI_UNSENT_PARAMETERS = ['repetition_penalty', 'logit_bias', 'logprobs', 'top_logprobs'] as const;

export function toGeminiBody(body: Record<string, unknown>): Record<string, unknown> {
  const { systemInstruction, contents } = toGeminiPrompt(body.messages);
  const out: Record<string, unknown> = { contents };
  if (systemInstruction !== null) out.systemInstruction = systemInstruction;
  const config = generationConfig(body);
  if (Object.keys(config).length > 0) out.generationConfig = config;
  Object.assign(out, toolFields(body));
  return out;
}

function generationConfig(body: Record<string, unknown>): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  const maxTokens = readMaxTokens(body);
  if (maxTokens !== null) config.maxOutputTokens = maxTokens;
  for (const [from, to] of GENERATION_NUMBERS) {
    const value = numberOrNull(body[from]);
    if (value !== null) config[to] = value;
  }
  const stop = readStopSequences(body.stop);
  if (stop !== null) config.stopSequences = stop;
  if (typeof body.n === 'number' && Number.isInteger(body.n) && body.n > 1) config.candidateCount = body.n;
  const format = body.response_format;
  if (isRecord(format) && (format.type === 'json_object' || format.type === 'json_schema')) {
    config.responseMimeType = 'application/json';
    const schema = isRecord(format.json_schema) ? format.json_schema.schema : undefined;
    if (format.type === 'json_schema' && isRecord(schema)) config.responseJsonSchema = schema;
  }
  const thinking = thinkingConfig(body, maxTokens);
  if (thinking !== null) config.thinkingConfig = thinking;
  return config;
}

/**
 * OpenRouter's `reasoning` (`effort`, `max_tokens`, `exclude`, `enabled`; legacy `reasoning_effort`
 * and `include_reasoning`) → Gemini's `thinkingConfig`; null when the caller asked nothing of it, so
 * the model thinks as it does by default. Gemini counts thoughts in `maxOutputTokens`, which is the
 * budget the credit hold was computed from and is never raised: the thinking budget stays below it,
 * leaving room for the answer. `exclude` still thinks, without returning the thoughts.
 */
function thinkingConfig(body: Record<string, unknown>, maxOutputTokens: number | null): Record<string, unknown> | null {
  const reasoning = isRecord(body.reasoning) ? body.reasoning : null;
  const effort = stringOrNull(reasoning?.effort) ?? stringOrNull(body.reasoning_effort);
  const excluded = reasoning?.exclude === true || body.include_reasoning === false;
  if (reasoning?.enabled === false || effort === 'none') return { thinkingBudget: 0, includeThoughts: false };
  const budget = thinkingBudget(reasoning?.max_tokens, effort, reasoning?.enabled === true, maxOutputTokens);
  if (budget === null && reasoning === null && effort === null && typeof body.include_reasoning !== 'boolean')
    return null;
  return { ...(budget === null ? {} : { thinkingBudget: budget }), includeThoughts: !excluded };
}

/**
 * Tokens to think in: `max_tokens` as given, an effort as its share of the completion limit (a bare
 * `enabled: true` is OpenRouter's default, medium), either kept below the limit; null to leave it to
 * the model (no limit known, or no size asked for).
 */
function thinkingBudget(
  maxTokens: unknown,
  effort: string | null,
  enabled: boolean,
  maxOutputTokens: number | null,
): number | null {
  const belowLimit = (n: number) => (maxOutputTokens === null ? n : Math.max(0, Math.min(n, maxOutputTokens - 1)));
  if (typeof maxTokens === 'number' && Number.isInteger(maxTokens) && maxTokens >= 0) return belowLimit(maxTokens);
  const ratio = REASONING_EFFORT_RATIO.get(effort ?? (enabled ? 'medium' : ''));
  if (ratio === undefined || maxOutputTokens === null) return null;
  return belowLimit(Math.floor(maxOutputTokens * ratio));
}

function toolFields(body: Record<string, unknown>): Record<string, unknown> {
  const tools = readFunctionTools(body.tools);
  if (tools.length === 0) return {};
  const functionDeclarations = tools.map((tool) => ({
    name: tool.name,
    ...(tool.description === null ? {} : { description: tool.description }),
    ...(tool.parameters === null ? {} : { parametersJsonSchema: tool.parameters }),
  }));
  const out: Record<string, unknown> = { tools: [{ functionDeclarations }] };
  const choice = readToolChoice(body.tool_choice);
  if (choice === null) return out;
  const config: Record<string, unknown> =
    choice.mode === 'function'
      ? { mode: 'ANY', allowedFunctionNames: [choice.name] }
      : { mode: choice.mode === 'required' ? 'ANY' : choice.mode === 'none' ? 'NONE' : 'AUTO' };
  out.toolConfig = { functionCallingConfig: config };
  return out;
}
