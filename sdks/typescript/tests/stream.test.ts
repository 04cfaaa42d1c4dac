// Following a stream against the sandbox's Motor, through a TCP proxy on
// loopback that the test can cut: resume after the last cursor with no gap
// and no duplicate, the opening position, types, and the 410 made explicit.
import assert from 'node:assert/strict';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';

import { CursorExpiredError, Motor, MotorApiError, type Envelope, type ReconnectInfo } from '../src/index.js';
import { motor, MOTOR_URL, newInstance, newKey, sql, TOKEN, waitFor } from './support.js';

/** Forwards 127.0.0.1:<port> to Motor; `cut()` drops every open connection. */
class Proxy {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  connections = 0;
  /** New connections get no answer at all. */
  stall = false;
  url = '';

  constructor(target: URL) {
    this.#server = createServer((client) => {
      this.connections++;
      if (this.stall) {
        // Accepts and answers nothing, like a dead peer behind a firewall.
        this.#sockets.add(client);
        client.on('close', () => this.#sockets.delete(client));
        client.on('error', () => client.destroy());
        return;
      }
      const upstream = connect(Number(target.port), target.hostname);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    const address = this.#server.address();
    if (address === null || typeof address === 'string') throw new Error('no address');
    this.url = `http://127.0.0.1:${address.port}`;
  }

  cut(): void {
    for (const s of this.#sockets) s.destroy();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** Reads `count` envelopes from an iterator, failing after `ms`. */
async function take<D>(iterator: AsyncIterator<Envelope<D>>, count: number, ms = 15_000): Promise<Envelope<D>[]> {
  const out: Envelope<D>[] = [];
  const deadline = Date.now() + ms;
  while (out.length < count) {
    let timer: NodeJS.Timeout | undefined;
    const next = await Promise.race([
      iterator.next(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`only ${out.length} of ${count} events within ${ms} ms`)), Math.max(0, deadline - Date.now()));
      }),
    ]).finally(() => clearTimeout(timer));
    if (next.done) throw new Error(`the stream ended after ${out.length} of ${count} events`);
    out.push(next.value);
  }
  return out;
}

