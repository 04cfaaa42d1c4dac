// The `t=<unix>,v1=<hex>[,v1=<hex>]` family: one header carrying the
// timestamp and one v1 per live secret, each hex(HMAC-SHA256(secret,
// t + "." + body)). Motor's t-v1 sends it as X-MW-Signature; the Visito
// (X-Visito-Signature) and Asixto (Asixto-Signature) contracts use the same
// scheme under their own header, so the header name is a parameter here.
// The header travels once with every signature inside: a repeated header
// is refused, never joined.
import {
  bytes,
  checkWindow,
  decodeHex,
  hmac,
  matches,
  MAX_SIGNATURES,
  parseTimestamp,
  secrets as toSecrets,
  textKey,
  unixNow,
  type Verified,
  type VerifyInput,
} from './core.js';
import { badSignature, malformed } from './errors.js';
import { collect, optional, required } from './headers.js';

export const T_V1_SIGNATURE = 'x-mw-signature';
export const T_V1_DELIVERY_ID = 'x-mw-delivery-id';

export interface TimestampedScheme {
  /** The name reported in `Verified.profile`. */
  profile: string;
  /** The signature header (any case). */
  signatureHeader: string;
  /** An unsigned id header reported as `Verified.deliveryId`, if the contract sends one. */
  idHeader?: string;
}

/**
 * Verifies a `t=…,v1=…` signature under `scheme.signatureHeader`: every v1
 * against every secret, any match accepts. Unknown `key=value` items are
 * skipped (a later scheme); `t` must appear exactly once.
 */
export function verifyTimestamped(input: VerifyInput, scheme: TimestampedScheme): Verified {
  const name = scheme.signatureHeader.toLowerCase();
  const headers = collect(input.headers);
  const header = required(headers, name);
  const deliveryId = scheme.idHeader ? optional(headers, scheme.idHeader.toLowerCase()) : undefined;
  const items = header.split(',').map((i) => i.trim());
  if (items.length > MAX_SIGNATURES + 1) throw malformed(name, 'too many items');
  let tsText: string | undefined;
  const tags: Buffer[] = [];
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq < 0) throw malformed(name, 'not key=value');
    const key = item.slice(0, eq);
    const value = item.slice(eq + 1);
    if (key === 't') {
      if (tsText !== undefined) throw malformed(name, 't more than once');
      tsText = value;
    } else if (key === 'v1') {
      tags.push(decodeHex(name, value));
    }
  }
  if (tsText === undefined) throw malformed(name, 'no t=');
  const timestamp = parseTimestamp(name, tsText);
  if (tags.length === 0) throw malformed(name, 'no v1 signature');
  checkWindow(name, timestamp, input.now ?? unixNow());

  const body = bytes(input.body);
  for (const secret of toSecrets(input.secrets)) {
    const key = textKey(secret);
    if (!key) continue;
    const expected = hmac(key, [tsText, '.', body]);
    if (tags.some((tag) => matches(expected, tag))) {
      return { profile: scheme.profile, timestamp, deliveryId, keyId: secret.keyId };
    }
  }
  throw badSignature();
}

/** Motor's t-v1 profile: `X-MW-Signature: t=<unix>,v1=<hex>[,v1=<hex>]` over `t.body`. */
export function verifyTV1(input: VerifyInput): Verified {
  return verifyTimestamped(input, { profile: 't-v1', signatureHeader: T_V1_SIGNATURE, idHeader: T_V1_DELIVERY_ID });
}
