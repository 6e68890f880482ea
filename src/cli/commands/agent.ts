/**
 * `agent set <thread> <agent>`: moves a thread to another agent (issue 40); its next slice runs that agent's
 * instructions, models and tools. A thread waiting because its agent is gone (status `agent_unavailable`) goes on.
 */
import type { Command } from 'commander';
import type { Out } from '../format';
import { withClient } from '../with-client';

export function registerAgent(program: Command, out: Out): void {
  const agent = program.command('agent').description("a thread's agent (docs/agents.md)");
  agent
    .command('set')
    .description("move a thread to another agent: its next slice runs that agent's instructions, models and tools")
    .argument('<thread>', 'thread id')
    .argument('<agent>', 'the agent name, as the workers define it')
    .action(async (threadId: string, name: string, _opts: unknown, cmd: Command) => {
      await withClient(cmd, async (client) => {
        await client.setAgent(threadId, name);
        out(`${threadId}: agent ${name} from its next slice`);
      });
    });
}
