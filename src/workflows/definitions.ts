/**
 * The thread workflow's public surface: its name, signals, queries, updates and search attributes.
 * Imported by the client as well as by the workflow, so it holds definitions only.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { CallbackState } from '../core/callback-state';
import type { DeliveryAck, ThreadStatus } from '../core/types';

/** The workflow type name of a thread. */
export const THREAD_WORKFLOW_TYPE = 'agentThread';

/** One input message per signal. Typed `unknown`: the handler validates, a malformed payload is dropped and counted. */
export const inputSignal = defineSignal<[unknown]>('input');

export const statusQuery = defineQuery<ThreadStatus>('status');

/**
 * One input, acknowledged: the update returns once the thread has taken the input into a slice's batch (or held it
 * back behind a pending call), saying whether it reached history or was dropped and why. Costs two history events where
 * the signal costs one, and needs a worker to answer; the signal stays the path for tools and gateways.
 */
export const deliverUpdate = defineUpdate<DeliveryAck, [unknown]>('deliver');

/** What the thread says of one of its tool calls (by id): whether a callback URL for it is still good (RAP gateway). */
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
    'A malformed or oversized input is dropped and counted (status query: dropped.malformed).',
  deliver: 'Like the input signal, acknowledged: returns {accepted, reason?, deferred?} once the thread has taken the input into a batch.',
  status: 'The thread\'s status: running, idle or waiting on a tool, the pending call, history length, queue, drops, children, usage.',
  waitForIdle: 'Returns the status once nothing runs or is queued; {"settled": true} also waits until no tool call is pending.',
  callbackState: 'Whether a callback URL for the given tool call id is still good (RAP gateway).',
} as const;

export const searchAttributes = {
  AgentStatus: defineSearchAttributeKey('AgentStatus', SearchAttributeType.KEYWORD),
  ParentThreadId: defineSearchAttributeKey('ParentThreadId', SearchAttributeType.KEYWORD),
  ThreadKind: defineSearchAttributeKey('ThreadKind', SearchAttributeType.KEYWORD),
} as const;
