// The subscription's contrato, the receiver check, a replay's progress and
// stream tokens, against the sandbox's Motor.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { MotorApiError } from '../src/index.js';
import { MOTOR_URL, Receiver, motor, newInstance, waitFor } from './support.js';

async function apiError(promise: Promise<unknown>): Promise<MotorApiError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof MotorApiError, `not a MotorApiError: ${String(error)}`);
    return error;
  }
  assert.fail('the call succeeded');
}

describe('routes', () => {
  const client = motor();
  let receiver: Receiver;
  before(async () => {
    receiver = await Receiver.start();
  });
  after(async () => {
    await receiver.close();
  });

  it('sets and changes a subscription contrato', async () => {
    const instance = await newInstance('sdk-ts-contrato');
    const plain = (await client.subscriptions.create({ nombre: 'plain', url: `${receiver.url}/plain`, instancias: [instance] })).suscripcion;
    assert.equal(plain.contrato, undefined); // motor: left out of the answer
    const sub = (await client.subscriptions.create({ nombre: 'visito', url: `${receiver.url}/visito`, instancias: [instance], contrato: 'visito' })).suscripcion;
    assert.equal(sub.contrato, 'visito');
    assert.equal((await client.subscriptions.update(sub.id, { contrato: 'asixto' })).contrato, 'asixto');
    assert.equal((await client.subscriptions.update(sub.id, { contrato: 'motor' })).contrato, undefined);
    await client.subscriptions.delete(sub.id);
    await client.subscriptions.delete(plain.id);
  });

  it('checks a receiver that takes everything, and fails it', async () => {
    const instance = await newInstance('sdk-ts-check');
    const path = `/check-${randomUUID().slice(0, 6)}`;
    const sub = (await client.subscriptions.create({ nombre: 'check', url: `${receiver.url}${path}`, instancias: [instance] })).suscripcion;
    const report = await client.subscriptions.check(sub.id);
    assert.equal(report.url, sub.url);
    assert.equal(report.perfil, 'mw-v1');
    assert.equal(report.aprobado, false);
    const verdicts = new Map(report.comprobaciones.map((row) => [row.nombre, row.veredicto]));
    assert.equal(verdicts.get('entrega_valida'), 'ok');
    assert.equal(verdicts.get('firma_incorrecta'), 'falla');
    assert.equal(verdicts.get('cuerpo_alterado'), 'falla');
    assert.ok(report.tiempos.muestras > 0);
    assert.ok(receiver.at(path).length >= report.comprobaciones.length - 1);
    await client.subscriptions.delete(sub.id);
  });

  it("follows a replay's progress", async () => {
    const instance = await newInstance('sdk-ts-replay-progress');
    const path = `/replayed-${randomUUID().slice(0, 6)}`;
    const sub = (await client.subscriptions.create({ nombre: 'replayed', url: `${receiver.url}${path}`, instancias: [instance] })).suscripcion;
    await client.events.appendBatch(instance, [{ type: 'r', data: { i: 1 } }, { type: 'r', data: { i: 2 } }]);
    await waitFor('the two deliveries', () => receiver.at(path).length === 2 || undefined);
    const replay = await client.subscriptions.replay(sub.id, { instancia_id: instance, desde_seq: 1, hasta_seq: 2, motivo: 'ts sdk' }, { idempotencyKey: `r-${randomUUID()}` });
    const status = await waitFor('the replay done', async () => {
      const s = await client.subscriptions.getReplay(sub.id, replay.replay_id);
      return s.terminado && s;
    });
    assert.equal(status.replay_id, replay.replay_id);
    assert.equal(status.suscripcion_id, sub.id);
    assert.deepEqual([status.entregas, status.entregadas, status.fallidas, status.pendientes], [2, 2, 0, 0]);
    assert.equal(receiver.at(path).length, 4);
    assert.equal((await apiError(client.subscriptions.getReplay(sub.id, randomUUID()))).status, 404);
    await client.subscriptions.delete(sub.id);
  });

  it("makes stream tokens that open one instance's stream", async () => {
    const instance = await newInstance('sdk-ts-stream-token');
    const token = await client.events.streamToken(instance, { seconds: 30 });
    assert.ok(token.token.startsWith('mst_'));
    assert.equal(token.instancia_id, instance);
    const expires = Date.parse(token.vence_en);
    assert.ok(expires > Date.now() && expires <= Date.now() + 31_000);
    const open = async (id: string): Promise<number> => {
      const controller = new AbortController();
      const response = await fetch(`${MOTOR_URL}/v1/instances/${id}/events/stream?token=${encodeURIComponent(token.token)}`, { signal: controller.signal });
      if (response.ok) assert.ok(response.headers.get('content-type')?.startsWith('text/event-stream'));
      controller.abort();
      return response.status;
    };
    assert.equal(await open(instance), 200);
    assert.equal(await open(await newInstance('sdk-ts-stream-token-other')), 403);
    assert.ok((await client.events.streamToken(instance)).token.startsWith('mst_')); // default 60 s
    const error = await apiError(client.events.streamToken(instance, { seconds: 61 }));
    assert.equal(error.status, 422);
    assert.equal(error.field, 'body.segundos');
  });
});
