#!/usr/bin/env node
// Runs the TypeScript sources through tsx in a checkout (so edits take effect at once), else the compiled package.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

function fromSources() {
  const source = join(__dirname, '..', 'src', 'cli', 'main.ts');
  if (!existsSync(source)) return undefined;
  try {
    require.resolve('tsx/cjs');
  } catch {
    return undefined;
  }
  require('tsx/cjs');
  return require(source);
}

/**
 * Exits once stdout and stderr have handed everything to the OS: `process.exit` drops what a pipe has not taken yet
 * (the end of a long `history --json | ...` was lost). Writes complete in order, so an empty write's callback comes
 * after all earlier output.
 */
function exitAfterOutput(code) {
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

const cli = fromSources() ?? require(join(__dirname, '..', 'dist', 'src', 'cli', 'main.js'));
cli.main(process.argv).then(exitAfterOutput, (e) => {
  console.error(e);
  exitAfterOutput(1);
});
