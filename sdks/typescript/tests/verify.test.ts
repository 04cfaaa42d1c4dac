// The verifiers against hand-signed requests (an HMAC written here, apart
// from the code under test), the tables of crates/motor-receiver's tests,
// and the Standard Webhooks specification's published vectors.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';

import {
  StaleWebhookError,
  Verifier,
  verifyMwV1,
  verifyStandardWebhooks,
  verifyTV1,
  WebhookVerificationError,
  type VerifyFailure,
} from '../src/index.js';

/** 2026-10-24T15:08:13Z, the clock of every table. */
const NOW = 1_792_854_493;
const SECRET_A = 'whsec_9c1f0e2d3b4a59687766554433221100ffeeddccbbaa99887766554433221100';
const SECRET_B = 'whsec_00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff';
const WRONG = 'whsec_0000000000000000000000000000000000000000000000000000000000000000';
const BODY = Buffer.from(
  '{"schema_version":1,"event_id":"e1f0c2d4-0000-4000-8000-000000001187","instance_id":"8a1d2c3e-0000-4000-8000-0000000000a1","seq":1187,"type":"webhook.test","occurred_at":"2026-10-24T15:08:12Z","received_at":"2026-10-24T15:08:13Z","generation":1,"origin":"operator","data":{"prueba":true}}',
);
const DELIVERY = '3c9a7e55-0000-4000-8000-0000000000e1';
const KEY_A = 'whk_0a';
const KEY_B = 'whk_0b';

type Pairs = [string, string][];
const hex = (key: string | Buffer, ...parts: (string | Buffer)[]) => {
  const mac = createHmac('sha256', key);
  for (const p of parts) mac.update(p);
  return mac.digest('hex');
};
const flipped = (body: Buffer) => {
  const copy = Buffer.from(body);
  copy[10] = copy[10]! ^ 1;
  return copy;
};
const set = (h: Pairs, name: string, value: string): Pairs => [...h.filter(([n]) => n.toLowerCase() !== name.toLowerCase()), [name, value]];
const without = (h: Pairs, name: string): Pairs => h.filter(([n]) => n.toLowerCase() !== name.toLowerCase());

function refused(fn: () => unknown, reason: VerifyFailure, header?: string): WebhookVerificationError {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof WebhookVerificationError, `not a WebhookVerificationError: ${String(error)}`);
    assert.equal(error.reason, reason, error.message);
    if (header !== undefined) assert.equal(error.header, header);
    assert.equal(error.status, reason === 'stale' ? 408 : reason === 'invalid_body' ? 400 : 401);
    return error;
  }
  assert.fail(`accepted; expected ${reason}`);
}

