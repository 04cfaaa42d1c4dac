// Reading header values from whatever the HTTP stack hands over, keeping
// every copy of a repeated header so that it can be refused:
// - a Node request (`http.IncomingMessage`, Express, Fastify's `raw`):
//   its `rawHeaders`, exactly as they arrived;
// - `[name, value]` pairs, or a record whose array values are repeats
//   (Node's `headersDistinct`);
// - a fetch `Headers`: it joins repeats with ", " and cannot tell them
//   apart, so prefer one of the above where the stack offers it.
import { malformed, missing, repeated } from './errors.js';

export type HeaderInput =
  | { rawHeaders: readonly string[] }
  | Iterable<readonly [string, string]>
  | { forEach(callback: (value: string, name: string) => void): void; get(name: string): string | null }
  | Readonly<Record<string, string | readonly string[] | undefined>>;

/** Header name (lower case) → every value received, in order. */
export type HeaderValues = ReadonlyMap<string, readonly string[]>;

export function collect(input: HeaderInput): HeaderValues {
  const map = new Map<string, string[]>();
  const add = (name: string, value: string) => {
    const key = name.toLowerCase();
    const list = map.get(key);
    if (list) list.push(value);
    else map.set(key, [value]);
  };
  if (input === null || typeof input !== 'object') throw new TypeError('headers must be an object');
  if ('rawHeaders' in input && Array.isArray(input.rawHeaders)) {
    const raw = input.rawHeaders;
    for (let i = 0; i + 1 < raw.length; i += 2) add(raw[i]!, raw[i + 1]!);
  } else if (typeof (input as { get?: unknown }).get === 'function' && typeof (input as { forEach?: unknown }).forEach === 'function') {
    (input as { forEach(cb: (value: string, name: string) => void): void }).forEach((value, name) => add(name, value));
  } else if (Symbol.iterator in input) {
    for (const [name, value] of input as Iterable<readonly [string, string]>) add(name, value);
  } else {
    for (const [name, value] of Object.entries(input as Record<string, string | readonly string[] | undefined>)) {
      if (value === undefined) continue;
      if (typeof value === 'string') add(name, value);
      else for (const one of value) add(name, one);
    }
  }
  return map;
}

/** The one value of `name`, trimmed; undefined when absent or empty. */
export function optional(headers: HeaderValues, name: string): string | undefined {
  const values = headers.get(name) ?? [];
  if (values.length === 0) return undefined;
  if (values.length > 1) throw repeated(name);
  const text = values[0]!.trim();
  if (/[\x00-\x1f\x7f]/.test(text)) throw malformed(name, 'control characters');
  return text === '' ? undefined : text;
}

/** Like `optional`, but absent or empty is `missing_header`. */
export function required(headers: HeaderValues, name: string): string {
  const value = optional(headers, name);
  if (value === undefined) throw missing(name);
  return value;
}
