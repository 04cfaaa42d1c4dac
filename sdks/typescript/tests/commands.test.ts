// A producer's commands against the sandbox's Motor: a send and another
// kind resolve with the stored command, the Idempotency-Key answers the
// same command (another request under it is a 409), command.accepted is
// in the ledger, the listing filters and pages, a cancel, and the
// refusals as typed errors naming their field.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';

import { MotorApiError } from '../src/index.js';
import { motor, newInstance, newKey } from './support.js';

async function apiError(promise: Promise<unknown>): Promise<MotorApiError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof MotorApiError, `not a MotorApiError: ${String(error)}`);
    return error;
  }
  assert.fail('the call succeeded');
}

describe('commands', () => {
  const client = motor();
  let instance: string;
  before(async () => {
    instance = await newInstance('sdk-ts-commands');
  });

  it('sends a message once per Idempotency-Key, with command.accepted in the ledger', async () => {
    const key = `pedido-${randomUUID()}`;
    const message = { chat: '5491122334455@s.whatsapp.net', contenido: { texto: 'hola' } };
    const sent = await client.commands.send(instance, message, { idempotencyKey: key });
    assert.equal(sent.tipo, 'mensaje');
    assert.equal(sent.status, 'en_cola');
    assert.equal(sent.instance_id, instance);
    assert.equal(sent.chat, message.chat);
    assert.deepEqual(sent.contenido, message.contenido);
    assert.ok(sent.next_try);
    const again = await client.commands.send(instance, message, { idempotencyKey: key });
    assert.equal(again.id, sent.id);
    const error = await apiError(client.commands.send(instance, { ...message, contenido: { texto: 'otro' } }, { idempotencyKey: key }));
    assert.equal(error.status, 409);
    assert.equal(error.code, 'conflicto');
    assert.deepEqual(await client.commands.get(sent.id), sent);
    const page = await client.events.list(instance, { types: ['command.accepted'] });
    assert.deepEqual(page.events.map((e) => e.command_id), [sent.id]);
  });

  it('submits other kinds, lists them by status and cancels one', async () => {
    const op = await client.commands.submit(instance, { tipo: 'grupos', parametros: { operacion: 'unirse' }, correlation_id: 'c-1' });
    assert.equal(op.status, 'aceptado');
    assert.equal(op.tipo, 'grupos');
    assert.deepEqual(op.parametros, { operacion: 'unirse' });
    const control = await client.commands.submit(instance, { tipo: 'pausar' }, { idempotencyKey: `p-${randomUUID()}` });
    assert.deepEqual(control.parametros, {});
    const cancelled = await client.commands.cancel(control.id);
    assert.equal(cancelled.status, 'cancelado');
    const late = await apiError(client.commands.cancel(control.id));
    assert.equal(late.status, 409);

    const newest = await client.commands.list(instance, { perPage: 1 });
    assert.deepEqual(newest.commands.map((c) => c.id), [control.id]);
    assert.equal(newest.hay_mas, true);
    const open = await client.commands.list(instance, { statuses: ['aceptado'] });
    assert.deepEqual(open.commands.map((c) => c.id), [op.id]);
    const gone = await client.commands.list(instance, { statuses: ['cancelado', 'fallido'] });
    assert.deepEqual(gone.commands.map((c) => c.id), [control.id]);
  });

  it('gives each refusal with its status, code and field', async () => {
    let error = await apiError(client.commands.submit(instance, { tipo: 'enviar' as never }));
    assert.equal(error.status, 422);
    assert.equal(error.field, 'body.tipo');
    error = await apiError(client.commands.send(instance, { chat: '', contenido: {} }, { idempotencyKey: 'k' }));
    assert.equal(error.field, 'body.chat');
    error = await apiError(client.commands.send(instance, { chat: '549', contenido: {}, expires_at: '2020-01-01T00:00:00Z' }, { idempotencyKey: 'k' }));
    assert.equal(error.field, 'body.expires_at');
    error = await apiError(client.commands.send(instance, { chat: '549', contenido: {} }, { idempotencyKey: 'k'.repeat(201) }));
    assert.equal(error.field, 'header.Idempotency-Key');
    await assert.rejects(client.commands.send(instance, { chat: '549', contenido: {} }, {} as never), TypeError);
    error = await apiError(client.commands.get(randomUUID()));
    assert.equal(error.status, 404);
    const reader = motor(await newKey(['commands:read']));
    error = await apiError(reader.commands.submit(instance, { tipo: 'pausar' }));
    assert.equal(error.status, 403);
    assert.equal(error.code, 'sin_permiso');
  });
});
