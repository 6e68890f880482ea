#!/usr/bin/env node
/**
 * `npm test`'s static checks — the type check, the lint and the format check — run side by side (they take ~50 s one
 * after another on two cores, ~30 s together). Each one's output is printed whole when it ends, so the three never
 * interleave; the exit code is the first failure's, 0 when all pass.
 */
import { Buffer } from 'node:buffer';
import { spawn } from 'node:child_process';
import process from 'node:process';

const CHECKS = [
  ['typecheck', 'tsc -p tsconfig.json --noEmit'],
  ['lint', 'eslint .'],
  ['format', 'prettier --check .'],
];

const results = await Promise.all(
  CHECKS.map(
    ([name, command]) =>
      new Promise((resolve) => {
        const started = Date.now();
        const child = spawn(command, { shell: true, stdio: ['ignore', 'pipe', 'pipe'] });
        const output = [];
        child.stdout.on('data', (d) => output.push(d));
        child.stderr.on('data', (d) => output.push(d));
        child.on('close', (code) => {
          const text = Buffer.concat(output).toString().trimEnd();
          const took = ((Date.now() - started) / 1000).toFixed(1);
          process.stdout.write(`> ${name}: ${command} (${code === 0 ? 'passed' : `exit ${code}`}, ${took} s)\n`);
          if (text) process.stdout.write(`${text}\n`);
          resolve(code ?? 1);
        });
      }),
  ),
);
process.exitCode = results.find((code) => code !== 0) ?? 0;
