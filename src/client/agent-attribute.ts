/**
 * The `AgentName` search attribute at a thread's start (issue 40). A server without it registered refuses a start
 * that sets it, so the client asks the server once which attributes it has (`ListSearchAttributes`) and sets it only
 * where registered; a server that cannot say (no operator service, no permission) gets none. A start refused for it
 * all the same is made again without it, and the client remembers. Asking first, rather than trying: a refused start
 * must leave nothing behind, and Temporal's time-skipping test server does (its next signal-with-start fails). A
 * thread started with it proves the server has it, which is what lets the thread write it later (a `set_agent`, its
 * children).
 */
import type { Client } from '@temporalio/client';
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
  /** Whether the server has `AgentName`: asked at the first start, false once a start was refused for it. */
  private registered: Promise<boolean> | undefined;

  constructor(private readonly temporal: Client) {}

  private hasIt(): Promise<boolean> {
    this.registered ??= Promise.resolve()
      .then(() =>
        this.temporal.connection.operatorService.listSearchAttributes({ namespace: this.temporal.options.namespace }),
      )
      .then(
        (r) => Object.hasOwn(r.customAttributes ?? {}, 'AgentName'),
        () => false,
      );
    return this.registered;
  }

  /**
   * Runs `start` with `AgentName` added to `attributes` (the agent, or `default`), unless the server is known not to
   * have it; refused for it, once more without it.
   */
  async starting<T>(
    attributes: readonly SearchAttributePair[],
    agent: string | undefined,
    start: (attributes: SearchAttributePair[]) => Promise<T>,
  ): Promise<T> {
    if (!(await this.hasIt())) return await start([...attributes]);
    try {
      return await start([...attributes, { key: searchAttributes.AgentName, value: agent ?? DEFAULT_AGENT }]);
    } catch (e) {
      if (!refusedAttribute(e, 'AgentName')) throw e;
      this.registered = Promise.resolve(false);
      return await start([...attributes]);
    }
  }
}
