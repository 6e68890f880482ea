/** A command's client: its target resolved from the flags, a client opened for it, released whatever happens. */
import type { Command } from 'commander';
import type { AgentClient } from '../client/agent-client';
import { openClient, resolveTarget, type Target, type TargetFlags } from './target';

/** Runs `fn` with a client for the command's target, always releasing it; `stage`: see {@link openClient}. */
export async function withClient<T>(
  cmd: Command,
  fn: (client: AgentClient, target: Target) => Promise<T>,
  options: { stage?: boolean } = {},
): Promise<T> {
  const target = await resolveTarget(cmd.optsWithGlobals<TargetFlags>());
  const { client, close } = await openClient(target, options);
  try {
    return await fn(client, target);
  } finally {
    await close();
  }
}
