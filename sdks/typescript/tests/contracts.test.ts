// The Visito (seed 001) and Asixto (seed 003) contracts' verifiers. Motor
// does not send these contracts yet, so they are checked against the
// seeds themselves: Asixto's own TypeScript `verificar` (copied from seed
// 003 with its clock passed in) must agree with verifyAsixto on every
// well-formed request, and Visito's algorithm as seed 001 words it
// ("HMAC-SHA256 de timestamp + '.' + cuerpoOriginal", five minutes,
// X-Visito-Event-Id) is signed here by hand.
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { describe, it } from 'node:test';

import { Verifier, verifyAsixto, verifyVisito, WebhookVerificationError } from '../src/index.js';

// Seed 003, section 2, "TypeScript" — verbatim but for `ahora`, injected.
const TOLERANCIA_S = 300;
const igualSegura = (a: string, b: string): boolean => {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
};
const verificar = (cabecera: string | undefined, cuerpo: string, secretos: string[], ahora: number): boolean => {
  if (!cabecera) return false;
  let instante: string | null = null;
  const firmas: string[] = [];
  for (const parte of cabecera.split(',')) {
    const corte = parte.indexOf('=');
    if (corte <= 0) continue;
    const clave = parte.slice(0, corte).trim();
    const valor = parte.slice(corte + 1).trim();
    if (clave === 't') instante = valor;
    if (clave === 'v1' && valor) firmas.push(valor);
  }
  if (instante === null || !/^[1-9][0-9]*$/.test(instante) || firmas.length === 0) return false;
  if (Math.abs(ahora - Number(instante)) > TOLERANCIA_S) return false;
  return secretos.some((secreto) => {
    const esperada = createHmac('sha256', secreto).update(`${instante}.${cuerpo}`, 'utf8').digest('hex');
    return firmas.some((firma) => igualSegura(firma, esperada));
  });
};

