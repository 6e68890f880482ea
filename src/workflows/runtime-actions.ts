/**
 * The workflow's half of the runtime tools (docs/semantics.md §9–§11): child threads, reports, parent messages, sleep
 * timers and event children. Everything here is a Temporal command or a message into an inbox.
 */
import {
  getExternalWorkflowHandle,
  ParentClosePolicy,
  ChildWorkflowCancellationType,
  sleep,
  startChild,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import { DEFAULT_AGENT } from '../core/agents';
import { childPriorityKey } from '../core/priority';
import type { EventChildRequest } from '../core/prepare';
import { compactionCompleteInput, resultInput, syntheticInput } from '../core/inputs';
import type { RuntimeAction, SpawnPoint } from '../core/slice-protocol';
import * as Threads from '../core/builtins/threads';
import * as T from '../core/texts';
import type { InputMessage, ThreadKind } from '../core/types';
import { readablePayload, signalNameOf } from '../core/readable-input';
import { inputSignal, kindSignals, searchAttributes, THREAD_WORKFLOW_TYPE } from './definitions';
import { v04, v05 } from './patches';
import type { SleepTimer, ThreadSeed, ThreadWorkflowArgs } from './contract';
import type { ThreadState } from './state';
import { firstLine, titleOf } from './ui-text';

export interface ActionContext {
  args: ThreadWorkflowArgs;
  st: ThreadState;
}

/** The tree's end user: the root's metadata `user_id` (RAP §2.1), or what the parent handed down. */
export function userIdOf(ctx: ActionContext): string | undefined {
  const own = ctx.st.prep.metadata?.user_id;
  return typeof own === 'string' ? own : ctx.args.userId;
}

/** A result for one of this thread's own calls, ahead of anything queued. */
function answer(ctx: ActionContext, callId: string, text: string): void {
  ctx.st.inbox.unshift(resultInput(ctx.args.threadId, callId, text));
}

/**
 * Signals another thread; false when it no longer runs (closed, or gone). Under its kind's name, readable payload
 * first, only where the options say every worker has those handlers (release 0.5, decision 62; its patch asked only
 * then); `input` otherwise.
 */
async function signalThread(ctx: ActionContext, threadId: string, message: InputMessage): Promise<boolean> {
  const byKind = ctx.args.options?.signalNames === 'by-kind';
  if (byKind) v05();
  try {
    const target = getExternalWorkflowHandle(threadId);
    if (byKind) await target.signal(kindSignals[signalNameOf(message)], readablePayload(message));
    else await target.signal(inputSignal, message);
    return true;
  } catch {
    return false;
  }
}

/**
 * `summary`: the child's whole task (a spawned child's instructions); its first line is the static summary. `agent`:
 * the child's agent when `spawn_thread` named one (issue 40); else the parent's own.
 */
export async function startThread(
  ctx: ActionContext,
  childId: string,
  kind: ThreadKind,
  spawn: SpawnPoint,
  seed: ThreadSeed,
  title: string,
  summary?: string,
  agent = ctx.st.agent,
): Promise<void> {
  const args: ThreadWorkflowArgs = { threadId: childId, kind, spawn, seed };
  if (agent !== undefined) args.agent = agent;
  if (ctx.args.options) args.options = ctx.args.options;
  const userId = userIdOf(ctx);
  if (userId !== undefined) args.userId = userId;
  // The tenant is the tree's (budgets): a child bills to its root's.
  if (ctx.args.tenant !== undefined) args.tenant = ctx.args.tenant;
  // Only where the parent's own start carried `AgentName` (so the server has it registered), and only then: a thread
  // started without it starts its children as before.
  const named = workflowInfo().typedSearchAttributes.get(searchAttributes.AgentName) !== undefined;
  // 0.5 (decision 62), for threads that write titles: the child's `Title`. On that path 0.5's patch is asked for 0.4's
  // background priority too (a spawn asked one of them, decision 51); on the others, 0.4's.
  const titled = ctx.args.options?.titleSearchAttribute === true;
  if (titled) v05();
  else v04();
  await startChild(THREAD_WORKFLOW_TYPE, {
    workflowId: childId,
    args: [args],
    // Children outlive their parent's run (continue-as-new) and report by workflow id.
    parentClosePolicy: ParentClosePolicy.ABANDON,
    cancellationType: ChildWorkflowCancellationType.ABANDON,
    typedSearchAttributes: [
      { key: searchAttributes.ThreadKind, value: kind },
      { key: searchAttributes.ParentThreadId, value: ctx.args.threadId },
      { key: searchAttributes.AgentStatus, value: 'idle' },
      ...(titled ? [{ key: searchAttributes.Title, value: title }] : []),
      ...(named ? [{ key: searchAttributes.AgentName, value: agent ?? DEFAULT_AGENT }] : []),
    ],
    // What the parent's timeline and the relationships view show: the child's task, not its id. User metadata, not
    // compared on replay (test/ui-replay.test.ts), so no patch.
    staticSummary: firstLine(summary ?? title),
    staticDetails: `${kind} thread of \`${ctx.args.threadId}\`${summary !== undefined ? `\n\n${summary.slice(0, 2000)}` : ''}`,
    memo: { title, ...(agent !== undefined && { agent }) },
    // Children, event handlers and compactions are background work: they queue behind root threads' turns. The
    // fairness key (the root's id) is inherited, so a whole tree shares one fair share (decision 60).
    priority: { priorityKey: childPriorityKey(workflowInfo().priority?.priorityKey) },
  });
  ctx.st.children.set(childId, spawn.toolCallId);
}

/** Starts the timer of a sleep call; it answers the call unless something else did first. */
export function startTimer(ctx: ActionContext, timer: SleepTimer): void {
  if (!ctx.st.timers.some((t) => t.callId === timer.callId)) ctx.st.timers.push(timer);
  // Inside the sandbox Date.now() is the deterministic workflow clock (the time of the current workflow task).
  // eslint-disable-next-line no-restricted-properties
  const delay = Math.max(0, timer.wakeAtMs - Date.now());
  void sleep(delay).then(() => {
    ctx.st.timers = ctx.st.timers.filter((t) => t.callId !== timer.callId);
    if (ctx.st.prep.pendingCall?.id === timer.callId) answer(ctx, timer.callId, timer.text);
  });
}

/** Carries out a runtime tool the slice validated. Returns true when the thread closed itself. */
export async function carryOut(ctx: ActionContext, action: RuntimeAction): Promise<boolean> {
  const { args, st } = ctx;
  const self = args.threadId;
  switch (action.type) {
    case 'spawn': {
      const childId = uuid4();
      const seed: ThreadSeed = {
        pendingCall: { id: action.callId, name: 'spawn_thread', passive: false },
        prefix: [],
        inbox: [resultInput(childId, action.callId, Threads.childSeed(childId, action.instructions), action.callId)],
        eventTargets: [[action.callId, 'spawn_thread']],
      };
      await startThread(
        ctx,
        childId,
        'child',
        { parentThreadId: self, toolCallId: action.callId, order: st.length },
        seed,
        titleOf(action.instructions),
        action.instructions,
        action.agent ?? ctx.st.agent,
      );
      st.prep.eventTargets.set(action.callId, 'spawn_thread');
      answer(ctx, action.callId, Threads.childSpawned(childId));
      return false;
    }
    case 'report': {
      const spawn = args.spawn!;
      const text =
        args.kind === 'event' ? Threads.reportFromEventChild(action.report) : Threads.reportFromChild(action.report);
      await signalThread(
        ctx,
        spawn.parentThreadId,
        syntheticInput(
          action.callId,
          spawn.parentThreadId,
          { type: 'thread_report', toolCallId: spawn.toolCallId, childThreadId: self },
          text,
        ),
      );
      answer(ctx, action.callId, Threads.REPORT_SENT);
      return false;
    }
    case 'close': {
      const spawn = args.spawn!;
      if (args.kind === 'compaction') {
        // The summary is already in the store (saved with the closing commit); the parent only needs to know.
        await signalThread(
          ctx,
          spawn.parentThreadId,
          compactionCompleteInput(action.callId, spawn.parentThreadId, T.COMPACTION_COMPLETE),
        );
        st.prep.closed = true;
        return true;
      }
      const text =
        args.kind === 'event'
          ? action.report === undefined
            ? undefined
            : Threads.eventChildClosed(spawn.toolCallId, self, action.report)
          : Threads.childShutDown(self, action.report);
      if (text !== undefined) {
        await signalThread(
          ctx,
          spawn.parentThreadId,
          syntheticInput(
            action.callId,
            spawn.parentThreadId,
            { type: 'thread_report', toolCallId: spawn.toolCallId, childThreadId: self },
            text,
          ),
        );
      }
      st.prep.closed = true;
      return true;
    }
    case 'message_child': {
      const spawnCall = st.children.get(action.childThreadId);
      const delivered =
        spawnCall !== undefined &&
        (await signalThread(
          ctx,
          action.childThreadId,
          syntheticInput(
            action.callId,
            action.childThreadId,
            { type: 'parent_message', toolCallId: spawnCall },
            Threads.messageFromParent(action.message),
          ),
        ));
      answer(ctx, action.callId, delivered ? Threads.MESSAGE_SENT : `Error: thread ${action.childThreadId} is closed`);
      return false;
    }
    case 'sleep':
      startTimer(ctx, { callId: action.callId, wakeAtMs: action.wakeAtMs, text: action.text });
      return false;
  }
}

/**
 * A non-associative subscription event becomes a temporary child thread (docs/semantics.md §10) that inherits the
 * context up to the safe spawn point and sees the event as the result of a `receive_event__injected` call.
 */
export async function spawnEventChild(ctx: ActionContext, req: EventChildRequest, order: number): Promise<void> {
  const childId = uuid4();
  const spawnCallId = uuid4();
  const eventCallId = uuid4();
  const seed: ThreadSeed = {
    pendingCall: { id: eventCallId, name: T.INJECTED_TOOL_NAME, passive: false },
    prefix: [
      {
        messageId: `${spawnCallId}-spawn-call`,
        item: {
          kind: 'tool_call',
          id: spawnCallId,
          name: 'spawn_thread',
          args: { instructions: Threads.EVENT_CHILD_SPAWN_INSTRUCTIONS },
        },
      },
      {
        messageId: `${spawnCallId}-spawn-result`,
        item: {
          kind: 'tool_result',
          id: spawnCallId,
          content: [{ type: 'text', text: Threads.eventChildSeed(childId, ctx.args.threadId) }],
        },
      },
      {
        messageId: `${eventCallId}-event-call`,
        item: {
          kind: 'tool_call',
          id: eventCallId,
          name: T.INJECTED_TOOL_NAME,
          args: { original_tool_call_id: req.subscriptionCallId },
        },
      },
    ],
    inbox: [resultInput(childId, eventCallId, req.content, eventCallId)],
    eventTargets: [],
  };
  const source = ctx.st.prep.subscriptions.get(req.subscriptionCallId) ?? req.subscriptionCallId;
  await startThread(
    ctx,
    childId,
    'event',
    { parentThreadId: ctx.args.threadId, toolCallId: req.subscriptionCallId, order },
    seed,
    `event of ${source}`,
  );
}
