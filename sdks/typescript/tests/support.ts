// What the suites share: the sandbox's Motor (sdks/motor-sandbox exports
// MOTOR_URL, MOTOR_TOKEN, MOTOR_ADMIN_TOKEN, MOTOR_APP_ID,
// MOTOR_DATABASE_URL), the operator API for instances and narrower keys, a
// real HTTP receiver on 127.0.0.1 port 0 that records every request as it
// arrived, and waiting on a condition with a deadline.
import { execFile } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

import { Motor, readBody } from '../src/index.js';

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the suite under sdks/motor-sandbox (sdks/typescript/test does)`);
  return value;
}

export const MOTOR_URL = env('MOTOR_URL');
export const TOKEN = env('MOTOR_TOKEN');
const ADMIN_TOKEN = env('MOTOR_ADMIN_TOKEN');
export const APP_ID = env('MOTOR_APP_ID');

export function motor(token = TOKEN): Motor {
  return new Motor({ url: MOTOR_URL, token, timeoutMs: 15_000 });
}

async function admin<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${MOTOR_URL}/v1/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} /v1/admin${path}: ${response.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** A fresh instance of the sandbox's app: each suite's ledger starts at seq 1. */
export async function newInstance(nombre: string): Promise<string> {
  const created = await admin<{ id: string }>('POST', `/apps/${APP_ID}/instances`, { nombre });
  return created.id;
}

/** A key of the sandbox's app with only these scopes (and instances). */
export async function newKey(scopes: string[], instancias: string[] = []): Promise<string> {
  const created = await admin<{ token: string }>('POST', `/apps/${APP_ID}/keys`, { nombre: `sdk-ts-${scopes.join('-') || 'none'}`, scopes, instancias });
  return created.token;
}

/** Runs SQL on the sandbox's database (to age events for the stream's 410). */
export async function sql(statement: string): Promise<void> {
  await promisify(execFile)('psql', ['-q', '-X', '-v', 'ON_ERROR_STOP=1', env('MOTOR_DATABASE_URL'), '-c', statement]);
}

/** Polls `probe` until it returns something other than undefined/false, or fails at the deadline. */
export async function waitFor<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

/** One request as the receiver got it: headers as they arrived, raw body, and what it answered. */
export interface Received {
  path: string;
  rawHeaders: string[];
  body: Buffer;
  status: number;
}

export type Answer = (req: IncomingMessage, body: Buffer) => number | Promise<number>;

/**
 * A real receiver on 127.0.0.1, port 0. `answer` decides the status of each
 * request (per path prefix); every request is recorded in `received`.
 */
export class Receiver {
  readonly received: Received[] = [];
  readonly #routes = new Map<string, Answer>();
  readonly #server = createServer((req, res) => void this.#handle(req, res));
  url = '';

  static async start(): Promise<Receiver> {
    const receiver = new Receiver();
    await new Promise<void>((resolve) => receiver.#server.listen(0, '127.0.0.1', resolve));
    receiver.url = `http://127.0.0.1:${(receiver.#server.address() as AddressInfo).port}`;
    return receiver;
  }

  /** Answers requests to `path` with `answer` (default 204). */
  route(path: string, answer: Answer): void {
    this.#routes.set(path, answer);
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const path = req.url ?? '/';
    const answer = this.#routes.get(path);
    let status = 204;
    try {
      status = answer ? await answer(req, body) : 204;
    } catch {
      status = 500;
    }
    this.received.push({ path, rawHeaders: [...req.rawHeaders], body, status });
    res.writeHead(status).end();
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** The value of a header in a recorded request (first copy). */
export function header(received: Received, name: string): string | undefined {
  for (let i = 0; i + 1 < received.rawHeaders.length; i += 2) {
    if (received.rawHeaders[i]!.toLowerCase() === name) return received.rawHeaders[i + 1];
  }
  return undefined;
}
