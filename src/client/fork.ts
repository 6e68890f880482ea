/**
 * Forking a thread (issue 28 §1): a new root thread whose committed history is its source's up to a point, and that is
 * independent from then on (its own workflow, spend and children). Copy-on-write: the fork's store record names the
 * source and the point (`ThreadRecord.base`), and its model view reads the source's items from there; nothing is
 * copied, so a fork costs one thread record and one workflow start whatever the source's length.
 *
 * What the fork takes at the point, and what it leaves (docs: the fork notes' table):
 * - the source's own items `[0, at)` with everything the source inherited before them, summaries of the source that
 *   cover no more than that (reused, not recomputed), and the reports of children that arrived before the point;
 * - a call pending at the point (the prefix's last item is an unanswered tool call) is answered in the fork with the
 *   runtime's interrupted result, unless `pendingCall: 'keep'` leaves it pending for the caller to answer;
 * - no subscriptions, children, timers, queued inputs or metadata: events and later reports keep going to the source.
 */
import { randomUUID } from 'node:crypto';
import {
  type Client,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { defineSearchAttributeKey, type SearchAttributePair, SearchAttributeType } from '@temporalio/common';
import { messageIds } from '../core/ids';
import type { ThreadPriority } from '../core/priority';
import { INTERRUPTED_RESULT } from '../core/texts';
import type { ForkPoint, PendingCall, StoredItem } from '../core/types';
import { InvalidInputError, ThreadNotFoundError } from '../inbox/errors';
import { discardPrepared, type InputLimits } from '../inbox/staging';
import { prepareInput } from '../inbox/deliver';
import { typedUnavailable } from '../inbox/unavailable';
import { branchAt, pendingAt } from '../store/chain';
import type { ConversationStore, ThreadRecord } from '../store/conversation-store';
import { userText } from '../tools/messages';
import { searchAttributes, THREAD_WORKFLOW_TYPE } from '../workflows/definitions';
import { agentNameProblem, DEFAULT_AGENT } from '../core/agents';
import type { AgentNameAttribute } from './agent-attribute';
import type { ThreadSeed, ThreadWorkflowArgs } from '../workflows/contract';
import type { AgentClient } from './agent-client';
import type { ThreadHandle } from './thread-handle';

/**
 * The `ForkedFrom` search attribute (Keyword): the source thread's id, so `temporal workflow list --query
 * "ForkedFrom = '<thread>'"` lists a thread's forks. `infinity-temporal dev` and `startLocalSystem` register it; on a
 * server without it the fork starts without it (the memo still says where it came from).
 */
export const FORKED_FROM = defineSearchAttributeKey('ForkedFrom', SearchAttributeType.KEYWORD);

/** Where a fork starts: an item count, a slice (its id, or `slice-<n>` of the source), or the source's length now. */
export type ForkAt = number | 'now' | string;

/** Options of {@link AgentClient.forkThread}. Per-thread model, system prompt and tools do not exist in this runtime. */
export interface ForkThreadOptions {
  /**
   * The fork point: how many of the source's own committed items the fork keeps (0 to its length, the numbering of
   * `history`); a slice id (`<thread>/slice-<n>`, or `slice-<n>` for the source's): the items up to the end of that
   * slice; or `'now'`: everything committed at the time of the call.
   */
  at: ForkAt;
  /** The fork's thread id (= workflow id). @default a random UUID */
  threadId?: string;
  /** A user text the fork receives first: its first slice answers it over the source's prefix. @default none */
  input?: string;
  /**
   * A call pending at the fork point: `'interrupt'` answers it in the fork with the runtime's interrupted result (as a
   * user text interrupting it would), committed with the fork's first slice; `'keep'` leaves it pending in the fork
   * (status `waiting_tool`) for the caller to answer with a tool result sent to the fork. The tool that runs it for
   * the source answers the source only. A sleep left pending has no timer in the fork.
   * @default 'interrupt'
   */
  pendingCall?: 'interrupt' | 'keep';
  /** Root metadata of the fork (the source's is not carried over). @default none */
  metadata?: Record<string, unknown>;
  /** Task priority and fairness of the fork, as for `startThread`. @default the client's */
  priority?: ThreadPriority;
  /** The fork's title (memo, static summary). @default none: its first user text titles it */
  title?: string;
  /**
   * The fork's agent (issue 40): the same conversation with another agent's instructions, models and tools — the
   * "what if another model had answered" experiment.
   * @default the source's agent
   */
  agent?: string;
}

/** What {@link forkThread} needs of the client that calls it. */
export interface ForkDeps {
  client: AgentClient;
  store?: ConversationStore;
  limits: InputLimits;
  /** The client's start options of a root thread (priority, args with its thread options, attributes, title). */
  start(
    threadId: string,
    priority: ThreadPriority | undefined,
    title: string | undefined,
    agent: string | undefined,
  ): ThreadStart;
  /** Whether the server has `AgentName`, as the client's starts learnt it. */
  agentName: AgentNameAttribute;
}

/** The thread workflow's signature, for typed start options. */
type ThreadWorkflow = (args: ThreadWorkflowArgs) => Promise<void>;

/** A root thread's start options as the client makes them. */
export type ThreadStart = WorkflowStartOptions<ThreadWorkflow> & {
  args: [ThreadWorkflowArgs];
  typedSearchAttributes: SearchAttributePair[];
};

/** The item count a fork point names, checked against the source's committed length. */
export async function resolveForkPoint(store: ConversationStore, source: string, at: ForkAt): Promise<number> {
  const length = await store.length(source);
  if (at === 'now') return length;
  if (typeof at === 'number') {
    if (!Number.isInteger(at) || at < 0 || at > length)
      throw new InvalidInputError(`fork point ${at} is not an item count of thread ${source} (0..${length})`);
    return at;
  }
  if (typeof at !== 'string' || at === '') throw new InvalidInputError('fork point must be a number, a slice or now');
  const sliceId = /^slice-\d+$/.test(at) ? `${source}/${at}` : at;
  const slice = await store.findSlice(source, sliceId);
  if (!slice) throw new InvalidInputError(`thread ${source} has no committed slice ${sliceId}`);
  return slice.length;
}

/** The fork's first run: the pending call, or its interrupted answer, and the caller's first input. */
function forkSeed(pending: PendingCall | undefined, keep: boolean, input: ThreadSeed['inbox']): ThreadSeed {
  const prefix: StoredItem[] =
    pending && !keep
      ? [
          {
            messageId: messageIds.interrupted(pending.id),
            item: { kind: 'tool_result', id: pending.id, content: [{ type: 'text', text: INTERRUPTED_RESULT }] },
          },
        ]
      : [];
  return { pendingCall: keep ? (pending ?? null) : null, prefix, inbox: input, eventTargets: [] };
}

/** The record a fork must have; an existing thread of that id is this same fork (a retried call) or an error. */
async function forkRecord(
  deps: ForkDeps,
  store: ConversationStore,
  forkId: string,
  point: ForkPoint,
): Promise<'new' | 'exists'> {
  const same = (r: ThreadRecord) => r.base?.threadId === point.threadId && r.base.upTo === point.at;
  const existing = await store.getThread(forkId);
  if (existing) {
    if (same(existing)) return 'exists';
    throw new InvalidInputError(`thread ${forkId} already exists and is not this fork of ${point.threadId}`);
  }
  // A thread that never committed has no record yet: a record written now would change its history.
  try {
    await deps.client.thread(forkId).workflow.describe();
    throw new InvalidInputError(`thread ${forkId} already exists`);
  } catch (e) {
    if (!(e instanceof WorkflowNotFoundError)) throw e;
  }
  const written = await store.ensureThread({
    threadId: forkId,
    kind: 'root',
    base: { threadId: point.threadId, upTo: point.at },
  });
  if (!same(written)) throw new InvalidInputError(`thread ${forkId} already exists and is not this fork`);
  return 'new';
}

/**
 * A server without the `ForkedFrom` attribute refuses a start that sets it: INVALID_ARGUMENT, "Namespace … has no
 * mapping defined for search attribute ForkedFrom" (in the cause of the client's "Failed to start Workflow").
 */
function unknownAttribute(e: unknown): boolean {
  const said: string[] = [];
  for (let c: unknown = e; c instanceof Error && said.length < 5; c = c.cause) said.push(c.message);
  return said.some((m) => /search attribute ForkedFrom\b/.test(m));
}

/**
 * The source's agent (issue 40), as Temporal keeps it: the memo a `set_agent` or a child's start wrote, else its
 * `AgentName`; none (the default agent) when the source named none or its workflow is gone.
 */
async function agentOf(temporal: Client, threadId: string): Promise<string | undefined> {
  try {
    const d = await temporal.workflow.getHandle(threadId).describe();
    const memo = d.memo?.agent;
    if (typeof memo === 'string' && agentNameProblem(memo) === undefined) return memo;
    const named = d.typedSearchAttributes.get(searchAttributes.AgentName);
    return named !== undefined && named !== DEFAULT_AGENT ? named : undefined;
  } catch {
    return undefined;
  }
}

/** Forks `source` (see the module comment); the caller is {@link AgentClient.forkThread}. */
export async function forkThread(deps: ForkDeps, source: string, options: ForkThreadOptions): Promise<ThreadHandle> {
  const store = deps.store;
  if (!store) throw new Error('forkThread() needs the conversation store: pass `store` to AgentClient');
  const record = await store.getThread(source);
  if (!record) throw new ThreadNotFoundError(source);
  const at = await resolveForkPoint(store, source, options.at);
  const inside = branchAt(record, at);
  if (inside > 0)
    throw new InvalidInputError(
      `fork point ${at} lies inside branch ${inside} of thread ${source}, which a rewind archived`,
    );
  const point: ForkPoint = { threadId: source, at };
  const forkId = options.threadId ?? randomUUID();
  if (forkId === source) throw new InvalidInputError('a fork needs a thread id of its own');
  const pending = await pendingAt(store, record, at);
  const keep = options.pendingCall === 'keep';
  if (options.pendingCall !== undefined && options.pendingCall !== 'keep' && options.pendingCall !== 'interrupt')
    throw new InvalidInputError(`pendingCall must be 'interrupt' or 'keep'`);
  const state = await forkRecord(deps, store, forkId, point);

  const prepared =
    options.input === undefined ? undefined : await prepareInput(userText(forkId, options.input), deps.limits);
  const agent = options.agent ?? (await agentOf(deps.client.temporal, source));
  const start = deps.start(forkId, options.priority, options.title, agent);
  const args: ThreadWorkflowArgs = {
    ...start.args[0],
    seed: forkSeed(pending, keep, prepared ? [prepared.message] : []),
    forkedFrom: point,
    ...(options.metadata && { metadata: options.metadata }),
  };
  const request: WorkflowStartOptions<ThreadWorkflow> = {
    ...start,
    args: [args],
    memo: { ...start.memo, forkedFrom: point },
    staticDetails:
      `fork of \`${source}\` at item ${at}: its history is the source's up to there, then its own ` +
      `(\`infinity-temporal history ${forkId}\`); ${start.staticDetails ?? ''}`,
    workflowIdConflictPolicy: 'FAIL',
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
  };
  const temporal = deps.client.temporal;
  const startWith = (attributes: SearchAttributePair[]) =>
    deps.agentName.starting(attributes, agent, (typedSearchAttributes) =>
      typedUnavailable(() => temporal.workflow.start(THREAD_WORKFLOW_TYPE, { ...request, typedSearchAttributes })),
    );
  try {
    try {
      await startWith([...start.typedSearchAttributes, { key: FORKED_FROM, value: source }]);
    } catch (e) {
      if (!unknownAttribute(e)) throw e;
      await startWith([...start.typedSearchAttributes]);
    }
  } catch (e) {
    if (prepared) await discardPrepared(prepared, store);
    // A retried call whose first attempt started the fork: the same fork, returned as it is.
    if (!(e instanceof WorkflowExecutionAlreadyStartedError && state === 'exists')) throw e;
  }
  return deps.client.thread(forkId);
}
