// Deliveries (scope `events:read`; retry needs `deliveries:replay`): list
// newest first with filters, page through them, read one with its
// attempts, and send a `fallida` one again.
import { segment, type Transport } from './http.js';
import { requiredKey, type Signal } from './subscriptions.js';
import type { Delivery, DeliveryDetail, DeliveryList, DeliveryState } from './types.js';

export interface DeliveryFilter extends Signal {
  estado?: readonly DeliveryState[];
  suscripcionId?: string;
  instanciaId?: string;
  /** From 1 (default 1). */
  pagina?: number;
  /** 1–200, default 50. */
  porPagina?: number;
}

export interface RetryOptions extends Signal {
  /** Required by Motor, 1–200 characters (same key: the first answer again). */
  idempotencyKey: string;
  /** Why, kept for the audit (default `reintento manual`). */
  motivo?: string;
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
        estado: filter.estado,
        suscripcion_id: filter.suscripcionId,
        instancia_id: filter.instanciaId,
        pagina: filter.pagina,
        por_pagina: filter.porPagina,
      },
      signal: filter.signal,
    });
    return data;
  }

  /** Every page from `pagina` on, while `hay_mas`. */
  async *pages(filter: DeliveryFilter = {}): AsyncGenerator<DeliveryList, void, undefined> {
    for (let pagina = filter.pagina ?? 1; ; pagina++) {
      const page = await this.list({ ...filter, pagina });
      yield page;
      if (!page.hay_mas) return;
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
      body: options.motivo === undefined ? {} : { motivo: options.motivo },
      headers: { 'idempotency-key': requiredKey(options?.idempotencyKey) },
      signal: options.signal,
    });
    return data;
  }
}