describe('streams', () => {
  const client = motor();
  const proxy = new Proxy(new URL(MOTOR_URL));
  let proxied: Motor;
  before(async () => {
    await proxy.start();
    proxied = new Motor({ url: proxy.url, token: TOKEN });
  });
  after(() => proxy.close());

  it('resumes after a cut connection with Last-Event-ID: no gap, no duplicate', async () => {
    const instance = await newInstance('sdk-ts-stream-resume');
    await client.events.appendBatch(instance, [1, 2, 3].map((n) => ({ type: 'paso', data: { n } })));
    const reconnects: ReconnectInfo[] = [];
    const stream = proxied.events.stream(instance, { after: 0, retry: { initialDelayMs: 50 }, onReconnect: (info) => reconnects.push(info) });
    const iterator = stream[Symbol.asyncIterator]();
    assert.deepEqual((await take(iterator, 3)).map((e) => e.seq), [1, 2, 3]);
    assert.equal(stream.cursor, 3);
    const before = proxy.connections;
    proxy.cut();
    await client.events.appendBatch(instance, [4, 5].map((n) => ({ type: 'paso', data: { n } })));
    const resumed = await take(iterator, 2);
    assert.deepEqual(resumed.map((e) => e.seq), [4, 5]);
    assert.deepEqual(resumed.map((e) => e.data), [{ n: 4 }, { n: 5 }]);
    assert.ok(proxy.connections > before, 'a new connection was opened');
    assert.equal(reconnects[0]?.cursor, 3);
    // Live events after the resume, still in order.
    await client.events.append(instance, { type: 'paso', data: { n: 6 } });
    assert.deepEqual((await take(iterator, 1)).map((e) => e.seq), [6]);
    assert.equal(stream.cursor, 6);
    stream.close();
    assert.equal((await iterator.next()).done, true);
  });

  it('takes a silent connection for dead and resumes from the cursor', async () => {
    const instance = await newInstance('sdk-ts-stream-silence');
    await client.events.appendBatch(instance, [1, 2].map((n) => ({ type: 'paso', data: { n } })));
    const reasons: string[] = [];
    proxy.stall = true;
    proxy.cut(); // fetch's pooled keep-alive connections too
    const stream = proxied.events.stream(instance, { after: 0, idleTimeoutMs: 300, retry: { initialDelayMs: 50, maxDelayMs: 100 }, onReconnect: (i) => reasons.push(i.reason) });
    const iterator = stream[Symbol.asyncIterator]();
    const first = take(iterator, 2);
    // Nothing answers: each attempt gives up after 300 ms.
    await waitFor('two silent attempts', () => reasons.filter((r) => r === 'silencio').length >= 2);
    proxy.stall = false;
    assert.deepEqual((await first).map((e) => e.seq), [1, 2]);
    // Open but quiet while the caller waits (Motor pings only every 15 s):
    // reopened from cursor 2, and nothing is lost or repeated.
    const quiet = reasons.length;
    const next = take(iterator, 1);
    await waitFor('a quiet connection to be reopened', () => reasons.length > quiet + 1);
    assert.equal(stream.cursor, 2);
    await client.events.append(instance, { type: 'paso', data: { n: 3 } });
    assert.deepEqual((await next).map((e) => e.seq), [3]);
    await iterator.return?.();
  });

  it('without a cursor starts at the events committed after it opened, and filters types', async () => {
    const instance = await newInstance('sdk-ts-stream-now');
    await client.events.append(instance, { type: 'antes', data: {} });
    const stream = client.events.stream(instance, { types: ['despues'] });
    const iterator = stream[Symbol.asyncIterator]();
    const first = take(iterator, 2);
    // The opening `id: N` sets the cursor: the stream is open at seq 1.
    await waitFor('the stream to open', () => stream.cursor === 1);
    await client.events.appendBatch(instance, [
      { type: 'otro', data: {} },
      { type: 'despues', data: { a: 1 } },
      { type: 'despues', data: { a: 2 } },
    ]);
    assert.deepEqual((await first).map((e) => [e.seq, e.type]), [[3, 'despues'], [4, 'despues']]);
    await iterator.return?.();
  });

  it('throws CursorExpiredError with firstCursor for a cursor past the window, and restarts only when told', async () => {
    const instance = await newInstance('sdk-ts-stream-410');
    await client.events.appendBatch(instance, [1, 2, 3, 4, 5].map((n) => ({ type: 'paso', data: { n } })));
    // Events 1–3 received 100 h ago: past streams.retencion_horas (72).
    await sql(`UPDATE events SET recibido_en = now() - interval '100 hours' WHERE instance_id = '${instance}' AND seq <= 3`);
    const stream = client.events.stream(instance, { after: 1 });
    let expired: CursorExpiredError | undefined;
    try {
      for await (const event of stream) assert.fail(`no event expected, got seq ${event.seq}`);
    } catch (error) {
      assert.ok(error instanceof CursorExpiredError, String(error));
      expired = error;
    }
    assert.equal(expired!.status, 410);
    assert.equal(expired!.code, 'cursor_vencido');
    assert.equal(expired!.cursor, 1);
    assert.equal(expired!.firstCursor, 3);
    const restarted = client.events.stream(instance, { after: expired!.firstCursor });
    const iterator = restarted[Symbol.asyncIterator]();
    assert.deepEqual((await take(iterator, 2)).map((e) => e.seq), [4, 5]);
    await iterator.return?.();
  });

  it('throws the refusals waiting cannot fix', async () => {
    const instance = await newInstance('sdk-ts-stream-refused');
    const writeOnly = new Motor({ url: MOTOR_URL, token: await newKey(['events:write']) });
    await assert.rejects(
      async () => {
        for await (const _ of writeOnly.events.stream(instance)) break;
      },
      (e: MotorApiError) => e.status === 403 && e.code === 'sin_permiso',
    );
    await assert.rejects(
      async () => {
        for await (const _ of client.events.stream(instance, { after: 99 })) break;
      },
      (e: MotorApiError) => e.status === 422 && e.code === 'validacion' && e.field === 'header.Last-Event-ID',
    );
    assert.throws(() => client.events.stream(instance, { after: -1 }), TypeError);
  });
});
