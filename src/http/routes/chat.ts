/** POST /api/v1/chat/completions */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CancelSignal } from '../../core/cancellation.js';
import { TollgateError } from '../../core/errors.js';
import { newGenerationId } from '../../core/ids.js';
import { completeChat, streamChat } from '../../pipeline/chat-completion.js';
import { renderError } from '../error-table.js';
import { appAttribution } from '../request-context.js';
import { requestKey } from '../route-auth.js';
import type { RouteTable } from '../route-table.js';
import { chatRequestDocSchema } from '../../pipeline/chat-request.js';
import { chatCompletionChunkSchema, chatCompletionSchema } from '../../pipeline/response-schemas.js';
import type { Services } from '../services.js';
import { SseSink } from '../sse-sink.js';
import type { RequestAborts } from '../request-aborts.js';

/** Aborted when the caller disconnects before the response finished, or when shutdown's grace ends. */
function requestSignal(request: FastifyRequest, reply: FastifyReply, aborts: RequestAborts): CancelSignal {
  const cancellation = aborts.open();
  reply.raw.once('close', () => {
    aborts.release(cancellation);
    if (!reply.raw.writableFinished) cancellation.abort();
  });
  request.raw.on('aborted', () => cancellation.abort());
  return cancellation;
}

export function registerChatRoutes(routes: RouteTable, services: Services): void {
  const generationIds = new WeakMap<FastifyRequest, string>();
  // The id is assigned before the body is read, so that a body the parser refuses (400, 413) carries it too.
  const assignGenerationId = async (request: FastifyRequest, reply: FastifyReply) => {
    const generationId = newGenerationId(services.now());
    generationIds.set(request, generationId);
    reply.header('x-generation-id', generationId);
  };

  routes.add(
    'POST',
    '/api/v1/chat/completions',
    async (request, reply) => {
      const generationId = generationIds.get(request)!;
      const key = requestKey(request);
      request.log = reply.log = request.log.child({ generation_id: generationId });
      const body = request.body as { stream?: unknown } | null;
      const ctx = {
        generationId,
        key,
        body,
        app: appAttribution(request),
        signal: requestSignal(request, reply, services.requestAborts),
      };
      // Label values come from the catalog only: a caller must not be able to mint label values.
      const known = (model: unknown) =>
        typeof model === 'string' && services.catalog.models.has(model) ? model : 'unknown';
      const labels = (status: number, model: unknown, provider: string) => ({
        model: known(model),
        provider,
        status: String(status),
        streamed: String(ctx.body?.stream === true),
      });

      if (body && typeof body === 'object' && body.stream === true) {
        // A hijacked reply bypasses Fastify's header handling: carry over what hooks set (CORS, the generation id).
        // Fastify's onSend hook (http/route-auth.ts) does not run for it either: its nosniff is set here.
        const carried = Object.fromEntries(
          Object.entries(reply.getHeaders()).map(([name, value]) => [name, String(value)]),
        );
        carried['x-content-type-options'] = 'nosniff';
        const sink = new SseSink(reply.raw, carried, services.now);
        try {
          // Take over the socket only once we know the stream will start; errors before that are normal replies.
          reply.hijack();
          const provider = await streamChat(services.chat, ctx, sink);
          services.metrics.completions.inc(labels(200, (body as { model?: unknown }).model, provider ?? ''));
        } catch (error) {
          const rendered = renderError(error);
          services.metrics.completions.inc(labels(rendered.status, (body as { model?: unknown }).model, ''));
          if (!sink.started && !reply.raw.headersSent) {
            reply.raw.writeHead(
              rendered.status,
              Object.assign(
                {},
                carried,
                { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
                rendered.headers,
              ),
            );
            reply.raw.end(JSON.stringify(rendered.body));
          } else if (!reply.raw.writableEnded) {
            await sink.error(
              error instanceof TollgateError
                ? error
                : new TollgateError('internal', 'Internal server error', { metadata: { error_type: 'server' } }),
              {
                id: generationId,
                created: Math.floor(services.now() / 1000),
                model: known((body as { model?: unknown }).model),
                provider: '',
              },
            );
          }
          // As replyWithError logs them: our own failures in full, a known one (an upstream's) as its code.
          if (!(error instanceof TollgateError))
            request.log.error({ err: error, started: sink.started }, 'chat stream failed');
          else if (rendered.status >= 500)
            request.log.warn({ code: error.code, status: rendered.status }, error.message);
        }
        return reply;
      }

      try {
        const result = await completeChat(services.chat, ctx);
        const completion = result.body as { model: string; provider: string };
        services.metrics.completions.inc(labels(result.status, completion.model, completion.provider));
        return reply.code(result.status).send(result.body);
      } catch (error) {
        services.metrics.completions.inc(
          labels(renderError(error).status, (body as { model?: unknown } | null)?.model, ''),
        );
        throw error;
      }
    },
    {
      auth: 'inference',
      bodyLimit: services.config.server.body_limit_bytes,
      onRequest: assignGenerationId,
      doc: {
        summary: 'Create a chat completion',
        description:
          'OpenAI Chat Completions plus OpenRouter’s extensions (`models`, `provider`, …). With `stream: true` the answer is server-sent events: chunks, a usage chunk, `[DONE]`; an error after the first byte arrives in-band as a chunk with `error` and `finish_reason: "error"`.',
        tag: 'Inference',
        body: chatRequestDocSchema,
        responses: {
          200: {
            description: 'The completion, or its stream',
            json: chatCompletionSchema,
            events: chatCompletionChunkSchema,
            headers: { 'X-Generation-Id': 'The generation’s id (also the body’s `id`)' },
          },
        },
        errors: [402, 403, 404, 408, 429, 502, 503],
      },
    },
  );
}
