/**
 * The conversation store of a command that needs no Temporal server (`usage`, `budget show`, `eval`, `score`...): found
 * as every command finds it (`--store`, `INFINITY_STORE`, a running `dev`), with a clear error when there is none.
 */
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import type { ConversationStore } from '../store/conversation-store';
import { storeOpen } from './lazy';
import { CliError } from './errors';
import { storePathOf, type TargetFlags } from './target';

/** Opens the command's store (read-only unless `write`); a SQLite file that is not there is an error, not created. */
export function openCommandStore(cmd: Command, options: { write?: boolean } = {}): ConversationStore {
  const path = storePathOf(cmd.optsWithGlobals<TargetFlags>());
  if (path === undefined)
    throw new CliError('no conversation store: pass --store (or set INFINITY_STORE), or run `infinity-temporal dev`');
  const { isPostgresUrl, openConversationStore } = storeOpen();
  if (!isPostgresUrl(path) && !existsSync(path)) throw new CliError(`no conversation store at ${path}`);
  return openConversationStore(path, { readonly: !options.write });
}

/** Runs `fn` with the command's store, closing it whatever happens. */
export async function withCommandStore<T>(
  cmd: Command,
  fn: (store: ConversationStore) => Promise<T>,
  options: { write?: boolean } = {},
): Promise<T> {
  const store = openCommandStore(cmd, options);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
