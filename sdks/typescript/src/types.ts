// The API's objects under the names an SDK user reads, all taken from the
// generated src/openapi.ts (never written by hand), so a field Motor adds to
// its OpenAPI document reaches these types with `npm run generate`.
import type { components } from './openapi.js';

type Schemas = components['schemas'];

/**
 * One event as Motor sends it everywhere (webhook body, stream, broker,
 * Kafka, ledger API). `D` types `data` when the caller knows its shape.
 */
export type Envelope<D = unknown> = Omit<Schemas['Envelope'], 'data'> & { data: D };
export type Origin = Schemas['Origin'];
/**
 * One event as a producer sends it. `data` is any JSON value but null (the
 * generated `NotNull` schema has no properties, which openapi-typescript
 * reads as an empty object, so it is widened here).
 */
export type NewEvent = Omit<Schemas['NewEvent'], 'data'> & { data: string | number | boolean | object };
export type LedgerPage = Schemas['LedgerPage'];
export type ErrorBody = Schemas['ErrorBody'];
export type ErrorDetail = Schemas['ErrorDetail'];
export type CursorExpiredBody = Schemas['CursorExpired'];

export type Subscription = Schemas['Subscription'];
export type SubscriptionState = Schemas['SubscriptionState'];
export type SubscriptionWithSecret = Schemas['SubscriptionWithSecret'];
export type SubscriptionList = Schemas['SubscriptionList'];
export type CreateSubscription = Schemas['CreateSubscription'];
export type UpdateSubscription = Schemas['UpdateSubscription'];
export type SigningProfile = Schemas['SigningProfile'];
export type SigningSecret = Schemas['Secreto'];
export type SigningKey = Schemas['Clave'];
export type Credentials = Schemas['Credenciales'];
export type SuspensionReason = Schemas['Motivo'];
export type TestResult = Schemas['TestResult'];
/** A subscription's product contract (`contrato`); absent from answers when `motor`. */
export type Contract = Schemas['Contrato'];
/** An event's or a subscription's environment (`entorno`): an event reaches only the subscriptions of its own; absent from answers when `live`. */
export type Environment = Schemas['Entorno'];
/**
 * A subscription's ordering (`orden`): `instancia` (`ordenado: true`),
 * `clave` (one at a time per instance and event `orden_clave`, keys in
 * parallel) or `ninguno` (`ordenado: false`); absent from answers unless `clave`.
 */
export type Ordering = Schemas['Orden'];
/** The receiver check's graded battery (`POST /v1/subscriptions/{id}/check`). */
export type CheckReport = Schemas['CheckReport'];
export type CheckRow = Schemas['CheckRow'];
export type CheckVerdict = Schemas['CheckVerdict'];
/** A short-lived token that opens one instance's stream as `?token=`. */
export type StreamToken = Schemas['StreamToken'];
export type CreateStreamToken = Schemas['CreateStreamToken'];

export type CreateReplay = Schemas['CreateReplay'];
export type Replay = Schemas['Replay'];
/** How far a replay has gone (`terminado` when none is pending). */
export type ReplayStatus = Schemas['ReplayStatus'];

export type Delivery = Schemas['Entrega'];
export type DeliveryDetail = Schemas['EntregaDetalle'];
export type DeliveryList = Schemas['EntregaList'];
export type DeliveryState = Schemas['DeliveryState'];
export type Attempt = Schemas['Intento'];
export type CreateRetry = Schemas['CreateRetry'];

/**
 * A command as Motor stores it. `contenido` and `parametros` are any JSON
 * object (the generated schema, an object with no properties, reads as an
 * empty one, so they are widened here, as `NewEvent`'s `data`).
 */
export type Command = Omit<Schemas['Comando'], 'contenido' | 'parametros'> & {
  contenido: Record<string, unknown> | null;
  parametros: Record<string, unknown> | null;
};
export type CommandList = Omit<Schemas['ComandoList'], 'commands'> & { commands: Command[] };
export type CommandKind = Schemas['CommandKind'];
export type OperationKind = Schemas['OperationKind'];
export type CommandStatus = Schemas['CommandStatus'];
export type CommandStage = Schemas['CommandStage'];
/** A send's body (`chat`, `contenido`, and the optional fields). */
export type NewMessage = Omit<Schemas['NuevoMensaje'], 'contenido'> & { contenido: Record<string, unknown> };
/** Another command's body (`tipo`, `parametros`, and the optional fields). */
export type NewCommand = Omit<Schemas['NuevoComando'], 'parametros'> & { parametros?: Record<string, unknown> | null };

/** A claimable command as the executor's long-poll answers it. */
export type PendingCommand = Schemas['ComandoPendiente'];
/** A command with everything an executor needs (`reclamos`, `reservado_hasta`). */
export type ExecutorCommand = Omit<Schemas['ComandoEjecutor'], 'contenido' | 'parametros'> & {
  contenido: Record<string, unknown> | null;
  parametros: Record<string, unknown> | null;
};
/** A claim's answer: the command, now `ejecutando`, and its lease (`reserva`). */
export type ClaimedCommand = Omit<Schemas['ComandoReclamado'], 'comando'> & { comando: ExecutorCommand };
/** An executor's report of a command's outcome (`ReporteComando`). */
export type CommandReport = Schemas['ReporteComando'];
/** An instance's connection state as its executor saw it change (`ReporteEstado`). */
export type StateReport = Schemas['ReporteEstado'];
/** What a state report did. */
export type InstanceState = Schemas['EstadoInstancia'];

export type Scope = Schemas['Scope'];
