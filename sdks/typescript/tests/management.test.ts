// Management against the sandbox's Motor: subscriptions (create, list, get,
// patch with version_esperada, delete, rotate, test), deliveries (list,
// pages, get, retry) and replays, with a real receiver on loopback.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { MotorApiError, Verifier, type Subscription, type SubscriptionWithSecret } from '../src/index.js';
import { header, motor, newInstance, Receiver, waitFor } from './support.js';

async function refusal(promise: Promise<unknown>): Promise<MotorApiError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof MotorApiError, String(error));
    return error;
  }
  assert.fail('the call succeeded');
}

describe('subscriptions, deliveries and replays', () => {
  const client = motor();
  let receiver: Receiver;
  let instance: string;
  let created: SubscriptionWithSecret;
  let sub: Subscription;
  const secrets: string[] = [];

  before(async () => {
    receiver = await Receiver.start();
    instance = await newInstance('sdk-ts-management');
  });
  after(() => receiver.close());

  /** Deliveries of `subscription` in `estado`, once there are `count`. */
  const deliveries = (subscriptionId: string, count: number, state?: 'entregada' | 'fallida') =>
    waitFor(`${count} ${state ?? ''} deliveries`, async () => {
      const page = await client.deliveries.list({ subscriptionId, states: state ? [state] : undefined, perPage: 200 });
      return page.entregas.length >= count ? page.entregas : undefined;
    });

  it('creates a subscription and shows its secret once', async () => {
    created = await client.subscriptions.create({ nombre: 'CRM', url: `${receiver.url}/crm`, instancias: [instance], tipos: ['pedido.creado'] });
    sub = created.suscripcion;
    assert.match(created.secreto.valor, /^whsec_[0-9a-f]{64}$/);
    assert.match(created.secreto.key_id, /^whk_/);
    assert.equal(sub.nombre, 'CRM');
    assert.equal(sub.estado, 'activa');
    assert.equal(sub.firma, 'mw-v1');
    assert.equal(sub.ordenado, true);
    assert.deepEqual(sub.instancias, [instance]);
    assert.deepEqual(sub.claves.map((c) => c.key_id), [created.secreto.key_id]);
    secrets.push(created.secreto.valor);
  });

  it('refuses a bad subscription with the field named', async () => {
    let error = await refusal(client.subscriptions.create({ nombre: 'x', url: 'https://hooks.not-allowed.example/motor' }));
    assert.equal(error.status, 422);
    assert.equal(error.field, 'body.url');
    error = await refusal(client.subscriptions.create({ nombre: ' ', url: `${receiver.url}/x` }));
    assert.equal(error.status, 422);
    assert.equal(error.field, 'body.nombre');
    error = await refusal(client.subscriptions.get(randomUUID()));
    assert.equal(error.status, 404);
  });

  it('gets and lists it', async () => {
    assert.deepEqual((await client.subscriptions.get(sub.id)).id, sub.id);
    assert.ok((await client.subscriptions.list()).some((s) => s.id === sub.id));
    assert.ok(!(await client.subscriptions.list({ states: ['eliminada'] })).some((s) => s.id === sub.id));
  });

  it('patches with version_esperada and answers a stale version with 409', async () => {
    const renamed = await client.subscriptions.update(sub.id, { nombre: 'CRM principal', version_esperada: sub.version });
    assert.equal(renamed.nombre, 'CRM principal');
    assert.ok(renamed.version > sub.version);
    const error = await refusal(client.subscriptions.update(sub.id, { nombre: 'otro', version_esperada: sub.version }));
    assert.equal(error.status, 409);
    assert.equal(error.code, 'conflicto');
    const paused = await client.subscriptions.update(sub.id, { estado: 'pausada', version_esperada: renamed.version });
    assert.equal(paused.estado, 'pausada');
    sub = await client.subscriptions.update(sub.id, { estado: 'activa' });
    assert.equal(sub.estado, 'activa');
    assert.equal(sub.nombre, 'CRM principal');
  });

  it('rotates the secret: two keys sign until the old one expires', async () => {
    const rotated = await client.subscriptions.rotate(sub.id);
    assert.notEqual(rotated.secreto.valor, created.secreto.valor);
    assert.equal(rotated.suscripcion.claves.length, 2);
    const old = rotated.suscripcion.claves.find((c) => c.key_id === created.secreto.key_id);
    assert.ok(old?.vence_en, 'the old key has an expiry');
    secrets.push(rotated.secreto.valor);
  });

  it('sends a signed test that the receiver verifies', async () => {
    const result = await client.subscriptions.test(sub.id);
    assert.deepEqual({ ok: result.ok, status: result.status, error: result.error }, { ok: true, status: 204, error: null });
    const request = await waitFor('the test request', () => receiver.at('/crm').at(-1));
    const { envelope, verified } = new Verifier({ secrets }).verify({ rawHeaders: request.rawHeaders }, request.body);
    assert.equal(envelope.type, 'webhook.test');
    assert.equal(verified.keyId, (await client.subscriptions.get(sub.id)).claves[0]!.key_id);
  });

  it('lists, pages and reads deliveries', async () => {
    await client.events.appendBatch(instance, [1, 2, 3].map((n) => ({ type: 'pedido.creado', data: { n } })));
    const delivered = await deliveries(sub.id, 3, 'entregada');
    assert.deepEqual(delivered.map((d) => d.seq), [3, 2, 1], 'newest first');
    const pages: number[][] = [];
    for await (const page of client.deliveries.pages({ subscriptionId: sub.id, instanceId: instance, perPage: 2 })) pages.push(page.entregas.map((d) => d.seq));
    assert.deepEqual(pages, [[3, 2], [1]]);
    const detail = await client.deliveries.get(delivered[0]!.delivery_id);
    assert.equal(detail.estado, 'entregada');
    assert.equal(detail.intentos_detalle[0]?.status, 204);
    assert.equal(detail.intentos_detalle[0]?.numero, 1);
    assert.equal((await refusal(client.deliveries.get(randomUUID()))).status, 404);
    assert.equal((await refusal(client.deliveries.list({ perPage: 201 }))).field, 'query.por_pagina');
  });

  it('replays a range with an Idempotency-Key: new delivery ids, the same events', async () => {
    const key = `recuperar-${randomUUID()}`;
    const body = { instancia_id: instance, desde_seq: 1, hasta_seq: 3, motivo: 'receptor caído' };
    const replay = await client.subscriptions.replay(sub.id, body, { idempotencyKey: key });
    assert.equal(replay.entregas, 3);
    assert.equal(replay.suscripcion_id, sub.id);
    assert.deepEqual(await client.subscriptions.replay(sub.id, body, { idempotencyKey: key }), replay);
    const error = await refusal(client.subscriptions.replay(sub.id, { ...body, hasta_seq: 2 }, { idempotencyKey: key }));
    assert.equal(error.status, 409);
    assert.equal((await refusal(client.subscriptions.replay(sub.id, { ...body, motivo: '' }, { idempotencyKey: randomUUID() }))).status, 422);
    await assert.rejects(client.subscriptions.replay(sub.id, body, { idempotencyKey: '' }), TypeError);
    const all = await deliveries(sub.id, 6, 'entregada');
    const replayed = all.filter((d) => d.replay_of !== null && d.replay_of !== undefined);
    assert.equal(replayed.length, 3);
    const live = all.filter((d) => !replayed.includes(d));
    assert.deepEqual(new Set(replayed.map((d) => d.event_id)), new Set(live.map((d) => d.event_id)));
    // The receiver saw each event twice, under two delivery ids.
    const seen = receiver.at('/crm').filter((r) => header(r, 'x-mw-event-id') === live[0]!.event_id);
    assert.equal(new Set(seen.map((r) => header(r, 'x-mw-delivery-id'))).size, 2);
    const byIds = await client.subscriptions.replay(sub.id, { event_ids: [live[0]!.event_id], motivo: 'uno' }, { idempotencyKey: randomUUID() });
    assert.equal(byIds.entregas, 1);
  });

  it('retries a failed delivery as a new one naming the original', async () => {
    let answer = 400;
    receiver.route('/falla', () => answer);
    const failing = (await client.subscriptions.create({ nombre: 'falla', url: `${receiver.url}/falla`, instancias: [instance], tipos: ['pago.rechazado'] })).suscripcion;
    await client.events.append(instance, { type: 'pago.rechazado', data: {} });
    const [failed] = await deliveries(failing.id, 1, 'fallida');
    assert.equal(failed!.ultimo_error, 'http_400');
    assert.equal(failed!.ultimo_status, 400);
    answer = 204;
    const key = randomUUID();
    const retried = await client.deliveries.retry(failed!.delivery_id, { idempotencyKey: key, reason: 'arreglado' });
    assert.equal(retried.replay_of, failed!.delivery_id);
    assert.notEqual(retried.delivery_id, failed!.delivery_id);
    assert.equal(retried.event_id, failed!.event_id);
    assert.deepEqual((await client.deliveries.retry(failed!.delivery_id, { idempotencyKey: key, reason: 'arreglado' })).delivery_id, retried.delivery_id);
    await waitFor('the retry delivered', async () => (await client.deliveries.get(retried.delivery_id)).estado === 'entregada');
    const notFailed = await refusal(client.deliveries.retry(retried.delivery_id, { idempotencyKey: randomUUID() }));
    assert.equal(notFailed.status, 409);
    await client.subscriptions.delete(failing.id);
  });

  it('deletes it', async () => {
    await client.subscriptions.delete(sub.id);
    assert.ok(!(await client.subscriptions.list()).some((s) => s.id === sub.id));
    const gone = await client.subscriptions.get(sub.id).catch((e: MotorApiError) => e);
    if (gone instanceof MotorApiError) assert.equal(gone.status, 404);
    else assert.equal(gone.estado, 'eliminada');
  });
});
