/** The CLI's HTTP client for the admin API (so the CLI works the same against one process or a fleet). */
import { request } from 'undici';

export class AdminApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export class AdminClient {
  constructor(
    private readonly baseUrl: string,
    /** Resolved at the first call (it may prompt): see admin-token-source.ts. */
    private readonly token: () => Promise<string | undefined>,
  ) {}

  async call(method: Method, path: string, body?: unknown): Promise<unknown> {
    return (await this.send(method, path, body)).json;
  }

  /** The same, with the answer's status (201 created, 200 a replay that changed nothing). */
  async send(method: Method, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
    const token = await this.token();
    if (!token)
      throw new AdminApiError(
        0,
        'an admin token is required: set TOLLGATE_ADMIN_TOKEN (or run the command in a terminal to be prompted)',
      );
    let response;
    try {
      response = await request(`${this.baseUrl.replace(/\/+$/, '')}/api/v1/admin${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      throw new AdminApiError(0, `cannot reach the gateway at ${this.baseUrl}: ${(error as Error).message}`);
    }
    const text = await response.body.text();
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      throw new AdminApiError(response.statusCode, `unexpected response (HTTP ${response.statusCode})`);
    }
    if (response.statusCode >= 400) {
      const message =
        (json as { error?: { message?: string } } | null)?.error?.message ?? `HTTP ${response.statusCode}`;
      throw new AdminApiError(response.statusCode, message);
    }
    return { status: response.statusCode, json };
  }
}
