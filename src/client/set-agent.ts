/** `AgentClient.setAgent` (issue 40): a `set_agent` input, signalled; the thread takes it at the signal. */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { setAgentInput } from '../core/inputs';
import { deliverInput } from '../inbox/deliver';
import { ThreadClosedError } from '../inbox/errors';

export async function setAgent(temporal: Client, threadId: string, agent: string): Promise<void> {
  const result = await deliverInput(temporal, setAgentInput(`set-agent-${randomUUID()}`, threadId, agent));
  if (!result.delivered) throw new ThreadClosedError(threadId);
}
