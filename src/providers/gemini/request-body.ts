/**
 * The OpenAI-format request body → a Gemini generateContent body. Sampling parameters go to
 * `generationConfig`; function tools to one `functionDeclarations` tool, with their JSON Schema
 * passed as `parametersJsonSchema` (the `parameters` field only takes an OpenAPI subset and rejects
 * common JSON Schema keywords such as `additionalProperties`).
 */
import { isRecord } from '../json-shape.js';
import { numberOrNull, readFunctionTools, readMaxTokens, readStopSequences, readToolChoice } from '../openai-input.js';
import { toGeminiPrompt } from './contents.js';

const GENERATION_NUMBERS = [
  ['temperature', 'temperature'],
  ['top_p', 'topP'],
  ['top_k', 'topK'],
  ['seed', 'seed'],
  ['presence_penalty', 'presencePenalty'],
  ['frequency_penalty', 'frequencyPenalty'],
] as const;

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
  return config;
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
