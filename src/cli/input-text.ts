/** The texts commands take as input: given inline or read from a file (`-`: standard input), and JSON ones parsed. */
import { readFileSync } from 'node:fs';
import { CliError } from './errors';

export function parseJson(what: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CliError(`${what} is not valid JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** `-` reads standard input. */
export function readSource(path: string): string {
  try {
    return readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (e) {
    throw new CliError(
      `cannot read ${path === '-' ? 'standard input' : path}: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

/** The text of an input: given inline or read from a file, one of the two. */
export function textOf(inline: string | undefined, file: string | undefined, missing: string): string {
  if (inline !== undefined && file !== undefined) throw new CliError('give the text or --file, not both');
  if (file !== undefined) return readSource(file);
  if (inline === undefined) throw new CliError(missing);
  return inline;
}
