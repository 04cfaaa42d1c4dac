// Deliveries (scope `events:read`; retry needs `deliveries:replay`): list
// newest first with filters, page through them, read one with its
// attempts, and send a `fallida` one again.
import { segment, type Transport } from './http.js';
import { requiredKey, type Signal } from './subscriptions.js';
import type { Delivery, DeliveryDetail, DeliveryList, DeliveryState } from './types.js';

export interface DeliveryFilter extends Signal {
  /** `estado`: any of these states. */
  states?: readonly DeliveryState[];
  /** `suscripcion_id`. */
  subscriptionId?: string;
  /** `instancia_id`. */
  instanceId?: string;
  /** `pagina`: from 1 (default 1). */
  page?: number;
  /** `por_pagina`: 1–200, default 50. */
  perPage?: number;
}

export interface RetryOptions extends Signal {
  /** Required by Motor, 1–200 characters (same key: the first answer again). */
  idempotencyKey: string;
  /** The `motivo`: why, kept for the audit (default `reintento manual`). */
  reason?: string;
}

export class Deliveries {
  readonly #http: Transport;

  constructor(http: Transport) {
    this.#http = http;
  }

  /** One page, newest first. */
  async list(filter: DeliveryFilter = {}): Promise<DeliveryList> {
    const { data } = await this.#http.call<DeliveryList>('GET', '/v1/deliveries', {
      query: {
        estado: filter.states,
        suscripcion_id: filter.subscriptionId,
        instancia_id: filter.instanceId,
        pagina: filter.page,
        por_pagina: filter.perPage,
      },
      signal: filter.signal,
    });
    return data;
  }

  /** Every page from `page` on, while `hay_mas`. */
  async *pages(filter: DeliveryFilter = {}): AsyncGenerator<DeliveryList, void, undefined> {
    for (let page = filter.page ?? 1; ; page++) {
      const list = await this.list({ ...filter, page });
      yield list;
      if (!list.hay_mas) return;
    }
  }

  /** One delivery with `intentos_detalle`. */
  async get(id: string, options: Signal = {}): Promise<DeliveryDetail> {
    return (await this.#http.call<DeliveryDetail>('GET', `/v1/deliveries/${segment(id)}`, options)).data;
  }

  /**
   * Sends a `fallida` delivery again: a new delivery of the same event whose
   * `replay_of` names this one. 409 when it is not `fallida`.
   */
  async retry(id: string, options: RetryOptions): Promise<Delivery> {
    const { data } = await this.#http.call<Delivery>('POST', `/v1/deliveries/${segment(id)}/retry`, {
      body: options.reason === undefined ? {} : { motivo: options.reason },
      headers: { 'idempotency-key': requiredKey(options?.idempotencyKey) },
      signal: options.signal,
    });
    return data;
  }
}
