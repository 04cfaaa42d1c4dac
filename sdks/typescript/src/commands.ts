// Commands (scopes `commands:write`, `commands:read`): what an app asks
// Motor to have done. A send (`chat` + `contenido`) or any other kind
// (`tipo` + `parametros`) resolves with the stored command once Motor
// committed it (202); read one, list an instance's commands, cancel one
// while it is `aceptado` or `en_cola`.
import { segment, type Transport } from './http.js';
import { requiredKey, type Signal } from './subscriptions.js';
import type { Command, CommandList, CommandStatus, NewCommand, NewMessage } from './types.js';

export interface SendOptions extends Signal {
  /**
   * Required, 1–200 characters, per app and instance: a repeat resolves
   * with the command the first request stored (also after a relink); the
   * same key with another request is a 409 (`conflicto`).
   */
  idempotencyKey: string;
}

export interface SubmitOptions extends Signal {
  /** Optional, as for a send. */
  idempotencyKey?: string;
}

export interface CommandFilter extends Signal {
  /** `status`: any of these statuses. */
  statuses?: readonly CommandStatus[];
  /** `pagina`: from 1 (default 1). */
  page?: number;
  /** `por_pagina`: 1–200, default 50. */
  perPage?: number;
}

export class Commands {
  readonly #http: Transport;

  constructor(http: Transport) {
    this.#http = http;
  }

  /** Sends a message: a `mensaje` command, `en_cola`. */
  async send(instanceId: string, message: NewMessage, options: SendOptions): Promise<Command> {
    const { data } = await this.#http.call<Command>('POST', `/v1/instances/${segment(instanceId)}/messages`, {
      body: message,
      headers: { 'idempotency-key': requiredKey(options?.idempotencyKey) },
      signal: options.signal,
    });
    return data;
  }

  /** Submits any other command (a remote operation or instance control), `aceptado`. */
  async submit(instanceId: string, command: NewCommand, options: SubmitOptions = {}): Promise<Command> {
    const { data } = await this.#http.call<Command>('POST', `/v1/instances/${segment(instanceId)}/commands`, {
      body: command,
      headers: { 'idempotency-key': options.idempotencyKey },
      signal: options.signal,
    });
    return data;
  }

  /** One command, as it is now. */
  async get(id: string, options: Signal = {}): Promise<Command> {
    return (await this.#http.call<Command>('GET', `/v1/commands/${segment(id)}`, options)).data;
  }

  /** One page of an instance's commands, newest first. */
  async list(instanceId: string, filter: CommandFilter = {}): Promise<CommandList> {
    const { data } = await this.#http.call<CommandList>('GET', `/v1/instances/${segment(instanceId)}/commands`, {
      query: { status: filter.statuses, pagina: filter.page, por_pagina: filter.perPage },
      signal: filter.signal,
    });
    return data;
  }

  /**
   * Cancels a command while `aceptado` or `en_cola`: resolves with it,
   * `cancelado`. Once an executor took it (or it ended), 409: it may have
   * had an effect.
   */
  async cancel(id: string, options: Signal = {}): Promise<Command> {
    return (await this.#http.call<Command>('POST', `/v1/commands/${segment(id)}/cancel`, options)).data;
  }
}
