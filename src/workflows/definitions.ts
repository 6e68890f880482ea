/**
 * The thread workflow's public surface: its name, signals, queries, updates and search attributes.
 * Imported by the client as well as by the workflow, so it holds definitions only.
 */
import { defineQuery, defineSignal, defineUpdate, type SignalDefinition } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { CallbackState } from '../core/callback-state';
import type { KindSignalName } from '../core/readable-input';
import type { DeliveryAck, DroppedInputs, ThreadStatus } from '../core/types';

/** The workflow type name of a thread. */
export const THREAD_WORKFLOW_TYPE = 'agentThread';

/** One input message per signal. Typed `unknown`: the handler validates, a malformed payload is dropped and counted. */
export const inputSignal = defineSignal<[unknown]>('input');

/**
 * The same inbox under one name per kind of input (release 0.5, decision 62), so a thread's event history tells a user
 * text from a tool result at a glance; each also takes its kind's readable payload (`core/readable-input.ts`).
 */
export const kindSignals: Record<KindSignalName, SignalDefinition<[unknown]>> = {
  user_text: defineSignal<[unknown]>('user_text'),
  tool_result: defineSignal<[unknown]>('tool_result'),
  event: defineSignal<[unknown]>('event'),
  report: defineSignal<[unknown]>('report'),
  control: defineSignal<[unknown]>('control'),
};

export const statusQuery = defineQuery<ThreadStatus>('status');

/**
 * A grant of provider capacity is held for this thread (0.13, issue 41): a thread waiting for capacity on its key's
 * wake-up list runs its slice again now rather than at its fallback timer. Sent by workers; the payload (`{key}`) is
 * for the reader of the history, and a stray one costs one early try.
 */
export const capacitySignal = defineSignal<[unknown]>('capacity');

/**
 * Budgets changed (issue 27 §1): `{}` makes a thread that waits over budget check again; `{"scope","budget"}` also
 * sets the limit of this thread's own key of that scope (`thread`, `tree`: its root, `tenant`: its tenant), written to
 * the store by its next slice. `AgentClient.setBudget` and the CLI's `budget set` write the store and send `{}`.
 */
export const budgetSignal = defineSignal<[unknown]>('budget');

/**
 * One input, acknowledged: the update returns once the thread has taken the input into a slice's batch (or held it
 * back behind a pending call), saying whether it reached history or was dropped and why. Costs two history events where
 * the signal costs one, and needs a worker to answer; the signal stays the path for tools and gateways.
 */
/**
 * The `deliver` update: an input and, from the client's second attempt on, `{ resend: true }` (release 0.6), so the
 * thread does not count its own earlier copy as a dropped duplicate.
 */
export const deliverUpdate = defineUpdate<DeliveryAck, [unknown, DeliverOptions?]>('deliver');

/** What the client says of an acknowledged delivery besides the input. */
export interface DeliverOptions {
  /** A later attempt of a delivery whose first attempt may have reached the thread (its run continued-as-new). */
  resend?: boolean;
}

/** What the thread says of one of its tool calls (by id): whether a callback URL for it is still good (RAP gateway). */
/** The inputs the thread dropped: counts per reason, and the last few with what they were and why. */
export const dropsQuery = defineQuery<DroppedInputs>('drops');

/** The conversation as this run saw it go by, one line per item (bounded; the store holds all of it). */
export const transcriptQuery = defineQuery<string[]>('transcript');

export const callbackStateQuery = defineQuery<CallbackState, [string]>('callbackState');

export interface WaitOptions {
  /** Also wait until no non-passive tool call is pending (default false). */
  settled?: boolean;
}

/** Resolves when the thread has nothing running or queued (and, with `settled`, waits on no tool). */
export const waitForIdleUpdate = defineUpdate<ThreadStatus, [WaitOptions]>('waitForIdle');

/**
 * What `temporal workflow metadata` (and the UI's "Workflow details") says of each handler. The input shape is
 * `InputMessage` (src/core/types.ts); README "From the Temporal CLI" has a copy-paste example of each.
 */
export const HANDLER_DOCS = {
  input:
    'One input into the thread\'s inbox: {"threadId","id","content":{"type":"text","text"}} for user text, ' +
    '{"threadId","id","content":{"type":"tool_result","toolCallId","content":[{"type":"text","text"}]}} for a tool result. ' +
    'A malformed or oversized input is dropped and counted (status query: dropped.malformed; the drops query says why).',
  user_text: 'A user text into the inbox: {"text","threadId","id"} (or any input message). Same inbox as input.',
  tool_result:
    'A tool result into the inbox: {"tool","text","toolCallId","threadId","id"} ("tool" names it for the reader; "content":[…] ' +
    'instead of "text" for images; or any input message). Same inbox as input.',
  event:
    'A subscription event into the inbox: {"tool","text","toolCallId","threadId","id","associative"?,"final"?} ' +
    '(toolCallId: the call that started the subscription; or any input message). Same inbox as input.',
  report:
    'A child\'s report {"text","childThreadId","toolCallId","threadId","id"} (toolCallId: the spawn call), or a parent\'s message ' +
    '{"text","fromParent":true,"toolCallId","threadId","id"}; or any input message. Same inbox as input.',
  control:
    'A control input: compaction, compaction_complete or a tool prompt (an input message with that synthetic type).',
  deliver:
    'Like the input signal, acknowledged: returns {accepted, reason?, deferred?} once the thread has taken the input into a batch.',
  status:
    "The thread's status: running, idle or waiting on a tool, the pending call, history length, queue, drops, children, usage.",
  waitForIdle:
    'Returns the status once nothing runs or is queued; {"settled": true} also waits until no tool call is pending.',
  drops: 'Inputs the thread dropped: {counts: per reason, recent: [{id, reason, what}]} (the last few, newest last).',
  transcript:
    'The conversation as this run saw it go by, one line per item (the last 40; `infinity-temporal history <thread>` shows all).',
  budget:
    'Budgets changed: {} makes a thread waiting over budget check again; {"scope":"thread"|"tree"|"tenant","budget":' +
    '{"inputTokens"?,"outputTokens"?,"totalTokens"?,"usd"?}} (or "budget":null) also sets that limit for this thread\'s key of the scope.',
  callbackState: 'Whether a callback URL for the given tool call id is still good (RAP gateway).',
  capacity:
    'Sent by workers: provider capacity is held for this thread, which waits for it on its limits key ({"key"}); it runs its slice again now.',
} as const;

export const searchAttributes = {
  AgentStatus: defineSearchAttributeKey('AgentStatus', SearchAttributeType.KEYWORD),
  ParentThreadId: defineSearchAttributeKey('ParentThreadId', SearchAttributeType.KEYWORD),
  ThreadKind: defineSearchAttributeKey('ThreadKind', SearchAttributeType.KEYWORD),
  /**
   * The thread's agent (issue 40; `default` for the worker's own options). Written by clients that found it registered
   * on the server, by a parent whose own start carried it, and by a `set_agent` on a thread that has it.
   */
  AgentName: defineSearchAttributeKey('AgentName', SearchAttributeType.KEYWORD),
  /** The thread's title, for the UI's list column; written only with `titleSearchAttribute` (decision 62). */
  Title: defineSearchAttributeKey('Title', SearchAttributeType.TEXT),
} as const;
