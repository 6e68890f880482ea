/** A JSON file a command was given (`eval --threads <file>`, `experiment run <file>`), read and parsed. */
import { readFileSync } from 'node:fs';
import { CliError } from './target';

/**
 * The parsed file: a {@link CliError} when it cannot be read, `notJson(message)` (the command's own typed error) when it
 * is not JSON; what the JSON holds is the caller's to check.
 */
export function readJsonFile(file: string, notJson: (message: string) => Error): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw notJson(`${file}: not JSON (${e instanceof Error ? e.message : String(e)})`);
  }
}
