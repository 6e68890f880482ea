#!/usr/bin/env node
// Runs the compiled CLI when the package is built (`npm run build`), else the TypeScript sources through tsx.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const built = join(__dirname, '..', 'dist', 'src', 'cli', 'main.js');
let cli;
if (existsSync(built)) {
  cli = require(built);
} else {
  require('tsx/cjs');
  cli = require('../src/cli/main.ts');
}
cli.main(process.argv).then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
