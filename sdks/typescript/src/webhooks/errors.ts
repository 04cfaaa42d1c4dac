// Why a webhook request was refused, and what the receiver should answer:
// 408 for a stale timestamp (Motor retries with a fresh signature), 400 for
// a signed body that is not JSON, 401 for everything else (Motor suspends
// the subscription and alerts its operator, so answer it only to requests
// you really did not sign).

export type VerifyFailure =
  /** A header the profile needs is absent or empty. */
  | 'missing_header'
  /** A header that travels once arrived more than once (never joined). */
  | 'repeated_header'
  /** A header is present but not of the profile's shape. */
  | 'malformed_header'
  /** The signed timestamp is more than 300 s from the receiver's clock. */
  | 'stale'
  /** Well-formed headers, but no signature matches a secret you hold. */
  | 'bad_signature'
  /** The signature matched, but the body is not JSON. */
  | 'invalid_body';

export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
  readonly reason: VerifyFailure;
  /** The header at fault (lower case), when one is. */
  readonly header: string | undefined;

  constructor(reason: VerifyFailure, message: string, header?: string) {
    super(message);
    this.reason = reason;
    this.header = header;
  }

  /** The status to answer Motor. */
  get status(): 400 | 401 | 408 {
    if (this.reason === 'stale') return 408;
    if (this.reason === 'invalid_body') return 400;
    return 401;
  }
}

/**
 * The timestamp is outside the symmetric ±300 s window: a clock problem or
 * a captured request sent again. Answer 408 (never 401, which suspends).
 */
export class StaleWebhookError extends WebhookVerificationError {
  override name = 'StaleWebhookError';
  readonly timestamp: number;
  readonly now: number;

  constructor(header: string, timestamp: number, now: number) {
    super('stale', `timestamp ${timestamp} is outside the 300 s window around ${now}`, header);
    this.timestamp = timestamp;
    this.now = now;
  }
}

export const missing = (header: string) => new WebhookVerificationError('missing_header', `header ${header} is missing`, header);
export const repeated = (header: string) =>
  new WebhookVerificationError('repeated_header', `header ${header} arrived more than once`, header);
export const malformed = (header: string, why: string) =>
  new WebhookVerificationError('malformed_header', `header ${header} is malformed: ${why}`, header);
export const badSignature = () => new WebhookVerificationError('bad_signature', 'no signature matches a known secret');
