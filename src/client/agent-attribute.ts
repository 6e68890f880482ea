/**
 * The `AgentName` search attribute at a thread's start (issue 40). A server without it registered refuses a start
 * that sets it, so the client tries with it and, refused for that reason, starts without it and remembers: one extra
 * request per client on such a server, none after. A thread started with it proves the server has it, which is what
 * lets the thread write it later (a `set_agent`, its children).
 */
import type { SearchAttributePair } from '@temporalio/common';
import { DEFAULT_AGENT } from '../core/agents';
import { searchAttributes } from '../workflows/definitions';

/**
 * A server without a search attribute refuses a start that sets it: INVALID_ARGUMENT, "Namespace … has no mapping
 * defined for search attribute <name>" (in the cause of the client's "Failed to start Workflow").
 */
export function refusedAttribute(e: unknown, name: string): boolean {
  const said: string[] = [];
  for (let c: unknown = e; c instanceof Error && said.length < 5; c = c.cause) said.push(c.message);
  return said.some((m) => new RegExp(`search attribute ${name}\\b`).test(m));
}

export class AgentNameAttribute {
  /** Undefined until a start said; false once the server refused it. */
  private registered: boolean | undefined;

  /**
   * Runs `start` with `AgentName` added to `attributes` (the agent, or `default`), unless the server is known not to
   * have it; refused for it, once more without it.
   */
  async starting<T>(
    attributes: readonly SearchAttributePair[],
    agent: string | undefined,
    start: (attributes: SearchAttributePair[]) => Promise<T>,
  ): Promise<T> {
    if (this.registered === false) return await start([...attributes]);
    try {
      const started = await start([...attributes, { key: searchAttributes.AgentName, value: agent ?? DEFAULT_AGENT }]);
      this.registered = true;
      return started;
    } catch (e) {
      if (!refusedAttribute(e, 'AgentName')) throw e;
      this.registered = false;
      return await start([...attributes]);
    }
  }
}
