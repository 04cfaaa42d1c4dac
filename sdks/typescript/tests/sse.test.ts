// The Server-Sent Events parser on its own: the stream Motor sends cut at
// every byte, the three line endings, a BOM, comments, multi-line data,
// an id without data, UTF-8 split across chunks, and a cut last message.
import assert from 'node:assert/strict';
import { it } from 'node:test';

import { parseSse, type SseItem } from '../src/sse.js';

async function parse(chunks: (string | Uint8Array)[]): Promise<SseItem[]> {
  async function* body() {
    for (const c of chunks) yield typeof c === 'string' ? new TextEncoder().encode(c) : c;
  }
  const out: SseItem[] = [];
  for await (const item of parseSse(body())) out.push(item);
  return out;
}

const MOTOR =
  ': motor stream cursor=3\nid: 3\n\n' +
  'id: 4\nevent: message.sent\ndata: {"seq":4,"data":{"texto":"ñandú ✓"}}\n\n' +
  ': ping\n\n' +
  'id: 5\nevent: message.sent\ndata: {"seq":5}\n\n' +
  ': fin motivo=apagado cursor=5\n\n';

const EXPECTED: SseItem[] = [
  { kind: 'comment', text: 'motor stream cursor=3' },
  { kind: 'message', id: '3', event: 'message', data: undefined },
  { kind: 'message', id: '4', event: 'message.sent', data: '{"seq":4,"data":{"texto":"ñandú ✓"}}' },
  { kind: 'comment', text: 'ping' },
  { kind: 'message', id: '5', event: 'message.sent', data: '{"seq":5}' },
  { kind: 'comment', text: 'fin motivo=apagado cursor=5' },
];

it("parses Motor's stream whatever the chunks, multi-byte characters split included", async () => {
  const bytes = new TextEncoder().encode(MOTOR);
  assert.deepEqual(await parse([bytes]), EXPECTED);
  for (let cut = 1; cut < bytes.length; cut++) {
    assert.deepEqual(await parse([bytes.slice(0, cut), bytes.slice(cut)]), EXPECTED, `cut at byte ${cut}`);
  }
  assert.deepEqual(await parse([...bytes].map((b) => Uint8Array.of(b))), EXPECTED, 'one byte at a time');
});

it('takes CRLF, CR and LF line endings, a BOM and fields without a space', async () => {
  for (const eol of ['\r\n', '\r', '\n']) {
    const text = '\uFEFF' + MOTOR.replaceAll('\n', eol);
    assert.deepEqual(await parse([text]), EXPECTED, JSON.stringify(eol));
    const half = Math.floor(text.length / 2);
    assert.deepEqual(await parse([text.slice(0, half), text.slice(half)]), EXPECTED);
  }
  assert.deepEqual(await parse(['id:7\ndata:x\n\n']), [{ kind: 'message', id: '7', event: 'message', data: 'x' }]);
});

it('joins data lines, ignores unknown fields and never dispatches a cut message', async () => {
  assert.deepEqual(await parse(['data: a\ndata: b\nretry: 10\nfoo: bar\n\n']), [{ kind: 'message', id: undefined, event: 'message', data: 'a\nb' }]);
  assert.deepEqual(await parse(['id: 9\ndata: {"seq":9}\n']), []);
  assert.deepEqual(await parse(['\n\n\n']), []);
});
