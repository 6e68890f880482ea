/** A command's client: its target resolved from the flags, a client opened for it, released whatever happens. */
import type { Command } from 'commander';
import type { AgentClient } from '../client/agent-client';
import type { ConversationStore } from '../store/conversation-store';
import { openClient, resolveTarget, type Target, type TargetFlags } from './target';

/**
 * Runs `fn` with a client for the command's target, always releasing it; `stage`: see {@link openClient}. `store`: the
 * client's conversation store, if it has one.
 */
export async function withClient<T>(
  cmd: Command,
  fn: (client: AgentClient, target: Target, store: ConversationStore | undefined) => Promise<T>,
  options: { stage?: boolean } = {},
): Promise<T> {
  const target = await resolveTarget(cmd.optsWithGlobals<TargetFlags>());
  const { client, store, close } = await openClient(target, options);
  try {
    return await fn(client, target, store);
  } finally {
    await close();
  }
}