describe('mw-v1', () => {
  const sign = (ts: number, keys: [string, string][], delivery = DELIVERY, body = BODY): Pairs => [
    ['X-MW-Timestamp', String(ts)],
    ['X-MW-Delivery-Id', delivery],
    ['X-MW-Key-Id', keys.map(([id]) => id).join(',')],
    ['X-MW-Signature', keys.map(([, secret]) => `v1=${hex(secret, String(ts), '.', delivery, '.', body)}`).join(',')],
  ];
  const signed = () => sign(NOW, [[KEY_A, SECRET_A]]);
  const check = (headers: Pairs, secrets: Parameters<typeof verifyMwV1>[0]['secrets'] = [SECRET_A], body: Buffer = BODY, now = NOW) =>
    verifyMwV1({ headers, body, secrets, now });

  it('accepts the signed request and reports what it proved', () => {
    assert.deepEqual(check(signed()), { profile: 'mw-v1', timestamp: NOW, deliveryId: DELIVERY, keyId: KEY_A });
    assert.equal(check(signed(), [{ keyId: KEY_A, value: SECRET_A }]).keyId, KEY_A);
  });

  it("verifies seed 000's curl example (signed with openssl)", () => {
    const headers: Pairs = [
      ['X-MW-Key-Id', 'SECRETO_KEY_ID'],
      ['X-MW-Timestamp', '1792854493'],
      ['X-MW-Delivery-Id', DELIVERY],
      ['X-MW-Signature', 'v1=8f81d41de4e69a1926a675cd6f2abe48200f639f23b3a45225792a6bed248821'],
    ];
    assert.equal(check(headers, ['TU_SECRETO_DE_WEBHOOK']).profile, 'mw-v1');
  });

  it('refuses every malformed shape with the header named', () => {
    const sig = `v1=${hex(SECRET_A, String(NOW), '.', DELIVERY, '.', BODY)}`;
    const table: [string, Pairs, VerifyFailure, string][] = [
      ['no timestamp', without(signed(), 'x-mw-timestamp'), 'missing_header', 'x-mw-timestamp'],
      ['empty timestamp', set(signed(), 'X-MW-Timestamp', ' '), 'missing_header', 'x-mw-timestamp'],
      ['timestamp not digits', set(signed(), 'X-MW-Timestamp', '17928544.3'), 'malformed_header', 'x-mw-timestamp'],
      ['negative timestamp', set(signed(), 'X-MW-Timestamp', '-1'), 'malformed_header', 'x-mw-timestamp'],
      ['no delivery id', without(signed(), 'x-mw-delivery-id'), 'missing_header', 'x-mw-delivery-id'],
      ['dot in delivery id', set(signed(), 'X-MW-Delivery-Id', 'a.b'), 'malformed_header', 'x-mw-delivery-id'],
      ['no key id', without(signed(), 'x-mw-key-id'), 'missing_header', 'x-mw-key-id'],
      ['no signature', without(signed(), 'x-mw-signature'), 'missing_header', 'x-mw-signature'],
      ['fewer key ids', set(signed(), 'X-MW-Signature', `${sig},${sig}`), 'malformed_header', 'x-mw-key-id'],
      ['empty list item', set(set(signed(), 'X-MW-Signature', `${sig},`), 'X-MW-Key-Id', `${KEY_A},`), 'malformed_header', 'x-mw-key-id'],
      ['not scheme=value', set(signed(), 'X-MW-Signature', 'v1'), 'malformed_header', 'x-mw-signature'],
      ['v1 not hex', set(signed(), 'X-MW-Signature', `v1=${'zz'.repeat(32)}`), 'malformed_header', 'x-mw-signature'],
      ['v1 short', set(signed(), 'X-MW-Signature', 'v1=abcd'), 'malformed_header', 'x-mw-signature'],
      ['only another scheme', set(signed(), 'X-MW-Signature', `v2=${'ab'.repeat(32)}`), 'malformed_header', 'x-mw-signature'],
      ['control character', set(signed(), 'X-MW-Delivery-Id', 'a\u0001b'), 'malformed_header', 'x-mw-delivery-id'],
      [
        'nine signatures',
        set(set(signed(), 'X-MW-Signature', Array(9).fill(sig).join(',')), 'X-MW-Key-Id', Array(9).fill(KEY_A).join(',')),
        'malformed_header',
        'x-mw-key-id',
      ],
    ];
    for (const [name, headers, reason, header] of table) {
      const error = refused(() => check(headers), reason, header);
      assert.ok(error.message.length > 0, name);
    }
  });

  it('refuses a repeated header even when each copy would verify', () => {
    for (const name of ['X-MW-Signature', 'x-mw-signature', 'X-MW-Key-Id', 'X-MW-Timestamp', 'X-MW-Delivery-Id']) {
      const h = signed();
      const value = h.find(([n]) => n.toLowerCase() === name.toLowerCase())![1];
      refused(() => check([...h, [name, value]]), 'repeated_header', name.toLowerCase());
    }
    // The same through a record of arrays (Node's headersDistinct).
    const record = Object.fromEntries(signed().map(([n, v]) => [n.toLowerCase(), [v]]));
    record['x-mw-signature'] = [record['x-mw-signature']![0]!, record['x-mw-signature']![0]!];
    refused(() => check(record as never), 'repeated_header', 'x-mw-signature');
  });

  it('tolerates spaces and skips unknown schemes', () => {
    const sig = hex(SECRET_A, String(NOW), '.', DELIVERY, '.', BODY);
    const h = set(set(signed(), 'X-MW-Signature', ` v2=${'ab'.repeat(32)} , v1=${sig} `), 'X-MW-Key-Id', `${KEY_B}, ${KEY_A}`);
    assert.equal(check(h).keyId, KEY_A);
  });

  it('has a symmetric 300 s window, answered 408, checked before the signature', () => {
    for (const [offset, ok] of [[-301, false], [-300, true], [300, true], [301, false]] as const) {
      const h = sign(NOW + offset, [[KEY_A, SECRET_A]]);
      if (ok) assert.equal(check(h).timestamp, NOW + offset);
      else {
        const error = refused(() => check(h), 'stale');
        assert.ok(error instanceof StaleWebhookError);
        assert.equal(error.timestamp, NOW + offset);
        assert.equal(error.now, NOW);
      }
    }
    refused(() => check(sign(NOW - 301, [[KEY_A, WRONG]])), 'stale');
  });

  it('refuses a wrong secret, a changed body, a changed delivery id and a key id given to another key', () => {
    refused(() => check(signed(), [WRONG]), 'bad_signature');
    refused(() => check(signed(), [SECRET_A], flipped(BODY)), 'bad_signature');
    refused(() => check(set(signed(), 'X-MW-Delivery-Id', 'other')), 'bad_signature');
    refused(() => check(signed(), [{ keyId: KEY_B, value: SECRET_A }]), 'bad_signature');
  });

  it('accepts either signature of a rotation, secrets in any order', () => {
    const h = sign(NOW, [[KEY_B, SECRET_B], [KEY_A, SECRET_A]]);
    assert.equal(check(h, [SECRET_A]).keyId, KEY_A);
    assert.equal(check(h, [SECRET_B]).keyId, KEY_B);
    assert.equal(check(h, [WRONG, SECRET_A]).keyId, KEY_A);
    assert.equal(check(h, [{ keyId: KEY_B, value: SECRET_B }, { keyId: KEY_A, value: SECRET_A }]).keyId, KEY_B);
    refused(() => check(h, [WRONG]), 'bad_signature');
  });
});

