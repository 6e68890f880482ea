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

const cli = fromSources() ?? require(join(__dirname, '..', 'dist', 'src', 'cli', 'main.js'));
cli.main(process.argv).then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
