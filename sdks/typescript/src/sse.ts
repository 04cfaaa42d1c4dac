// A Server-Sent Events parser over a fetch body, as the WHATWG HTML
// standard reads a stream: lines end in CRLF, LF or CR; `field: value`
// (one leading space dropped); `:` starts a comment; a blank line
// dispatches; `id` without data still moves the last event id (Motor's
// opening `id: N` does exactly that).

export type SseItem =
  | { kind: 'message'; id: string | undefined; event: string; data: string | undefined }
  | { kind: 'comment'; text: string };

export async function* parseSse(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseItem, void, undefined> {
  const decoder = new TextDecoder('utf-8');
  let buffer = '';
  let id: string | undefined;
  let event = '';
  let data: string[] = [];
  let first = true;

  function* lines(final: boolean): Generator<string> {
    let start = 0;
    for (let i = 0; i < buffer.length; i++) {
      const c = buffer.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      // A CR at the very end may be the first half of a CRLF.
      if (c === 13 && i === buffer.length - 1 && !final) break;
      yield buffer.slice(start, i);
      if (c === 13 && buffer.charCodeAt(i + 1) === 10) i++;
      start = i + 1;
    }
    buffer = buffer.slice(start);
  }

  function* feed(line: string): Generator<SseItem> {
    if (line === '') {
      if (id !== undefined || data.length > 0) {
        yield { kind: 'message', id, event: event || 'message', data: data.length > 0 ? data.join('\n') : undefined };
      }
      id = undefined;
      event = '';
      data = [];
      return;
    }
    if (line.startsWith(':')) {
      yield { kind: 'comment', text: line.slice(1).replace(/^ /, '') };
      return;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id' && !value.includes('\0')) id = value;
    // `retry` and unknown fields are ignored: reconnection is ours.
  }

  for await (const chunk of body) {
    let text = decoder.decode(chunk, { stream: true });
    if (first && text.length > 0) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      first = false;
    }
    buffer += text;
    for (const line of lines(false)) yield* feed(line);
  }
  buffer += decoder.decode();
  for (const line of lines(true)) yield* feed(line);
  // A message without its blank line was cut: never dispatched.
}
