// An executor against the sandbox's Motor, as a user of the seed product
// writes one: a producer sends a message and submits an operation; the
// executor polls, claims each one and reports it (`enviado`,
// `completado`); the producer sees the outcome with commands.get. Then
// the instance's state reports.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';

import { MotorApiError } from '../src/index.js';
import { motor, newInstance } from './support.js';

const CHAT = '5491122334455@s.whatsapp.net';

async function apiError(promise: Promise<unknown>): Promise<MotorApiError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof MotorApiError, `not a MotorApiError: ${String(error)}`);
    return error;
  }
  assert.fail('the call succeeded');
}

describe('executor', () => {
  const client = motor();
  let instance: string;
  before(async () => {
    instance = await newInstance('sdk-ts-executor');
  });

  it('polls, claims and reports: enviado for a send, completado for another kind', async () => {
    const sent = await client.commands.send(instance, { chat: CHAT, contenido: { texto: 'hola' } }, { idempotencyKey: `exec-${randomUUID()}` });
    const op = await client.commands.submit(instance, { tipo: 'grupos', parametros: { operacion: 'unirse' } });

    const pending = await client.executor.poll(instance, { wait: 5 });
    assert.deepEqual(pending.map((p) => [p.command_id, p.tipo, p.instance_id]), [
      [sent.id, 'mensaje', instance],
      [op.id, 'grupos', instance],
    ]);
    assert.equal(pending[1]?.next_try ?? null, null);
    assert.deepEqual((await client.executor.poll(instance, { limit: 1 })).map((p) => p.command_id), [sent.id]);

    const claimed = await client.executor.claim(sent.id);
    assert.equal(claimed.comando.id, sent.id);
    assert.equal(claimed.comando.status, 'ejecutando');
    assert.equal(claimed.comando.reclamos, 1);
    assert.equal(claimed.comando.chat, CHAT);
    assert.deepEqual(claimed.comando.contenido, { texto: 'hola' });
    assert.ok(claimed.reserva);
    assert.ok(Date.parse(claimed.reservado_hasta) > Date.now());
    assert.equal((await apiError(client.executor.claim(sent.id))).status, 409);

    const aceptadoEn = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString();
    const refused = await apiError(client.executor.report(sent.id, { reserva: claimed.reserva, status: 'completado' }));
    assert.equal(refused.status, 422);
    assert.equal(refused.field, 'body.status'); // a send ends enviado
    const report = { reserva: claimed.reserva, status: 'enviado', provider_message_id: 'wamid.ts-1', chat: CHAT, aceptado_en: aceptadoEn };
    const reported = await client.executor.report(sent.id, report);
    assert.equal(reported.status, 'enviado');
    assert.equal(reported.provider_message_id, 'wamid.ts-1');
    const got = await client.commands.get(sent.id);
    assert.equal(got.status, 'enviado');
    assert.equal(got.provider_message_id, 'wamid.ts-1');
    assert.equal(Date.parse(got.aceptado_en ?? ''), Date.parse(aceptadoEn));
    assert.equal((await apiError(client.executor.report(sent.id, report))).status, 409); // the lease is spent

    const claimedOp = await client.executor.claim(op.id);
    assert.deepEqual(claimedOp.comando.parametros, { operacion: 'unirse' });
    await client.executor.report(op.id, { reserva: claimedOp.reserva, status: 'completado' });
    assert.equal((await client.commands.get(op.id)).status, 'completado');
    assert.deepEqual(await client.executor.poll(instance), []);
    // enviado appends message.sent; completado appends nothing.
    const events = await client.events.list(instance, { types: ['message.sent'] });
    assert.deepEqual(events.events.map((e) => e.command_id), [sent.id]);
  });

  it('extends a lease with heartbeats until it is lost', async () => {
    const sent = await client.commands.send(instance, { chat: CHAT, contenido: { texto: 'largo' } }, { idempotencyKey: `beat-${randomUUID()}` });
    const claimed = await client.executor.claim(sent.id);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const beat = await client.executor.heartbeat(sent.id, claimed.reserva);
    assert.equal(beat.status, 'ejecutando');
    assert.ok(beat.reservado_hasta != null);
    assert.ok(Date.parse(beat.reservado_hasta) > Date.parse(claimed.reservado_hasta), 'the lease is extended');
    assert.equal((await apiError(client.executor.heartbeat(sent.id, randomUUID()))).status, 409);
    const missing = await apiError(client.executor.heartbeat(sent.id, 'not-a-lease'));
    assert.equal(missing.status, 422);
    assert.equal(missing.field, 'body.reserva');
    await client.executor.report(sent.id, { reserva: claimed.reserva, status: 'ambiguo' });
    assert.equal((await apiError(client.executor.heartbeat(sent.id, claimed.reserva))).status, 409);
  });

  it("reports the instance's state", async () => {
    const own = await newInstance('sdk-ts-executor-state');
    const first = await client.executor.reportState(own, { estado: 'conectada', motivo: 'ts sdk' });
    assert.equal(first.instance_id, own);
    assert.equal(first.estado, 'conectada');
    assert.ok(first.seq != null);
    const same = await client.executor.reportState(own, { estado: 'conectada' });
    assert.equal(same.seq ?? null, null);
    assert.equal(same.estado_anterior, 'conectada');
    const relinked = await client.executor.reportState(own, { estado: 'conectada', revinculada: true });
    assert.equal(relinked.generation, first.generation + 1);
    const error = await apiError(client.executor.reportState(own, { estado: 'dormida' }));
    assert.equal(error.status, 422);
    assert.equal(error.field, 'body.estado');
  });
});
