/**
 * Starting a root thread, for `AgentClient`: the start options every root gets (its arguments, priority, search
 * attributes, title and the UI's summary), a plain start, and the start that carries a first input — eager start into
 * a worker in this process (decision 72), else signal-with-start. A text to a thread that exists is a signal either way.
 */
import { type Client, InternalConnectionLikeSymbol, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { priorityViolation, rootPriority, type ThreadPriority } from '../core/priority';
import { titleOf } from '../core/title';
import { agentNameProblem } from '../core/agents';
import { AgentNameAttribute } from './agent-attribute';
import type { InputMessage } from '../core/types';
import { sendWhileBusy } from '../inbox/busy';
import { signalFor } from '../inbox/deliver';
import { InvalidInputError, ThreadClosedError } from '../inbox/errors';
import { typedUnavailable } from '../inbox/unavailable';
import type { ThreadOptions, ThreadWorkflowArgs } from '../workflows/contract';
import { searchAttributes, THREAD_WORKFLOW_TYPE } from '../workflows/definitions';

/** Thread ids an eager-starting client remembers as existing: beyond them, a text tries a start first. */
const KNOWN_THREADS = 10_000;

/** What starting needs of the client's options. */
export interface ThreadStartConfig {
  client: Client;
  taskQueue: string;
  threadOptions?: ThreadOptions;
  signalNames?: 'input' | 'by-kind';
  priority?: ThreadPriority;
  eagerStart?: boolean;
  /** The agents starts may name; absent: any valid name. */
  agents?: readonly string[];
}

/** A root thread's start options as the client makes them. */
export type RootStart = ReturnType<ThreadStarts['options']>;

export class ThreadStarts {
  /** Threads known to exist (eager start only): a text to one of them is signalled without trying a start. */
  private readonly known = new Set<string>();
  /** Whether the server has `AgentName` (issue 40), asked at the first start. */
  readonly agentName: AgentNameAttribute;

  constructor(private readonly config: ThreadStartConfig) {
    this.agentName = new AgentNameAttribute(config.client);
    const connection = config.client.connection as {
      [InternalConnectionLikeSymbol]?: { supportsEagerStart?: boolean };
    };
    if (config.eagerStart && !connection[InternalConnectionLikeSymbol]?.supportsEagerStart)
      throw new TypeError(
        "eagerStart needs a Temporal client on a worker's NativeConnection (new Client({ connection: nativeConnection }))",
      );
  }

  private get temporal(): Client {
    return this.config.client;
  }

  private remember(threadId: string): void {
    this.known.add(threadId);
    if (this.known.size > KNOWN_THREADS) this.known.delete(this.known.values().next().value!);
  }

  /**
   * Does this client's data converter encode payloads (an encryption codec)? Search attributes bypass every payload
   * codec and are stored and indexed in plaintext, so a client that encodes writes no text of a thread into them and
   * tells its threads (and through their options, their children) not to either (security item 6).
   */
  private get encodesPayloads(): boolean {
    return this.temporal.options.loadedDataConverter.payloadCodecs.length > 0;
  }

  private workflowArgs(threadId: string): ThreadWorkflowArgs {
    const args: ThreadWorkflowArgs = { threadId, kind: 'root' };
    const byKind = this.config.signalNames === 'by-kind' && { signalNames: 'by-kind' as const };
    const sealed = this.encodesPayloads && { titleSearchAttribute: false };
    if (this.config.threadOptions || byKind || sealed)
      args.options = { ...this.config.threadOptions, ...byKind, ...sealed };
    return args;
  }

  /**
   * The title at start: memo, static summary, and the `Title` search attribute where threads write it (never with a
   * payload codec: see {@link encodesPayloads}).
   */
  private titled(title: string | undefined): {
    memo?: { title: string };
    staticSummary?: string;
    attributes: { key: typeof searchAttributes.Title; value: string }[];
  } {
    if (title === undefined) return { attributes: [] };
    const t = titleOf(title);
    return {
      memo: { title: t },
      staticSummary: t,
      // The memo and the static summary go through the codec; the search attribute would not.
      attributes:
        this.config.threadOptions?.titleSearchAttribute && !this.encodesPayloads
          ? [{ key: searchAttributes.Title, value: t }]
          : [],
    };
  }

  /** The start options of root thread `threadId` (the thread id is its workflow id: decision 83). */
  options(threadId: string, priority: ThreadPriority | undefined, title?: string, agent?: string) {
    const given = { ...this.config.priority, ...priority };
    const violation = priorityViolation(given);
    if (violation) throw new InvalidInputError(violation);
    if (agent !== undefined) this.checkAgent(agent);
    const { attributes, ...titled } = this.titled(title);
    const args = this.workflowArgs(threadId);
    if (agent !== undefined) args.agent = agent;
    return {
      priority: rootPriority(threadId, given),
      workflowId: threadId,
      taskQueue: this.config.taskQueue,
      args: [args] as [ThreadWorkflowArgs],
      typedSearchAttributes: [
        { key: searchAttributes.ThreadKind, value: 'root' },
        { key: searchAttributes.AgentStatus, value: 'idle' },
        ...attributes,
      ],
      staticSummary: `agent thread ${threadId}`,
      // The UI's "Details" of the thread: where the rest of it is.
      staticDetails:
        `root thread \`${threadId}\`: its whole conversation with \`infinity-temporal history ${threadId} --full\`; ` +
        'queries `status`, `drops`, `transcript`; current details: what it waits for and its last reply',
      ...titled,
      ...(agent !== undefined && { memo: { ...titled.memo, agent } }),
    };
  }

  /**
   * An agent name a start may give (issue 40): a valid name, and one of the client's `agents` when it lists them. A
   * wrong one is an {@link InvalidInputError} before anything starts.
   */
  checkAgent(agent: string): void {
    const problem = agentNameProblem(agent);
    if (problem) throw new InvalidInputError(problem);
    const known = this.config.agents;
    if (known && !known.includes(agent))
      throw new InvalidInputError(`unknown agent '${agent}': the agents are ${known.join(', ') || 'none'}`);
  }

  /** Starts a root thread, or finds it running (idempotent). */
  async start(start: RootStart): Promise<void> {
    await this.agentName.starting(start.typedSearchAttributes, start.args[0].agent, (typedSearchAttributes) =>
      typedUnavailable(() =>
        this.temporal.workflow.start(THREAD_WORKFLOW_TYPE, {
          ...start,
          typedSearchAttributes,
          workflowIdConflictPolicy: 'USE_EXISTING',
          ...(this.config.eagerStart && { requestEagerStart: true }),
        }),
      ),
    );
    if (this.config.eagerStart) this.remember(start.workflowId);
  }

  /**
   * Sends `message` (checked and staged already) to its thread, creating the thread when it does not exist: eagerly
   * with the message in the start's arguments when this client starts eagerly and does not know the thread, else by
   * signal-with-start. A closed thread is a {@link ThreadClosedError}.
   */
  async sendCreating(
    threadId: string,
    message: InputMessage,
    how: { priority?: ThreadPriority; tenant?: string; title?: string; agent?: string },
  ): Promise<void> {
    // A thread this text creates has its title from the start: no memo write in its first workflow task.
    const start = this.options(threadId, how.priority, how.title, how.agent);
    if (how.tenant !== undefined) start.args = [{ ...start.args[0], tenant: how.tenant }];
    const { signal, payload } = signalFor(message, { signalNames: this.config.signalNames ?? 'input' });
    try {
      if (
        this.config.eagerStart &&
        !this.known.has(threadId) &&
        (await this.startWithInput(start, signal.name, payload))
      )
        return;
      await sendWhileBusy(threadId, () =>
        this.agentName.starting(start.typedSearchAttributes, start.args[0].agent, (typedSearchAttributes) =>
          typedUnavailable(() =>
            this.temporal.workflow.signalWithStart(THREAD_WORKFLOW_TYPE, {
              ...start,
              typedSearchAttributes,
              workflowIdReusePolicy: 'REJECT_DUPLICATE',
              signal,
              signalArgs: [payload],
            }),
          ),
        ),
      );
    } catch (e) {
      if (e instanceof WorkflowExecutionAlreadyStartedError) throw new ThreadClosedError(threadId);
      throw e;
    }
  }

  /**
   * Starts a thread with an input in its arguments, as the payload of the signal `signal` would carry it, asking the
   * server for eager start; false when the thread exists, running or closed (the caller then signals it, which tells
   * the two apart). The input comes first in the arguments, so the UI's one-line view of the start shows its text.
   */
  private async startWithInput(start: RootStart, signal: string, payload: unknown): Promise<boolean> {
    try {
      await this.agentName.starting(start.typedSearchAttributes, start.args[0].agent, (typedSearchAttributes) =>
        typedUnavailable(() =>
          this.temporal.workflow.start(THREAD_WORKFLOW_TYPE, {
            ...start,
            typedSearchAttributes,
            args: [{ firstInput: payload, ...(signal !== 'input' && { firstInputSignal: signal }), ...start.args[0] }],
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
            requestEagerStart: true,
          }),
        ),
      );
      return true;
    } catch (e) {
      if (e instanceof WorkflowExecutionAlreadyStartedError) return false;
      throw e;
    } finally {
      this.remember(start.workflowId);
    }
  }
}
