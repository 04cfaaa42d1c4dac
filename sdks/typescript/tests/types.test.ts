// The SDK's types are generated from schemas/openapi.json into
// src/openapi.ts (scripts/generate-types.mjs); every exported type is an
// alias of a generated one. This fails while the committed file lags the
// document, and proves it would fail for a field added to the API.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { USER_AGENT } from '../src/http.js';

const sdk = fileURLToPath(new URL('../../', import.meta.url));
const script = join(sdk, 'scripts', 'generate-types.mjs');
const document = join(sdk, '..', '..', 'schemas', 'openapi.json');

async function check(path: string): Promise<{ code: number; stderr: string }> {
  try {
    await promisify(execFile)(process.execPath, [script, '--check', path]);
    return { code: 0, stderr: '' };
  } catch (error) {
    const e = error as { code?: number; stderr?: string };
    return { code: e.code ?? -1, stderr: e.stderr ?? '' };
  }
}

describe('generated types', { concurrency: true }, () => {
  it('src/openapi.ts is what schemas/openapi.json generates', async () => {
    const result = await check(document);
    assert.equal(result.code, 0, result.stderr);
  });

  it('a field added to the API and not to the SDK fails the check', async () => {
    const spec = JSON.parse(await readFile(document, 'utf8'));
    spec.components.schemas.Envelope.properties.campo_nuevo = { type: 'string' };
    spec.components.schemas.Subscription.required.push('otro_campo');
    spec.components.schemas.Subscription.properties.otro_campo = { type: 'integer' };
    const dir = await mkdtemp(join(tmpdir(), 'motor-sdk-ts-'));
    try {
      const changed = join(dir, 'openapi.json');
      await writeFile(changed, JSON.stringify(spec));
      const result = await check(changed);
      assert.equal(result.code, 1);
      assert.match(result.stderr, /out of date/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("the user agent names package.json's version", async () => {
    const pkg = JSON.parse(await readFile(join(sdk, 'package.json'), 'utf8'));
    assert.equal(USER_AGENT, `motor-sdk-typescript/${pkg.version}`);
  });
});
