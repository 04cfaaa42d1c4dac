// Generates src/openapi.ts, the types of every API object, from Motor's
// OpenAPI document (schemas/openapi.json at the repository's root, or the
// path given). `--check` writes nothing and exits 1 when the committed file
// differs from what the document gives: the test suite runs it, so a field
// added to the API and not to the SDK fails the tests.
//
//   node scripts/generate-types.mjs [--check] [path/to/openapi.json]
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const check = args.includes('--check');
const source = resolve(args.find((a) => a !== '--check') ?? resolve(here, '../../../schemas/openapi.json'));
const target = resolve(here, '../src/openapi.ts');

export async function generate(documentPath) {
  const ast = await openapiTS(pathToFileURL(documentPath), { alphabetize: false });
  const header =
    '// Generated from schemas/openapi.json by scripts/generate-types.mjs: do not edit.\n' +
    '// `npm run generate` rewrites it; the test suite fails while it is out of date.\n\n';
  return header + astToString(ast);
}

const text = await generate(source);
if (check) {
  const committed = await readFile(target, 'utf8').catch(() => '');
  if (committed !== text) {
    console.error(`${target} is out of date with ${source}: run \`npm run generate\``);
    process.exit(1);
  }
} else {
  await writeFile(target, text);
  console.log(`wrote ${target}`);
}
