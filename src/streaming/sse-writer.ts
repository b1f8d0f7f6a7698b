/**
 * Formatting of the SSE events we send. Payloads go through JSON.stringify, which escapes CR and LF
 * inside strings, so one payload is always exactly one `data:` line and cannot inject events.
 */

/** The terminating event of an OpenAI-format stream. */
export const SSE_DONE = 'data: [DONE]\n\n';

/** Keep-alive sent while waiting for the upstream (docs/api.md). */
export const SSE_PROCESSING_COMMENT = ': TOLLGATE PROCESSING\n\n';

export function formatSseData(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

/** One event whose payload is JSON text already (one line: built from JSON.stringify pieces). */
export function formatSseJson(json: string): string {
  return `data: ${json}\n\n`;
}