describe('t-v1', () => {
  const v1 = (secret: string, ts: string, body = BODY) => `v1=${hex(secret, ts, '.', body)}`;
  const sign = (ts: number, secrets: string[]): Pairs => [
    ['X-MW-Signature', [`t=${ts}`, ...secrets.map((s) => v1(s, String(ts)))].join(',')],
    ['X-MW-Delivery-Id', DELIVERY],
  ];
  const check = (headers: Pairs, secrets: string[] = [SECRET_A], body = BODY, now = NOW) => verifyTV1({ headers, body, secrets, now });

  it('accepts the signed request; the delivery id is reported, not signed', () => {
    assert.deepEqual(check(sign(NOW, [SECRET_A])), { profile: 't-v1', timestamp: NOW, deliveryId: DELIVERY, keyId: undefined });
    assert.equal(check(without(sign(NOW, [SECRET_A]), 'x-mw-delivery-id')).deliveryId, undefined);
  });

  it('refuses every malformed shape', () => {
    const ts = String(NOW);
    const good = v1(SECRET_A, ts);
    const shapes = [
      `t=${ts}`,
      good,
      `t=${ts},t=${ts},${good}`,
      `t=abc,${good}`,
      `t=,${good}`,
      `t=-${ts},${good}`,
      `t=${ts}.0,${good}`,
      `t=${ts},v1=${'zz'.repeat(32)}`,
      `t=${ts},v1=abcd`,
      `t=${ts},v1=`,
      `t=${ts},${good},garbage`,
      `t=${ts},,${good}`,
      `t=${ts},${good},`,
      `t=${ts};${good}`,
      `t=${ts},v0=${'ab'.repeat(32)}`,
      `t=${ts}${`,${good}`.repeat(9)}`,
    ];
    for (const shape of shapes) refused(() => check(set(sign(NOW, [SECRET_A]), 'X-MW-Signature', shape)), 'malformed_header', 'x-mw-signature');
    refused(() => check(without(sign(NOW, [SECRET_A]), 'x-mw-signature')), 'missing_header', 'x-mw-signature');
  });

  it('refuses a repeated header, never joining it', () => {
    const ts = String(NOW);
    refused(() => check([...sign(NOW, [SECRET_A]), ['X-MW-Signature', `t=${ts},${v1(SECRET_A, ts)}`]]), 'repeated_header', 'x-mw-signature');
    refused(() => check([['X-MW-Signature', `t=${ts}`], ['x-mw-signature', v1(SECRET_A, ts)]]), 'repeated_header', 'x-mw-signature');
    refused(() => check([...sign(NOW, [SECRET_A]), ['X-MW-Delivery-Id', DELIVERY]]), 'repeated_header', 'x-mw-delivery-id');
  });

  it('takes items in any order, with spaces, other keys, wrong v1s and upper-case hex', () => {
    const ts = String(NOW);
    const good = v1(SECRET_A, ts);
    for (const value of [
      `${good},t=${ts}`,
      ` t=${ts} , ${good} `,
      `t=${ts},v0=${'ab'.repeat(32)},${good}`,
      `t=${ts},${v1(WRONG, ts)},${good}`,
      `t=${ts},v1=${good.slice(3).toUpperCase()}`,
    ]) {
      assert.equal(check(set(sign(NOW, [SECRET_A]), 'X-MW-Signature', value)).timestamp, NOW, value);
    }
  });

  it('has a symmetric 300 s window', () => {
    for (const offset of [-300, 300]) assert.ok(check(sign(NOW + offset, [SECRET_A])));
    for (const offset of [-301, 301]) refused(() => check(sign(NOW + offset, [SECRET_A])), 'stale', 'x-mw-signature');
  });

  it('accepts any signature of a rotation and refuses a changed body, secret or t', () => {
    const h = sign(NOW, [SECRET_B, SECRET_A]);
    assert.ok(check(h, [SECRET_A]));
    assert.ok(check(h, [SECRET_B]));
    refused(() => check(h, [WRONG]), 'bad_signature');
    refused(() => check(h, [SECRET_A], flipped(BODY)), 'bad_signature');
    refused(() => check(set(h, 'X-MW-Signature', `t=${NOW - 1},${v1(SECRET_A, String(NOW))}`)), 'bad_signature');
  });
});

