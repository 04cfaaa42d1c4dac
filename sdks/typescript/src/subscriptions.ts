// Subscriptions (scope `subscriptions:manage`) and their replays (scope
// `deliveries:replay`): create, list, get, patch with `version_esperada`,
// delete, rotate the secret, send a test, check the receiver, replay and
// follow a replay's progress.
import { segment, type Transport } from './http.js';
import type {
  CheckReport,
  CreateReplay,
  CreateSubscription,
  Replay,
  ReplayStatus,
  Subscription,
  SubscriptionList,
  SubscriptionState,
  SubscriptionWithSecret,
  TestResult,
  UpdateSubscription,
} from './types.js';

export interface Signal {
  signal?: AbortSignal;
}

export interface ReplayOptions extends Signal {
  /**
   * Required by Motor, 1–200 characters: the same key answers the first
   * replay again; the same key with another body is a 409 (`conflicto`).
   */
  idempotencyKey: string;
}

export class Subscriptions {
  readonly #http: Transport;

  constructor(http: Transport) {
    this.#http = http;
  }

  /** Creates one; the answer carries the secret, shown only here and on rotate. */
  async create(body: CreateSubscription, options: Signal = {}): Promise<SubscriptionWithSecret> {
    return (await this.#http.call<SubscriptionWithSecret>('POST', '/v1/subscriptions', { body, signal: options.signal })).data;
  }

  /** The app's subscriptions in these states (`estado`; default `activa,pausada,suspendida`). */
  async list(options: { states?: readonly SubscriptionState[] } & Signal = {}): Promise<Subscription[]> {
    const { data } = await this.#http.call<SubscriptionList>('GET', '/v1/subscriptions', {
      query: { estado: options.states },
      signal: options.signal,
    });
    return data.suscripciones;
  }

  async get(id: string, options: Signal = {}): Promise<Subscription> {
    return (await this.#http.call<Subscription>('GET', `/v1/subscriptions/${segment(id)}`, options)).data;
  }

  /**
   * Changes the fields given. Pass `version_esperada` (the `version` you
   * read) so that a change made meanwhile by someone else is a 409
   * (`conflicto`) instead of being overwritten.
   */
  async update(id: string, patch: UpdateSubscription, options: Signal = {}): Promise<Subscription> {
    return (await this.#http.call<Subscription>('PATCH', `/v1/subscriptions/${segment(id)}`, { body: patch, signal: options.signal })).data;
  }

  /** `eliminada`: no new deliveries, its pending ones are not sent; no event is deleted. */
  async delete(id: string, options: Signal = {}): Promise<void> {
    await this.#http.call<void>('DELETE', `/v1/subscriptions/${segment(id)}`, options);
  }

  /**
   * A new secret; the old one keeps signing beside it for the rotation
   * window (`webhooks.ventana_rotacion_minutos`), so give the receiver both.
   */
  async rotate(id: string, options: Signal = {}): Promise<SubscriptionWithSecret> {
    return (await this.#http.call<SubscriptionWithSecret>('POST', `/v1/subscriptions/${segment(id)}/rotate`, options)).data;
  }

  /** Sends a signed `webhook.test` (not in the ledger) and reports how it went. */
  async test(id: string, options: Signal = {}): Promise<TestResult> {
    return (await this.#http.call<TestResult>('POST', `/v1/subscriptions/${segment(id)}/test`, options)).data;
  }

  /**
   * Sends the receiver-check battery to a webhook subscription's URL and
   * grades the answers. A broker subscription, a deleted one or one with
   * no live key is a 409.
   */
  async check(id: string, options: Signal = {}): Promise<CheckReport> {
    return (await this.#http.call<CheckReport>('POST', `/v1/subscriptions/${segment(id)}/check`, options)).data;
  }

  /** How far a replay has gone: `terminado` when none of its deliveries is pending. */
  async getReplay(id: string, replayId: string, options: Signal = {}): Promise<ReplayStatus> {
    const path = `/v1/subscriptions/${segment(id)}/replays/${segment(replayId)}`;
    return (await this.#http.call<ReplayStatus>('GET', path, options)).data;
  }

  /**
   * Sends events again (new delivery ids, same envelopes, in the replay's
   * own ordered lane): a range of one instance's ledger or up to 500 event ids.
   */
  async replay(id: string, body: CreateReplay, options: ReplayOptions): Promise<Replay> {
    const { data } = await this.#http.call<Replay>('POST', `/v1/subscriptions/${segment(id)}/replays`, {
      body,
      headers: { 'idempotency-key': requiredKey(options?.idempotencyKey) },
      signal: options.signal,
    });
    return data;
  }
}

export function requiredKey(key: string | undefined): string {
  if (typeof key !== 'string' || key === '') throw new TypeError('idempotencyKey is required (1–200 characters)');
  return key;
}
