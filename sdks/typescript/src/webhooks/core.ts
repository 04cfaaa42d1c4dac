// What every profile shares: secrets and the HMAC key each profile derives
// from them, timestamp parsing, the symmetric ±300 s window, and the
// constant-time comparison. Mirrors crates/motor-receiver's verify.rs.
import { createHmac, timingSafeEqual } from 'node:crypto';

import { malformed, StaleWebhookError } from './errors.js';

/** How far a signed timestamp may be from the receiver's clock, either way. */
export const TOLERANCE_SECONDS = 300;

/**
 * At most this many signatures in one header are looked at: Motor sends one
 * per live key (two during a rotation); each one costs an HMAC of the body.
 */
export const MAX_SIGNATURES = 8;

/** The prefix Motor (and Standard Webhooks) put in front of a secret. */
export const SECRET_PREFIX = 'whsec_';

/**
 * A subscription's secret as Motor showed it (`whsec_…`), or with the key
 * id it was shown with (`whk_…`). With a key id it answers only for the
 * mw-v1 signature sent under that id; without one it checks them all.
 */
export type SecretInput = string | { value: string; keyId?: string };

export interface Secret {
  value: string;
  keyId: string | undefined;
}

export function secrets(input: readonly SecretInput[]): Secret[] {
  if (!Array.isArray(input)) throw new TypeError('secrets must be an array');
  return input.map((s) => (typeof s === 'string' ? { value: s, keyId: undefined } : { value: s.value, keyId: s.keyId }));
}

/**
 * The HMAC key of a secret for mw-v1, t-v1 and the t=,v1= contracts: the
 * whole string, prefix included, as UTF-8 (what `createHmac('sha256',
 * secret)` uses).
 */
export function textKey(secret: Secret): Buffer | undefined {
  return secret.value === '' ? undefined : Buffer.from(secret.value, 'utf8');
}

/**
 * The HMAC key for standard-webhooks: the base64 decoding of what follows
 * `whsec_`, padding optional. Motor's values are `whsec_` and 64 hex
 * digits, base64 characters too (48 bytes of key).
 */
export function base64Key(secret: Secret): Buffer | undefined {
  let text = secret.value.startsWith(SECRET_PREFIX) ? secret.value.slice(SECRET_PREFIX.length) : secret.value;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return undefined;
  if (text.includes('=') && text.length % 4 !== 0) return undefined;
  text = text.replace(/=+$/, '');
  if (text.length % 4 === 1) return undefined;
  const key = Buffer.from(text, 'base64');
  return key.length === 0 ? undefined : key;
}

/** 1 to 18 ASCII digits; the text itself is what was signed. */
export function parseTimestamp(header: string, text: string): number {
  if (!/^[0-9]{1,18}$/.test(text)) throw malformed(header, 'not unix seconds');
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw malformed(header, 'not unix seconds');
  return value;
}

export function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}

/** The symmetric window: `|now - timestamp| <= 300`. */
export function checkWindow(header: string, timestamp: number, now: number): void {
  if (Math.abs(now - timestamp) > TOLERANCE_SECONDS) throw new StaleWebhookError(header, timestamp, now);
}

export function hmac(key: Buffer, parts: readonly (string | Uint8Array)[]): Buffer {
  const mac = createHmac('sha256', key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

/** Constant-time comparison of an expected tag with a received one. */
export function matches(expected: Buffer, received: Buffer): boolean {
  return expected.length === received.length && timingSafeEqual(expected, received);
}

/** A v1 value: the 32 bytes of an HMAC-SHA256 in hex. */
export function decodeHex(header: string, value: string): Buffer {
  if (!/^[0-9a-fA-F]{64}$/.test(value)) throw malformed(header, 'v1 is not 64 hex digits');
  return Buffer.from(value, 'hex');
}

/** The raw body as bytes (a string is taken as the UTF-8 it was sent in). */
export function bytes(body: Uint8Array | string): Uint8Array {
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof Uint8Array) return body;
  throw new TypeError('the body must be the raw bytes (Buffer / Uint8Array) or their text');
}

/** What a verified request proved. */
export interface Verified {
  /** `mw-v1`, `t-v1`, `standard-webhooks`, `visito` or `asixto`. */
  profile: string;
  /** The signed timestamp (unix seconds). */
  timestamp: number;
  /**
   * The delivery id: signed in mw-v1 (`X-MW-Delivery-Id`) and
   * standard-webhooks (`webhook-id`); elsewhere the unsigned header when
   * present (logs only).
   */
  deliveryId: string | undefined;
  /** The key id that matched: the `X-MW-Key-Id` entry in mw-v1, else the secret's own. */
  keyId: string | undefined;
}

export interface VerifyInput {
  headers: import('./headers.js').HeaderInput;
  /** The raw body, exactly as received: never re-serialised JSON. */
  body: Uint8Array | string;
  /** One secret, or two during a rotation. */
  secrets: readonly SecretInput[];
  /** The receiver's clock in unix seconds (default: now). */
  now?: number;
}
