// Producers and readers of one instance's ledger: append one event or a
// batch (one transaction, 1–500), read a page, walk the pages the way the
// docs' loops do, and follow the stream (stream.ts).
import { segment, type Transport } from './http.js';
import { EventStream, type StreamOptions } from './stream.js';
import type { Envelope, LedgerPage, NewEvent, StreamToken } from './types.js';

export interface AppendOptions {
  /**
   * 1–200 characters. Repeating a request with the same key answers what
   * the first one stored; the same key with another body is a 409
   * (`conflicto`).
   */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

export interface ListOptions {
  /** Events with a seq greater than this (default 0: from the first). */
  afterSeq?: number;
  /** 1–500, default 100. */
  limit?: number;
  /** Up to 20 event types. */
  types?: readonly string[];
  signal?: AbortSignal;
}

/** A page of the ledger, typed by the caller's `data`. */
export type Page<D = unknown> = Omit<LedgerPage, 'events'> & { events: Envelope<D>[] };

export interface StreamTokenOptions {
  /** `segundos`: how long the token opens streams, 1–60 (default 60). */
  seconds?: number;
  signal?: AbortSignal;
}

export class Events {
  readonly #http: Transport;

  constructor(http: Transport) {
    this.#http = http;
  }

  /**
   * Appends one event; resolves with its stored envelope. A `source_id`
   * already stored for the instance resolves with the existing envelope
   * (same `event_id` and `seq`) and stores nothing.
   */
  async append<D = unknown>(instanceId: string, event: NewEvent, options: AppendOptions = {}): Promise<Envelope<D>> {
    if (Array.isArray(event)) throw new TypeError('append takes one event; appendBatch takes an array');
    return (await this.#post<Envelope<D>>(instanceId, event, options)).data;
  }

  /**
   * Appends 1–500 events in one transaction, all or none; resolves with
   * their envelopes in request order.
   */
  async appendBatch<D = unknown>(instanceId: string, events: readonly NewEvent[], options: AppendOptions = {}): Promise<Envelope<D>[]> {
    if (!Array.isArray(events)) throw new TypeError('appendBatch takes an array of events');
    return (await this.#post<Envelope<D>[]>(instanceId, events, options)).data;
  }

  #post<T>(instanceId: string, body: unknown, options: AppendOptions) {
    return this.#http.call<T>('POST', `/v1/instances/${segment(instanceId)}/events`, {
      body,
      headers: { 'idempotency-key': options.idempotencyKey },
      signal: options.signal,
    });
  }

  /** One page: events after `afterSeq`, `next_after_seq` and `has_more`. */
  async list<D = unknown>(instanceId: string, options: ListOptions = {}): Promise<Page<D>> {
    const { data } = await this.#http.call<Page<D>>('GET', `/v1/instances/${segment(instanceId)}/events`, {
      query: { after_seq: options.afterSeq, limit: options.limit, types: options.types },
      signal: options.signal,
    });
    return data;
  }

  /**
   * Every page from `afterSeq` on: asks for the next one with
   * `next_after_seq` while `has_more` is true. Save `page.next_after_seq`
   * after handling a page to resume there later.
   *
   * ```ts
   * for await (const page of motor.events.pages(instance, { afterSeq: saved })) {
   *   for (const event of page.events) await handle(event); // idempotent by event_id
   *   await save(page.next_after_seq);
   * }
   * ```
   */
  async *pages<D = unknown>(instanceId: string, options: ListOptions = {}): AsyncGenerator<Page<D>, void, undefined> {
    let afterSeq = options.afterSeq ?? 0;
    for (;;) {
      const page = await this.list<D>(instanceId, { ...options, afterSeq });
      yield page;
      if (!page.has_more) return;
      afterSeq = page.next_after_seq;
    }
  }

  /**
   * Follows the instance's events live over Server-Sent Events, resuming
   * after the last cursor whenever the connection drops. See EventStream.
   */
  stream<D = unknown>(instanceId: string, options: StreamOptions = {}): EventStream<D> {
    return new EventStream<D>(this.#http, instanceId, options);
  }

  /**
   * A short-lived token that opens this instance's stream as `?token=`
   * (SSE or WebSocket), for a browser's EventSource, which cannot send
   * the key. A stream already open goes on after it lapses.
   */
  async streamToken(instanceId: string, options: StreamTokenOptions = {}): Promise<StreamToken> {
    const body = options.seconds === undefined ? {} : { segundos: options.seconds };
    const { data } = await this.#http.call<StreamToken>('POST', `/v1/instances/${segment(instanceId)}/stream-tokens`, {
      body,
      signal: options.signal,
    });
    return data;
  }
}
