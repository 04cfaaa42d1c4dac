// One HTTP call to Motor over Node's fetch: the bearer token, JSON in and
// out, the timeout, and every non-2xx answer turned into a MotorApiError.
// The resources (events, subscriptions, deliveries) and the stream use it.
import { CursorExpiredError, MotorApiError, MotorConnectionError } from './errors.js';

/** Sent with every call, so that Motor's logs tell the SDK's calls apart. */
export const USER_AGENT = 'motor-sdk-typescript/0.1.0';

export interface MotorOptions {
  /** Motor's base URL, such as `http://127.0.0.1:8080`. */
  url: string;
  /** An API key's token (`Authorization: Bearer …`). */
  token: string;
  /** Per-call timeout in milliseconds (default 30 000). Streams have none. */
  timeoutMs?: number;
  /** Another fetch (a proxy agent, a test double of the network). */
  fetch?: typeof fetch;
}

export type Query = Record<string, string | number | boolean | readonly string[] | undefined | null>;

export interface CallOptions {
  query?: Query;
  body?: unknown;
  headers?: Record<string, string | undefined>;
  signal?: AbortSignal;
}

export interface Answer<T> {
  status: number;
  data: T;
}

export class Transport {
  readonly baseUrl: string;
  readonly #token: string;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(options: MotorOptions) {
    if (!options.url) throw new TypeError('MotorOptions.url is required');
    if (!options.token) throw new TypeError('MotorOptions.token is required');
    this.baseUrl = options.url.replace(/\/+$/, '');
    this.#token = options.token;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  url(path: string, query?: Query): string {
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value === undefined || value === null) continue;
      url.searchParams.set(name, Array.isArray(value) ? value.join(',') : String(value));
    }
    return url.toString();
  }

  headers(extra?: Record<string, string | undefined>): Record<string, string> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#token}`,
      accept: 'application/json',
      'user-agent': USER_AGENT,
    };
    for (const [name, value] of Object.entries(extra ?? {})) {
      if (value !== undefined) headers[name] = value;
    }
    return headers;
  }

  /** Sends without a timeout of its own and returns the raw response (streams). */
  async open(path: string, options: CallOptions & { accept?: string }): Promise<Response> {
    const headers = this.headers(options.headers);
    if (options.accept) headers.accept = options.accept;
    try {
      return await this.#fetch(this.url(path, options.query), { headers, signal: options.signal });
    } catch (cause) {
      if (options.signal?.aborted) throw cause;
      throw new MotorConnectionError(`GET ${path}: ${describe(cause)}`, { cause });
    }
  }

  /** One JSON call; resolves on 2xx, throws MotorApiError otherwise. */
  async call<T>(method: string, path: string, options: CallOptions = {}): Promise<Answer<T>> {
    const headers = this.headers(options.headers);
    let body: string | undefined;
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.body);
    }
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    let response: Response;
    let text: string;
    try {
      response = await this.#fetch(this.url(path, options.query), { method, headers, body, signal, redirect: 'manual' });
      text = await response.text();
    } catch (cause) {
      if (options.signal?.aborted) throw cause;
      const why = timeout.aborted ? `no answer within ${this.#timeoutMs} ms` : describe(cause);
      throw new MotorConnectionError(`${method} ${path}: ${why}`, { cause });
    }
    if (!response.ok) throw apiError(response, text);
    const data = (text === '' ? undefined : parseJson(text, method, path)) as T;
    return { status: response.status, data };
  }
}

/** The error for a non-2xx answer and its body text. */
export function apiError(response: Response, text: string): MotorApiError {
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON (a proxy's page): kept as text.
  }
  const detail = (body as { error?: { code?: unknown; message?: unknown; campo?: unknown } } | null)?.error;
  const code = typeof detail?.code === 'string' ? detail.code : `http_${response.status}`;
  const message = typeof detail?.message === 'string' ? detail.message : text.slice(0, 200) || response.statusText;
  const field = typeof detail?.campo === 'string' ? detail.campo : undefined;
  if (response.status === 410 && code === 'cursor_vencido') {
    const primer = (body as { primer_cursor?: unknown }).primer_cursor;
    if (typeof primer === 'number') return new CursorExpiredError(message, undefined, primer, body);
  }
  return new MotorApiError(response.status, code, message, { field, body, retryAfter: retryAfter(response) });
}

function retryAfter(response: Response): number | undefined {
  const value = response.headers.get('retry-after');
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

function parseJson(text: string, method: string, path: string): unknown {
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new MotorConnectionError(`${method} ${path}: the answer is not JSON`, { cause });
  }
}

export function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return `${error.message}${cause}`;
  }
  return String(error);
}

/** `/v1/…/{id}` with the id escaped. */
export function segment(id: string): string {
  if (typeof id !== 'string' || id === '') throw new TypeError('an id must be a non-empty string');
  return encodeURIComponent(id);
}
