/** `npm run temporal:install`: finds or installs the Temporal CLI and prints its path. */
import { execFileSync } from 'node:child_process';
import { findTemporalCli } from '../src/devserver/cli';

const path = findTemporalCli({ log: (l) => console.error(l) });
console.log(path);
console.log(execFileSync(path, ['--version'], { encoding: 'utf8' }).trim());
