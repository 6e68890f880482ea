/**
 * The npm package ships only itself, and works from it: `npm pack` (which builds) holds the compiled library, the
 * command, the docs and the licence, nothing of the tests, benchmark or CI; unpacked where Node resolves it as an
 * installed package, it runs a thread from plain ESM and from CommonJS against the suite's dev server, its subpaths
 * (`infinity-temporal/rap`, `infinity-temporal/testing`) load in both module systems and type-check, and its command
 * answers `--help`.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { packedTarball, repositoryRoot as root } from './packed';

const run = promisify(execFile);

/** A thread on the simulated model, through the package's public API only; prints its history as JSON. */
const program = (load: string) => `
${load}
const { NativeConnection } = require('@temporalio/worker');
const { Client, Connection } = require('@temporalio/client');
(async () => {
  const { createAgentWorker, AgentClient, InMemoryConversationStore, SimulatedModel } = api;
  const taskQueue = 'package-' + process.pid;
  const store = new InMemoryConversationStore();
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS });
  const worker = await createAgentWorker({ connection, taskQueue, store, model: new SimulatedModel({ toolName: 'none' }) });
  const running = worker.run();
  const client = new AgentClient({ client: new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS }) }), taskQueue, store });
  const thread = await client.startThread();
  await thread.sendUserText('Hello from the package');
  await thread.waitForIdle();
  console.log(JSON.stringify((await thread.history()).map((i) => i.kind)));
  await worker.shutdown();
  await running;
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
`;