// Seed 003's envelope and instant (section 1 and the header example).
const ASIXTO_BODY = JSON.stringify({ id: '9f1c3a70-4e0b-4f2a-9d5e-2b8c1a6f0d33', type: 'job.succeeded', created: 1787923200, environment: 'live', data: {} }, null, 2);
const T = 1787923200;
const OLD = 'whsec_asixto_old_0123456789abcdef';
const NEW = 'whsec_asixto_new_fedcba9876543210';
const v1 = (secret: string, t: number | string, body: string) => `v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;

const accepts = (fn: () => unknown) => {
  try {
    fn();
    return true;
  } catch (error) {
    assert.ok(error instanceof WebhookVerificationError, String(error));
    return false;
  }
};

describe('Asixto', () => {
  it("agrees with seed 003's own verifier on every well-formed request", () => {
    const cases: [string, string, string[], number][] = [
      ['one secret', `t=${T},${v1(OLD, T, ASIXTO_BODY)}`, [OLD], T],
      ['rotation, old secret', `t=${T},${v1(NEW, T, ASIXTO_BODY)},${v1(OLD, T, ASIXTO_BODY)}`, [OLD], T],
      ['rotation, new secret', `t=${T},${v1(NEW, T, ASIXTO_BODY)},${v1(OLD, T, ASIXTO_BODY)}`, [NEW], T],
      ['both secrets held', `t=${T},${v1(NEW, T, ASIXTO_BODY)}`, [OLD, NEW], T],
      ['wrong secret', `t=${T},${v1(OLD, T, ASIXTO_BODY)}`, [NEW], T],
      ['other body', `t=${T},${v1(OLD, T, `${ASIXTO_BODY} `)}`, [OLD], T],
      ['other t', `t=${T + 1},${v1(OLD, T, ASIXTO_BODY)}`, [OLD], T],
      ['300 s late', `t=${T},${v1(OLD, T, ASIXTO_BODY)}`, [OLD], T + 300],
      ['301 s late', `t=${T},${v1(OLD, T, ASIXTO_BODY)}`, [OLD], T + 301],
      ['300 s early', `t=${T},${v1(OLD, T, ASIXTO_BODY)}`, [OLD], T - 300],
      ['301 s early (a future instant)', `t=${T},${v1(OLD, T, ASIXTO_BODY)}`, [OLD], T - 301],
      ['t after the signatures, spaces', ` ${v1(OLD, T, ASIXTO_BODY)} , t=${T} `, [OLD], T],
    ];
    let accepted = 0;
    for (const [name, header, secrets, now] of cases) {
      const seed = verificar(header, ASIXTO_BODY, secrets, now);
      const ours = accepts(() => verifyAsixto({ headers: { 'Asixto-Signature': header }, body: ASIXTO_BODY, secrets, now }));
      assert.equal(ours, seed, name);
      if (ours) accepted++;
    }
    assert.equal(accepted, 7, 'the table holds accepted and refused requests');
  });

  it('answers 408 to a stale instant and refuses a repeated header, as section 2 asks', () => {
    const header = `t=${T},${v1(OLD, T, ASIXTO_BODY)}`;
    const verifier = new Verifier({ profile: 'asixto', secrets: [OLD] });
    const { envelope, verified } = verifier.verify([['Asixto-Signature', header]], ASIXTO_BODY, T);
    assert.equal(envelope.id, '9f1c3a70-4e0b-4f2a-9d5e-2b8c1a6f0d33');
    assert.equal(envelope.environment, 'live');
    assert.equal(verified.profile, 'asixto');
    assert.throws(() => verifier.verify([['Asixto-Signature', header]], ASIXTO_BODY, T + 301), (e: WebhookVerificationError) => e.status === 408);
    assert.throws(
      () => verifier.verify([['Asixto-Signature', header], ['asixto-signature', header]], ASIXTO_BODY, T),
      (e: WebhookVerificationError) => e.reason === 'repeated_header' && e.status === 401,
    );
    // Motor's own header does not stand in for Asixto's.
    assert.throws(() => verifier.verify([['X-MW-Signature', header]], ASIXTO_BODY, T), (e: WebhookVerificationError) => e.reason === 'missing_header');
  });
});

describe('Visito', () => {
  const body = JSON.stringify({
    eventId: 'evt_01HZX3K9Q8',
    type: 'message.created',
    schemaVersion: '1.0',
    tenantId: 'ten_42',
    occurredAt: '2026-10-24T15:08:12Z',
    data: { direction: 'inbound', conversationId: 'conv_7' },
  });
  const secret = 'visito_secret_for_tests';
  const sign = (t: number, b = body) => [
    ['X-Visito-Event-Id', 'evt_01HZX3K9Q8'],
    ['X-Visito-Signature', `t=${t},v1=${createHmac('sha256', secret).update(`${t}.`).update(b).digest('hex')}`],
  ] as [string, string][];

  it('verifies seed 001 signatures and gives its envelope', () => {
    const verifier = new Verifier({ profile: 'visito', secrets: [secret] });
    const { envelope, verified } = verifier.verify(sign(T), body, T);
    assert.equal(envelope.eventId, 'evt_01HZX3K9Q8');
    assert.equal(envelope.schemaVersion, '1.0');
    assert.equal(verified.deliveryId, 'evt_01HZX3K9Q8');
    assert.equal(verified.profile, 'visito');
  });

  it('refuses five minutes and a second either way, a changed body, another secret and repeats', () => {
    for (const now of [T - 301, T + 301]) {
      assert.throws(() => verifyVisito({ headers: sign(T), body, secrets: [secret], now }), (e: WebhookVerificationError) => e.status === 408);
    }
    assert.ok(verifyVisito({ headers: sign(T), body, secrets: [secret], now: T + 300 }));
    assert.throws(() => verifyVisito({ headers: sign(T), body: `${body} `, secrets: [secret], now: T }), (e: WebhookVerificationError) => e.reason === 'bad_signature');
    assert.throws(() => verifyVisito({ headers: sign(T), body, secrets: ['other'], now: T }), (e: WebhookVerificationError) => e.reason === 'bad_signature');
    const twice = [...sign(T), ['x-visito-signature', sign(T)[1]![1]]] as [string, string][];
    assert.throws(() => verifyVisito({ headers: twice, body, secrets: [secret], now: T }), (e: WebhookVerificationError) => e.reason === 'repeated_header');
  });
});
