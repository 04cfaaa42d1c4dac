// standard-webhooks (https://www.standardwebhooks.com, spec 1.0.0):
// `webhook-id`, `webhook-timestamp` and `webhook-signature: v1,<base64>
// [v1,<base64>]` (space separated), each base64(HMAC-SHA256(key, id + "."
// + timestamp + "." + body)), the key being the base64 decoding of the
// secret after `whsec_`.
import {
  base64Key,
  bytes,
  checkWindow,
  hmac,
  matches,
  MAX_SIGNATURES,
  parseTimestamp,
  secrets as toSecrets,
  unixNow,
  type Verified,
  type VerifyInput,
} from './core.js';
import { badSignature, malformed } from './errors.js';
import { collect, required } from './headers.js';

export const SW_ID = 'webhook-id';
export const SW_TIMESTAMP = 'webhook-timestamp';
export const SW_SIGNATURE = 'webhook-signature';

/**
 * Verifies a Standard Webhooks request. Other versions (`v1a`, asymmetric)
 * are skipped; any v1 that matches any secret accepts. A secret that is not
 * base64 after `whsec_` matches nothing (Verifier refuses it up front).
 */
export function verifyStandardWebhooks(input: VerifyInput): Verified {
  const headers = collect(input.headers);
  const id = required(headers, SW_ID);
  if (id.includes('.')) throw malformed(SW_ID, "contains '.'");
  const tsText = required(headers, SW_TIMESTAMP);
  const timestamp = parseTimestamp(SW_TIMESTAMP, tsText);
  const items = required(headers, SW_SIGNATURE)
    .split(' ')
    .filter((i) => i !== '');
  if (items.length > MAX_SIGNATURES) throw malformed(SW_SIGNATURE, 'too many signatures');
  const tags: Buffer[] = [];
  for (const item of items) {
    const comma = item.indexOf(',');
    if (comma < 0) throw malformed(SW_SIGNATURE, 'not version,signature');
    if (item.slice(0, comma) !== 'v1') continue;
    const value = item.slice(comma + 1);
    if (!/^[A-Za-z0-9+/]{43}=$/.test(value)) throw malformed(SW_SIGNATURE, 'v1 is not a base64 HMAC-SHA256');
    tags.push(Buffer.from(value, 'base64'));
  }
  if (tags.length === 0) throw malformed(SW_SIGNATURE, 'no v1 signature');
  checkWindow(SW_TIMESTAMP, timestamp, input.now ?? unixNow());

  const body = bytes(input.body);
  for (const secret of toSecrets(input.secrets)) {
    const key = base64Key(secret);
    if (!key) continue;
    const expected = hmac(key, [id, '.', tsText, '.', body]);
    if (tags.some((tag) => matches(expected, tag))) {
      return { profile: 'standard-webhooks', timestamp, deliveryId: id, keyId: secret.keyId };
    }
  }
  throw badSignature();
}
