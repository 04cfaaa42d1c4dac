// What a receiver keeps: a profile and the subscription's secrets (two
// during a rotation). `verify` takes the raw body and the headers and
// gives back the parsed envelope; `verifyRequest` reads a Node request.
import type { IncomingMessage } from 'node:http';

import type { Envelope } from '../types.js';
import { verifyAsixto, verifyVisito, type AsixtoEnvelope, type VisitoEnvelope } from './contracts.js';
import { base64Key, secrets as toSecrets, textKey, type SecretInput, type Verified, type VerifyInput } from './core.js';
import { WebhookVerificationError } from './errors.js';
import type { HeaderInput } from './headers.js';
import { verifyMwV1 } from './mw-v1.js';
import { verifyStandardWebhooks } from './standard-webhooks.js';
import { verifyTV1 } from './t-v1.js';

/** Motor's signing profiles (a subscription's `firma`) and the contracts' schemes. */
export type WebhookProfile = 'mw-v1' | 't-v1' | 'standard-webhooks' | 'visito' | 'asixto';

const VERIFY: Record<WebhookProfile, (input: VerifyInput) => Verified> = {
  'mw-v1': verifyMwV1,
  't-v1': verifyTV1,
  'standard-webhooks': verifyStandardWebhooks,
  visito: verifyVisito,
  asixto: verifyAsixto,
};

/** Each profile's body: Motor's envelope, or the contract's own. */
export interface BodyOf<D> {
  'mw-v1': Envelope<D>;
  't-v1': Envelope<D>;
  'standard-webhooks': Envelope<D>;
  visito: VisitoEnvelope<D>;
  asixto: AsixtoEnvelope<D>;
}

export interface Webhook<E> {
  /** The parsed body: the envelope. */
  envelope: E;
  /** What the signature proved (timestamp, delivery id, key id). */
  verified: Verified;
  /** The raw body it came from. */
  body: Uint8Array;
}

/** The largest body `verifyRequest` reads (Motor's cap is 256 KiB). */
export const MAX_BODY_BYTES = 1024 * 1024;

export class Verifier<P extends WebhookProfile = 'mw-v1', D = unknown> {
  readonly profile: P;
  readonly #secrets: SecretInput[];

  /**
   * Refuses no secret, an empty one, and for standard-webhooks one that is
   * not base64 after `whsec_`, so a misconfigured receiver fails when it
   * starts rather than answering 401 (which suspends the subscription).
   */
  constructor(options: { profile?: P; secrets: readonly SecretInput[] }) {
    const profile = (options.profile ?? 'mw-v1') as P;
    if (!(profile in VERIFY)) throw new TypeError(`unknown profile ${String(profile)}`);
    const list = toSecrets(options.secrets);
    if (list.length === 0) throw new TypeError('no secret was given');
    list.forEach((secret, i) => {
      if (!textKey(secret)) throw new TypeError(`secret #${i} is empty`);
      if (profile === 'standard-webhooks' && !base64Key(secret)) {
        throw new TypeError(`secret #${i} is not base64 after its whsec_ prefix (standard-webhooks needs it)`);
      }
    });
    this.profile = profile;
    this.#secrets = [...options.secrets];
  }

  /**
   * Verifies one request and parses its body. Throws
   * WebhookVerificationError (`status` 401, 400) or StaleWebhookError (408).
   */
  verify(headers: HeaderInput, body: Uint8Array | string, now?: number): Webhook<BodyOf<D>[P]> {
    const raw = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    const verified = VERIFY[this.profile]({ headers, body: raw, secrets: this.#secrets, now });
    let envelope: BodyOf<D>[P];
    try {
      envelope = JSON.parse(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8'));
    } catch {
      throw new WebhookVerificationError('invalid_body', 'the signed body is not JSON');
    }
    if (envelope === null || typeof envelope !== 'object' || Array.isArray(envelope)) {
      throw new WebhookVerificationError('invalid_body', 'the signed body is not an envelope');
    }
    return { envelope, verified, body: raw };
  }

  /**
   * Reads a Node request's body (at most MAX_BODY_BYTES) and verifies it
   * with the headers exactly as they arrived (`rawHeaders`, so a repeated
   * header is seen). With Express, mount the route without a JSON parser.
   */
  async verifyRequest(request: IncomingMessage, now?: number): Promise<Webhook<BodyOf<D>[P]>> {
    return this.verify(request, await readBody(request), now);
  }
}

/** The raw body of a Node request, refusing more than `limit` bytes. */
export async function readBody(request: AsyncIterable<Uint8Array | string>, limit = MAX_BODY_BYTES): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    size += buffer.length;
    if (size > limit) throw new WebhookVerificationError('invalid_body', `the body is larger than ${limit} bytes`);
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}