describe('standard-webhooks', () => {
  const MSG = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
  const key = (secret: string) => Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const v1 = (secret: string, id: string, ts: string, body = BODY) =>
    `v1,${createHmac('sha256', key(secret)).update(`${id}.${ts}.`).update(body).digest('base64')}`;
  const sign = (ts: number, secrets: string[]): Pairs => [
    ['webhook-id', MSG],
    ['webhook-timestamp', String(ts)],
    ['webhook-signature', secrets.map((s) => v1(s, MSG, String(ts))).join(' ')],
  ];
  const check = (headers: Pairs, secrets: string[] = [SECRET_A], body: Buffer | string = BODY, now = NOW) =>
    verifyStandardWebhooks({ headers, body, secrets, now });

  /** (secret, msg id, timestamp, payload, signature) as the specification's libraries publish them. */
  const VECTORS = [
    ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}', 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE='],
    [
      'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD',
      'msg_27UH4WbU6Z5A5EzD8u03UvzRbpk',
      1649367553,
      '{"email":"test@example.com","username":"test_user"}',
      'v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=',
    ],
  ] as const;

  it('verifies the published vectors, with and without the prefix', () => {
    for (const [secret, id, ts, payload, signature] of VECTORS) {
      const h: Pairs = [['webhook-id', id], ['webhook-timestamp', String(ts)], ['webhook-signature', signature]];
      const verifier = new Verifier({ profile: 'standard-webhooks', secrets: [secret] });
      const { verified, envelope } = verifier.verify(h, payload, ts);
      assert.equal(verified.deliveryId, id);
      assert.deepEqual(envelope, JSON.parse(payload));
      assert.ok(check(h, [secret.slice('whsec_'.length)], payload, ts));
      for (const off of [-301, 301]) refused(() => verifier.verify(h, payload, ts + off), 'stale');
    }
  });

  it('refuses the published negative vectors and accepts the multi-signature one', () => {
    const [secret, id, ts, payload, good] = VECTORS[0];
    const h = (sig: string): Pairs => [['webhook-id', id], ['webhook-timestamp', String(ts)], ['webhook-signature', sig]];
    refused(() => check(h('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA='), [secret], payload, ts), 'bad_signature');
    const other = 'Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=';
    assert.ok(check(h(`v1,${other} v2,${other} ${good} v1,${other}`), [secret], payload, ts));
    const wrong = ['v1,tFtCZ5RDCPxzWQRWXWPgrCgE2frDBe9gjpbWQxnVfsQ=', 'v1,Mm7xgUVICxZfQ3bgf0h0Dof65L/IFx+PnZvnDWPCX6Q=', 'v1,9DfC1c3eeOrXB6w/5dIDydLNQaEyww5KalE5jLBZucE='];
    refused(() => check(h(wrong.join(' ')), [secret], payload, ts), 'bad_signature');
    refused(() => check(h(good), [secret], '{"test":2432232314}', ts), 'bad_signature');
  });

  it("keys Motor's hex secrets by their base64 decoding", () => {
    assert.equal(key(SECRET_A).length, 48);
    assert.ok(check(sign(NOW, [SECRET_A])));
    assert.ok(check(sign(NOW, [SECRET_B, SECRET_A]), [SECRET_B]));
    refused(() => check(sign(NOW, [SECRET_A]), [WRONG]), 'bad_signature');
    refused(() => check(sign(NOW, [SECRET_A]), [SECRET_A], flipped(BODY)), 'bad_signature');
  });

  it('refuses malformed, missing and repeated headers', () => {
    const good = v1(SECRET_A, MSG, String(NOW));
    for (const value of ['v1', `,${good.slice(3)}`, 'v1,!!!!', `v1,${Buffer.alloc(16, 7).toString('base64')}`, `v1,${'ab'.repeat(32)}`, `${good},${good}`, `v1a,${Buffer.alloc(64, 1).toString('base64')}`, Array(9).fill(good).join(' ')]) {
      refused(() => check(set(sign(NOW, [SECRET_A]), 'webhook-signature', value)), 'malformed_header', 'webhook-signature');
    }
    for (const value of ['hello', '-1', '1792854493.0']) refused(() => check(set(sign(NOW, [SECRET_A]), 'webhook-timestamp', value)), 'malformed_header', 'webhook-timestamp');
    refused(() => check(set(sign(NOW, [SECRET_A]), 'webhook-id', 'msg.1')), 'malformed_header', 'webhook-id');
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      refused(() => check(without(sign(NOW, [SECRET_A]), name)), 'missing_header', name);
      const h = sign(NOW, [SECRET_A]);
      refused(() => check([...h, [name.toUpperCase(), h.find(([n]) => n === name)![1]]]), 'repeated_header', name);
    }
    assert.ok(check(set(sign(NOW, [SECRET_A]), 'webhook-signature', `v1a,${Buffer.alloc(64, 1).toString('base64')}  ${good} `)));
  });

  it('has a symmetric 300 s window', () => {
    for (const offset of [-300, 300]) assert.ok(check(sign(NOW + offset, [SECRET_A])));
    for (const offset of [-301, 301]) refused(() => check(sign(NOW + offset, [SECRET_A])), 'stale', 'webhook-timestamp');
  });
});

