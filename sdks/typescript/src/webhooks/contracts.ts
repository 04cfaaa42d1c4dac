// The other products' webhook contracts Motor is to serve exactly (seeds
// 001 and 003). Their signatures are the t=,v1= scheme of t-v1 under their
// own header; their envelopes are their own. Motor does not send them yet:
// these verifiers follow the seeds' documents and are tested against the
// seeds' algorithms, not against real Motor deliveries.
import type { Verified, VerifyInput } from './core.js';
import { verifyTimestamped } from './t-v1.js';

export const VISITO_SIGNATURE = 'x-visito-signature';
export const VISITO_EVENT_ID = 'x-visito-event-id';
export const ASIXTO_SIGNATURE = 'asixto-signature';

/** Visito's envelope (seed 001). */
export interface VisitoEnvelope<D = unknown> {
  eventId: string;
  type: string;
  schemaVersion: string;
  tenantId: string;
  occurredAt: string;
  data: D;
}

/** Asixto's envelope (seed 003); `replay_of` names the original of a replay. */
export interface AsixtoEnvelope<D = unknown> {
  id: string;
  type: string;
  /** Unix seconds. */
  created: number;
  environment: 'live' | 'test';
  data: D;
  replay_of?: string;
}

/**
 * Visito: `X-Visito-Signature: t=<unix>,v1=<hex>` over `t.body`, with
 * `X-Visito-Event-Id` (reported as `deliveryId`; deduplicate by the body's
 * `eventId`).
 */
export function verifyVisito(input: VerifyInput): Verified {
  return verifyTimestamped(input, { profile: 'visito', signatureHeader: VISITO_SIGNATURE, idHeader: VISITO_EVENT_ID });
}

/**
 * Asixto: `Asixto-Signature: t=<unix>,v1=<hex>[,v1=…]` (one v1 per active
 * secret) over `t.body`; deduplicate by the body's `id`.
 */
export function verifyAsixto(input: VerifyInput): Verified {
  return verifyTimestamped(input, { profile: 'asixto', signatureHeader: ASIXTO_SIGNATURE });
}