describe('the npm package', () => {
  // Inside the repository, so the unpacked package finds its dependencies in the repository's node_modules the way
  // an installed package finds its siblings.
  const dir = mkdtempSync(join(root, '.pack-test-'));
  const installed = join(dir, 'node_modules', 'infinity-temporal');
  let files: string[] = [];

  beforeAll(async () => {
    // The same tarball test/soak/first-hour.soak.test.ts installs (packed once per run).
    const packed = await packedTarball();
    files = packed.files;
    mkdirSync(installed, { recursive: true });
    await run('tar', ['-xzf', packed.tarball, '-C', installed, '--strip-components', '1']);
    // A project of its own: without it the repository's package.json is the scripts' nearest, and Node resolves
    // `infinity-temporal` there by self-reference, to the repository's dist/ instead of the unpacked package.
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'package-test', private: true }));
  }, 300_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('holds the library, the command, the docs and the licence, and nothing else', () => {
    const outside = files.filter(
      // docs/experiments/: the shipped experiment files (docs/experiments.md).
      (f) =>
        !/^(dist\/src\/.*\.(js|d\.ts)|bin\/[^/]+|docs\/([^/]+|experiments\/[^/]+\.json|upstream\/[^/]+\.md)|README\.md|LICENSE|package\.json)$/.test(
          f,
        ),
    );
    expect(outside).toEqual([]);
    // The tests' and the benchmark's servers live in infra/, outside src/; a dist/ built before they moved out of
    // src/ still holds them (delete dist/ and build again).
    expect(files.filter((f) => /^dist\/src\/(cluster\/|devserver\/postgres\.)/.test(f))).toEqual([]);
    for (const f of [
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/rap/index.js',
      'dist/src/rap/index.d.ts',
      'dist/src/testing.js',
      'dist/src/testing.d.ts',
      'dist/src/workflows/index.js',
      'dist/src/cli/main.js',
      'bin/infinity-temporal.cjs',
      'LICENSE',
      'README.md',
    ]) {
      expect(files).toContain(f);
    }
  });

  it('runs a thread from CommonJS and from ESM', async () => {
    const env = { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress') };
    writeFileSync(join(dir, 'thread.cjs'), program("const api = require('infinity-temporal');"));
    // Named imports: an ESM importer needs Node to see the CommonJS build's exports by name.
    const esm = [
      "import { createAgentWorker, AgentClient, InMemoryConversationStore, SimulatedModel } from 'infinity-temporal';",
      "import { createRequire } from 'node:module';",
      'const require = createRequire(import.meta.url);',
      'const api = { createAgentWorker, AgentClient, InMemoryConversationStore, SimulatedModel };',
    ].join('\n');
    writeFileSync(join(dir, 'thread.mjs'), program(esm));
    for (const file of ['thread.cjs', 'thread.mjs']) {
      const { stdout } = await run(process.execPath, [file], { cwd: dir, env, timeout: 120_000 });
      // The simulated model calls a tool after a user text; 'none' is not registered, so the call gets an error
      // result and the model answers it.
      expect(JSON.parse(stdout.trim().split('\n').pop()!)).toEqual([
        'user',
        'assistant',
        'tool_call',
        'tool_result',
        'assistant',
      ]);
    }
  }, 300_000);

  it('serves its subpaths to CommonJS, ESM and TypeScript, with the same exports as the root', async () => {
    // One name from each subpath, and the same name from the root (named ESM imports of the root's `export *`).
    const report =
      'console.log(JSON.stringify({ rap: typeof startRapGateway, testing: typeof ScriptedModel, ' +
      'sameAsRoot: startRapGateway === root.startRapGateway && ScriptedModel === root.ScriptedModel }));';
    writeFileSync(
      join(dir, 'subpaths.cjs'),
      [
        "const { startRapGateway } = require('infinity-temporal/rap');",
        "const { ScriptedModel } = require('infinity-temporal/testing');",
        "const root = require('infinity-temporal');",
        report,
        "console.log(require.resolve('infinity-temporal/rap'));",
      ].join('\n'),
    );
    writeFileSync(
      join(dir, 'subpaths.mjs'),
      [
        "import { startRapGateway } from 'infinity-temporal/rap';",
        "import { ScriptedModel } from 'infinity-temporal/testing';",
        "import { startRapGateway as rootGateway, ScriptedModel as rootScripted } from 'infinity-temporal';",
        'const root = { startRapGateway: rootGateway, ScriptedModel: rootScripted };',
        report,
      ].join('\n'),
    );
    for (const file of ['subpaths.cjs', 'subpaths.mjs']) {
      const { stdout } = await run(process.execPath, [file], { cwd: dir, timeout: 60_000 });
      const [reported, resolved] = stdout.trim().split('\n');
      if (resolved !== undefined) expect(resolved).toBe(join(installed, 'dist', 'src', 'rap', 'index.js'));
      expect({ file, ...JSON.parse(reported!) }).toEqual({
        file,
        rap: 'function',
        testing: 'function',
        sameAsRoot: true,
      });
    }
    // The `types` conditions: a user's TypeScript (node16 resolution, ESM and CommonJS files) finds the declarations.
    const typed = [
      "import { startRapGateway, type RapGatewayOptions } from 'infinity-temporal/rap';",
      "import { ScriptedModel, type ScriptedTurn } from 'infinity-temporal/testing';",
      'const turn: ScriptedTurn = { text: "hi" };',
      'export const model = new ScriptedModel(() => turn);',
      'export const start: (o: RapGatewayOptions) => Promise<unknown> = startRapGateway;',
    ].join('\n');
    writeFileSync(join(dir, 'typed.mts'), typed);
    writeFileSync(join(dir, 'typed.cts'), typed);
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const flags = '--noEmit --strict --target es2022 --module node16 --skipLibCheck --types node'.split(' ');
    await run(process.execPath, [tsc, ...flags, 'typed.mts', 'typed.cts'], { cwd: dir, timeout: 120_000 });
  }, 180_000);

  it('installs a working command', async () => {
    const { stdout } = await run(process.execPath, [join(installed, 'bin', 'infinity-temporal.cjs'), '--help'], {
      cwd: dir,
    });
    expect(stdout).toContain('Usage: infinity-temporal');
  });
});
