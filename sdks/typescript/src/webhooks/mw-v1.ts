// mw-v1, Motor's own profile: `X-MW-Timestamp`, `X-MW-Delivery-Id`,
// `X-MW-Key-Id: whk_new,whk_old` and `X-MW-Signature: v1=<hex>,v1=<hex>`
// (newest first, in matching positions), each
// hex(HMAC-SHA256(secret, timestamp + "." + delivery_id + "." + body)).
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
import { collect, required } from './headers.js';

export const MW_TIMESTAMP = 'x-mw-timestamp';
export const MW_DELIVERY_ID = 'x-mw-delivery-id';
export const MW_KEY_ID = 'x-mw-key-id';
export const MW_SIGNATURE = 'x-mw-signature';

/**
 * Verifies an mw-v1 request. Each (key id, signature) pair is checked
 * against the secrets given for that key id and those given without one;
 * any match accepts. Header shape errors come first, then the window
 * (stale), then the signatures.
 */
export function verifyMwV1(input: VerifyInput): Verified {
  const headers = collect(input.headers);
  const tsText = required(headers, MW_TIMESTAMP);
  const timestamp = parseTimestamp(MW_TIMESTAMP, tsText);
  const deliveryId = required(headers, MW_DELIVERY_ID);
  // The id is a field of the signed message: a '.' would let bytes move
  // between it and the body under the same signature.
  if (deliveryId.includes('.')) throw malformed(MW_DELIVERY_ID, "contains '.'");
  const keyIds = splitList(MW_KEY_ID, required(headers, MW_KEY_ID));
  const signatures = splitList(MW_SIGNATURE, required(headers, MW_SIGNATURE));
  if (keyIds.length !== signatures.length) throw malformed(MW_KEY_ID, 'not as many key ids as signatures');
  const pairs: [string, Buffer][] = [];
  signatures.forEach((item, i) => {
    const eq = item.indexOf('=');
    if (eq < 0) throw malformed(MW_SIGNATURE, 'not scheme=value');
    // Other schemes are a later Motor's: skipped, never an error.
    if (item.slice(0, eq) === 'v1') pairs.push([keyIds[i]!, decodeHex(MW_SIGNATURE, item.slice(eq + 1))]);
  });
  if (pairs.length === 0) throw malformed(MW_SIGNATURE, 'no v1 signature');
  checkWindow(MW_TIMESTAMP, timestamp, input.now ?? unixNow());

  const body = bytes(input.body);
  const macs = toSecrets(input.secrets).flatMap((secret) => {
    const key = textKey(secret);
    return key ? [{ keyId: secret.keyId, tag: hmac(key, [tsText, '.', deliveryId, '.', body]) }] : [];
  });
  for (const [keyId, tag] of pairs) {
    if (macs.some((m) => (m.keyId === undefined || m.keyId === keyId) && matches(m.tag, tag))) {
      return { profile: 'mw-v1', timestamp, deliveryId, keyId };
    }
  }
  throw badSignature();
}

/** A comma-separated list of non-empty trimmed items, at most MAX_SIGNATURES. */
function splitList(header: string, value: string): string[] {
  const items = value.split(',').map((i) => i.trim());
  if (items.some((i) => i === '')) throw malformed(header, 'empty list item');
  if (items.length > MAX_SIGNATURES) throw malformed(header, 'too many items');
  return items;
}
