// Following an instance's events over Server-Sent Events (fetch, no
// WebSocket): the cursor is the seq of the last event received; a dropped
// connection, a server's `: fin motivo=… cursor=N`, a 503 or a silent
// connection reconnect with `Last-Event-ID: <cursor>` (no gap, no
// duplicate). A 410 is never resumed silently: it throws
// CursorExpiredError with `firstCursor` (`primer_cursor`), and the caller decides.
import { setTimeout as sleep } from 'node:timers/promises';

import { CursorExpiredError, MotorApiError, MotorError } from './errors.js';
import { apiError, describe, segment, type Transport } from './http.js';
import { parseSse } from './sse.js';
import type { Envelope } from './types.js';

export interface StreamOptions {
  /**
   * The cursor to resume after: the seq of the last event already handled.
   * `0` starts at the first event still resumable; absent starts with the
   * events committed after the stream opens.
   */
  after?: number;
  /** Only these event types (up to 20). */
  types?: readonly string[];
  /** Ends the stream (the iteration returns) when aborted. */
  signal?: AbortSignal;
  /** Reconnection back-off: from `initialDelayMs` (200) doubling to `maxDelayMs` (10 000). */
  retry?: { initialDelayMs?: number; maxDelayMs?: number };
  /**
   * A connection that sent nothing (not even Motor's `: ping`, every 15 s)
   * for this long is taken as dead and reopened. Default 45 000 ms.
   */
  idleTimeoutMs?: number;
  /** Told each time the connection ends and the stream resumes. */
  onReconnect?: (info: ReconnectInfo) => void;
}

export interface ReconnectInfo {
  /** The cursor the stream resumes after (undefined: from now). */
  cursor: number | undefined;
  /** `fin motivo=<lento|apagado|error>`, `cortada`, `silencio`, `http_503`, … */
  reason: string;
  error?: unknown;
}

/**
 * An instance's events, live, as an async iterable of envelopes. Iterate
 * it once; `cursor` is where to resume after a restart of your process.
 *
 * ```ts
 * const stream = motor.events.stream(instance, { after: await loadCursor() });
 * for await (const event of stream) {
 *   await handle(event);
 *   await saveCursor(stream.cursor);
 * }
 * ```
 *
 * Throws MotorApiError for a refusal that waiting cannot fix (401, 403,
 * 404, 422) and CursorExpiredError (410) when the cursor left the
 * resumption window: restart explicitly with
 * `motor.events.stream(instance, { after: error.firstCursor })`.
 */
export class EventStream<D = unknown> implements AsyncIterable<Envelope<D>> {
  readonly #http: Transport;
  readonly #path: string;
  readonly #options: StreamOptions;
  readonly #closer = new AbortController();
  #cursor: number | undefined;
  #started = false;

  constructor(http: Transport, instanceId: string, options: StreamOptions) {
    const after = options.after;
    if (after !== undefined && !(Number.isSafeInteger(after) && after >= 0)) {
      throw new TypeError(`StreamOptions.after must be an integer >= 0, not ${String(after)}`);
    }
    this.#http = http;
    this.#path = `/v1/instances/${segment(instanceId)}/events/stream`;
    this.#options = options;
    this.#cursor = after;
  }

  /** The seq of the last event received (or where the stream opened). */
  get cursor(): number | undefined {
    return this.#cursor;
  }

