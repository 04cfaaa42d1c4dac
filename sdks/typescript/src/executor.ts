// The executor's calls (scope `commands:execute`; docs/COMMANDS.md,
// "Executors"): the adapter that runs commands against the provider.
// Its loop is poll → claim → run it (heartbeat while it runs long) →
// report under the claim's lease:
//
//   for (;;) {
//     for (const pending of await motor.executor.poll(instanceId, { wait: 20 })) {
//       let claimed;
//       try {
//         claimed = await motor.executor.claim(pending.command_id);
//       } catch (error) {
//         if (error instanceof MotorApiError && error.status === 409) continue; // taken, or no longer due
//         throw error;
//       }
//       // … run claimed.comando against the provider …
//       await motor.executor.report(claimed.comando.id, { reserva: claimed.reserva, status: 'completado' });
//     }
//   }
import { segment, type Transport } from './http.js';
import type { Signal } from './subscriptions.js';
import type { ClaimedCommand, CommandReport, ExecutorCommand, InstanceState, PendingCommand, StateReport } from './types.js';

export interface PollOptions extends Signal {
  /** Seconds to wait for a command, 0–30 (default 0: answer at once). */
  wait?: number;
  /** 1–100, default 10. */
  limit?: number;
}

export class Executor {
  readonly #http: Transport;

  constructor(http: Transport) {
    this.#http = http;
  }

  /**
   * The instance's claimable commands in acceptance order, waiting up to
   * `wait` seconds for one; empty when none appeared. Answering is not
   * claiming: another executor may claim one first (409).
   */
  async poll(instanceId: string, options: PollOptions = {}): Promise<PendingCommand[]> {
    const { data } = await this.#http.call<{ commands: PendingCommand[] }>('GET', '/v1/executor/commands', {
      query: { instance: instanceId, wait: options.wait, limit: options.limit },
      signal: options.signal,
    });
    return data.commands;
  }

  /**
   * Takes a command (`aceptado`/`en_cola` → `ejecutando`). One already
   * claimed, finished, cancelled, not yet due, expired or for another
   * generation is a 409.
   */
  async claim(id: string, options: Signal = {}): Promise<ClaimedCommand> {
    return (await this.#http.call<ClaimedCommand>('POST', `/v1/executor/commands/${segment(id)}/claim`, options)).data;
  }

  /**
   * Extends the claim's lease (`reserva`) while the provider call runs
   * long: it then ends one lease length from now, never sooner than
   * before. Send it before `reservado_hasta`, every third of the lease or
   * so. A 409 means the lease is lost (another claim, a report, or the
   * sweeper made the command `ambiguo`): stop and do not report. Answers
   * the command, `reservado_hasta` its lease's new end.
   */
  async heartbeat(id: string, reserva: string, options: Signal = {}): Promise<ExecutorCommand> {
    const { data } = await this.#http.call<ExecutorCommand>('POST', `/v1/executor/commands/${segment(id)}/heartbeat`, {
      body: { reserva },
      signal: options.signal,
    });
    return data;
  }

  /**
   * Records the outcome under the claim's lease (`reserva`): `enviado` (a
   * send: `provider_message_id`, `chat`, `aceptado_en`), `completado`
   * (any other kind), `fallido` (`error_code`, `stage`, `server_code` with
   * `servidor`), `ambiguo` (`stage` `frontera`) or `en_cola` (a deferral:
   * `next_try`). A field the status does not take is a 422 naming it; a
   * lost lease a 409.
   */
  async report(id: string, report: CommandReport, options: Signal = {}): Promise<ExecutorCommand> {
    const { data } = await this.#http.call<ExecutorCommand>('POST', `/v1/executor/commands/${segment(id)}/report`, {
      body: report,
      signal: options.signal,
    });
    return data;
  }

  /**
   * Records the instance's connection state; a change appends
   * `state.changed`, and `revinculada` (with `conectada`) bumps its
   * `generation`.
   */
  async reportState(instanceId: string, report: StateReport, options: Signal = {}): Promise<InstanceState> {
    const { data } = await this.#http.call<InstanceState>('POST', `/v1/executor/instances/${segment(instanceId)}/state`, {
      body: report,
      signal: options.signal,
    });
    return data;
  }
}
