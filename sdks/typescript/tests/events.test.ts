// Producers and readers against the sandbox's Motor: one event and a
// batch, the Idempotency-Key, source_id dedup, the API's errors as typed
// values (status, code, campo), and the ledger's pages.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';

import { Motor, MotorApiError, MotorConnectionError, type Envelope } from '../src/index.js';
import { motor, MOTOR_URL, newInstance, newKey } from './support.js';

async function apiError(promise: Promise<unknown>): Promise<MotorApiError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof MotorApiError, `not a MotorApiError: ${String(error)}`);
    return error;
  }
  assert.fail('the call succeeded');
}

describe('producing', () => {
  const client = motor();
  let instance: string;
  before(async () => {
    instance = await newInstance('sdk-ts-events');
  });

  it('appends one event and answers its envelope', async () => {
    const envelope = await client.events.append<{ texto: string }>(instance, { type: 'message.sent', data: { texto: 'hola' } });
    assert.equal(envelope.schema_version, 1);
    assert.equal(envelope.instance_id, instance);
    assert.equal(envelope.seq, 1);
    assert.equal(envelope.type, 'message.sent');
    assert.equal(envelope.origin, 'live');
    assert.deepEqual(envelope.data, { texto: 'hola' });
    assert.match(envelope.event_id, /^[0-9a-f-]{36}$/);
  });

  it('appends a batch in order, in one transaction', async () => {
    const events = [1, 2, 3].map((n) => ({ type: 'batch.item', data: { n }, occurred_at: '2026-10-24T15:08:12Z' }));
    const stored = await client.events.appendBatch(instance, events);
    assert.deepEqual(stored.map((e) => e.data), [{ n: 1 }, { n: 2 }, { n: 3 }]);
    assert.deepEqual(stored.map((e) => e.seq), [2, 3, 4]);
    assert.equal(stored[0]!.occurred_at, '2026-10-24T15:08:12Z');
    // All or none: one bad event stores nothing.
    const error = await apiError(client.events.appendBatch(instance, [{ type: 'ok', data: 1 }, { type: ' bad', data: 1 }]));
    assert.equal(error.status, 422);
    assert.equal(error.code, 'validacion');
    assert.match(error.field ?? '', /\[1\]/);
    const page = await client.events.list(instance, { afterSeq: 4 });
    assert.deepEqual(page.events, []);
  });

  it('answers a repeated Idempotency-Key with the first answer and another body with 409', async () => {
    const key = `order-${randomUUID()}`;
    const first = await client.events.append(instance, { type: 'order.paid', data: { total: 42 } }, { idempotencyKey: key });
    const again = await client.events.append(instance, { type: 'order.paid', data: { total: 42 } }, { idempotencyKey: key });
    assert.deepEqual(again, first);
    const error = await apiError(client.events.append(instance, { type: 'order.paid', data: { total: 43 } }, { idempotencyKey: key }));
    assert.equal(error.status, 409);
    assert.equal(error.code, 'conflicto');
  });

  it('stores a source_id once', async () => {
    const source = `wamid.${randomUUID()}`;
    const first = await client.events.append(instance, { type: 'message.received', data: {}, source_id: source });
    const again = await client.events.append(instance, { type: 'message.received', data: {}, source_id: source });
    assert.equal(again.event_id, first.event_id);
    assert.equal(again.seq, first.seq);
  });

  it('gives every refusal as a MotorApiError with the code and the field', async () => {
    let error = await apiError(client.events.append(instance, { type: '', data: {} }));
    assert.equal(error.status, 422);
    assert.equal(error.code, 'validacion');
    assert.equal(error.field, 'body.type');
    error = await apiError(client.events.append(instance, { type: 'x', data: {}, extra: true } as never));
    assert.equal(error.status, 422);
    assert.ok(error.field?.startsWith('body'), error.field);
    error = await apiError(client.events.append(instance, { type: 'x', data: {} }, { idempotencyKey: 'k'.repeat(201) }));
    assert.equal(error.status, 422);
    assert.match(error.field ?? '', /Idempotency-Key/i);
    error = await apiError(client.events.appendBatch(instance, []));
    assert.equal(error.status, 422);
    error = await apiError(new Motor({ url: MOTOR_URL, token: 'mk_not_a_key' }).events.append(instance, { type: 'x', data: {} }));
    assert.equal(error.status, 401);
    assert.equal(error.code, 'no_autenticado');
    const readOnly = new Motor({ url: MOTOR_URL, token: await newKey(['events:read']) });
    error = await apiError(readOnly.events.append(instance, { type: 'x', data: {} }));
    assert.equal(error.status, 403);
    assert.equal(error.code, 'sin_permiso');
    error = await apiError(client.events.append(randomUUID(), { type: 'x', data: {} }));
    assert.equal(error.status, 404);
    assert.equal(error.code, 'no_encontrado');
    error = await apiError(client.events.list(instance, { limit: 501 }));
    assert.equal(error.status, 422);
    assert.equal(error.field, 'query.limit');
    assert.ok(error.message.includes('422 validacion'));
  });

  it('says when Motor cannot be reached', async () => {
    const nowhere = new Motor({ url: 'http://127.0.0.1:9', token: 't', timeoutMs: 2_000 });
    await assert.rejects(nowhere.events.list(instance), MotorConnectionError);
  });
});

describe('reading the ledger', () => {
  const client = motor();
  let instance: string;
  let stored: Envelope[];
  before(async () => {
    instance = await newInstance('sdk-ts-ledger');
    stored = await client.events.appendBatch(
      instance,
      Array.from({ length: 7 }, (_, i) => ({ type: i % 2 === 0 ? 'par' : 'impar', data: { i } })),
    );
  });

  it('reads one page with next_after_seq and has_more', async () => {
    const page = await client.events.list(instance, { afterSeq: 2, limit: 3 });
    assert.deepEqual(page.events.map((e) => e.seq), [3, 4, 5]);
    assert.equal(page.next_after_seq, 5);
    assert.equal(page.has_more, true);
    assert.deepEqual(page.events, stored.slice(2, 5));
  });

  it('walks every page until has_more is false, resuming where a page ends', async () => {
    const seen: number[][] = [];
    for await (const page of client.events.pages(instance, { limit: 3 })) seen.push(page.events.map((e) => e.seq));
    assert.deepEqual(seen, [[1, 2, 3], [4, 5, 6], [7]]);
    const rest: number[] = [];
    for await (const page of client.events.pages(instance, { afterSeq: 5, limit: 100 })) rest.push(...page.events.map((e) => e.seq));
    assert.deepEqual(rest, [6, 7]);
  });

  it('filters by types', async () => {
    const seqs: number[] = [];
    for await (const page of client.events.pages(instance, { types: ['impar'], limit: 2 })) seqs.push(...page.events.map((e) => e.seq));
    assert.deepEqual(seqs, [2, 4, 6]);
  });
});