  /** Ends the stream; a pending iteration returns. */
  close(): void {
    this.#closer.abort();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Envelope<D>, void, undefined> {
    if (this.#started) throw new MotorError('an EventStream can be iterated only once');
    this.#started = true;
    const stop = this.#options.signal ? AbortSignal.any([this.#options.signal, this.#closer.signal]) : this.#closer.signal;
    const initial = this.#options.retry?.initialDelayMs ?? 200;
    const max = this.#options.retry?.maxDelayMs ?? 10_000;
    let delay = initial;
    try {
      while (!stop.aborted) {
        const connection = new AbortController();
        const signal = AbortSignal.any([stop, connection.signal]);
        const idle = this.#options.idleTimeoutMs ?? 45_000;
        let response: Response;
        // A connection that opens no answer within the idle time is dead too.
        const opening = setTimeout(() => connection.abort(), idle);
        try {
          response = await this.#http.open(this.#path, {
            query: { types: this.#options.types },
            headers: { 'last-event-id': this.#cursor === undefined ? undefined : String(this.#cursor) },
            accept: 'text/event-stream',
            signal,
          });
        } catch (error) {
          if (stop.aborted) return;
          this.#told(connection.signal.aborted ? 'silencio' : 'conexion', error);
          await pause(delay, stop);
          delay = Math.min(delay * 2, max);
          continue;
        } finally {
          clearTimeout(opening);
        }
        if (response.status !== 200) {
          const error = apiError(response, await response.text().catch(() => ''));
          if (error instanceof CursorExpiredError) {
            throw new CursorExpiredError(error.message, this.#cursor, error.firstCursor, error.body);
          }
          if (!retryable(error)) throw error;
          this.#told(error.code, error);
          await pause(Math.max(delay, (error.retryAfter ?? 0) * 1000), stop);
          delay = Math.min(delay * 2, max);
          continue;
        }
        const opened = Date.now();
        let delivered = false;
        let reason = 'cortada';
        let failure: unknown;
        const watched = watch(response.body!, idle, () => {
          reason = 'silencio';
          connection.abort();
        });
        try {
          for await (const item of parseSse(watched)) {
            if (item.kind === 'comment') {
              // `: fin motivo=<lento|apagado|error> cursor=N`: the server
              // ends the stream and says where to resume (past events the
              // `types` filter skipped, too).
              if (item.text.startsWith('fin ')) {
                reason = item.text;
                const at = /(?:^| )cursor=(\d+)(?: |$)/.exec(item.text);
                if (at) this.#cursor = Math.max(this.#cursor ?? 0, Number(at[1]));
              }
              continue;
            }
            if (item.id !== undefined && /^\d+$/.test(item.id)) this.#cursor = Number(item.id);
            if (item.data === undefined) continue;
            let envelope: Envelope<D>;
            try {
              envelope = JSON.parse(item.data) as Envelope<D>;
            } catch (cause) {
              throw new MotorError(`stream event ${item.id ?? '?'} is not JSON`, { cause });
            }
            delivered = true;
            yield envelope;
          }
        } catch (error) {
          if (stop.aborted) return;
          if (error instanceof MotorError) throw error;
          failure = error;
        } finally {
          connection.abort();
        }
        if (stop.aborted) return;
        this.#told(reason, failure);
        // A connection that served events or lived a while was healthy:
        // back-off starts over. One cut right after it opened backs off,
        // so a proxy that drops every stream is not hammered.
        if (delivered || Date.now() - opened > HEALTHY_MS) delay = initial;
        await pause(delay, stop);
        delay = Math.min(delay * 2, max);
      }
    } finally {
      this.#closer.abort();
    }
  }

  #told(reason: string, error?: unknown): void {
    this.#options.onReconnect?.({ cursor: this.#cursor, reason, error: error === undefined ? undefined : describe(error) });
  }
}

/** A connection open this long counts as healthy even without events. */
const HEALTHY_MS = 5_000;

/** 429, 503 and other 5xx are worth waiting for; other refusals are not. */
function retryable(error: MotorApiError): boolean {
  return error.status === 429 || error.status >= 500;
}

async function pause(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await sleep(ms, undefined, { signal });
  } catch {
    // Aborted: the caller's loop sees `signal.aborted`.
  }
}

/**
 * The body's chunks; `silent` is called when one is awaited for `idle` ms.
 * Time spent by the caller between chunks (handling an event) is not
 * silence: the clock runs only while a chunk is awaited.
 */
async function* watch(body: ReadableStream<Uint8Array>, idle: number, silent: () => void): AsyncGenerator<Uint8Array> {
  const chunks = (body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  try {
    for (;;) {
      const timer = setTimeout(silent, idle);
      let next: IteratorResult<Uint8Array>;
      try {
        next = await chunks.next();
      } finally {
        clearTimeout(timer);
      }
      if (next.done) return;
      yield next.value;
    }
  } finally {
    await chunks.return?.();
  }
}