describe('Verifier', () => {
  it('refuses a configuration that could only answer 401', () => {
    assert.throws(() => new Verifier({ secrets: [] }), /no secret/);
    assert.throws(() => new Verifier({ secrets: [''] }), /empty/);
    for (const bad of ['whsec_', 'whsec_!!!!', 'whsec_a']) {
      assert.throws(() => new Verifier({ profile: 'standard-webhooks', secrets: [bad] }), /base64/, bad);
    }
    assert.ok(new Verifier({ profile: 'standard-webhooks', secrets: ['whsec_YWJjZA', 'whsec_YWJjZA=='] }));
    assert.throws(() => new Verifier({ profile: 'mw-v2' as never, secrets: [SECRET_A] }), /unknown profile/);
  });

  it('gives the parsed envelope from the raw bytes, and 400 for a signed body that is not JSON', () => {
    const verifier = new Verifier({ profile: 't-v1', secrets: [SECRET_A] });
    const sign = (body: Buffer): Pairs => [['X-MW-Signature', `t=${NOW},v1=${hex(SECRET_A, String(NOW), '.', body)}`]];
    const { envelope, body, verified } = verifier.verify(sign(BODY), BODY, NOW);
    assert.equal(envelope.seq, 1187);
    assert.equal(envelope.event_id, 'e1f0c2d4-0000-4000-8000-000000001187');
    assert.equal(Buffer.compare(Buffer.from(body), BODY), 0);
    assert.equal(verified.profile, 't-v1');
    const notJson = Buffer.from('not json');
    refused(() => verifier.verify(sign(notJson), notJson, NOW), 'invalid_body');
    // Headers from a fetch Headers object work too (repeats are joined there).
    assert.equal(verifier.verify(new Headers(sign(BODY)), BODY, NOW).envelope.seq, 1187);
  });
});
