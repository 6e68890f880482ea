/**
 * Rewind, the workflow's half (issue 28 §2): a `rewind` control input, taken at a pause between slices, goes back to
 * the thread's first `to` own items. The `rewindThread` activity commits the rewind as a slice of its own (a `rewind`
 * note, and the interrupted answer of a call the point leaves unanswered) with the archived range `[to, length)`,
 * which every later view leaves out; then this run forgets what the range created: the pending call, subscriptions,
 * spawned children (cancelled), sleep timers and prompts of archived calls. Their late inputs are dropped as
 * `rewound`. Inputs queued behind the rewind stay queued and are taken after it.
 */
import { ApplicationFailure, getExternalWorkflowHandle, proxyActivities } from '@temporalio/workflow';
import { sliceIdFor } from '../core/ids';
import { REWIND_REFUSED, type RewindInput, type RewindOutcome } from '../core/slice-protocol';
import type { ThreadOptions } from './contract';
import type { ActionContext } from './runtime-actions';
import type { ThreadState } from './state';
import { DEDUP_WINDOW } from './state';

interface RewindActivities {
  rewindThread(input: RewindInput): Promise<RewindOutcome>;
}

const rewindActivity = (opts: ThreadOptions) =>
  proxyActivities<RewindActivities>({
    startToCloseTimeout: '1 minute',
    retry: {
      initialInterval: '1s',
      maximumInterval: '30s',
      maximumAttempts: opts.sliceMaxAttempts ?? 10,
      nonRetryableErrorTypes: [REWIND_REFUSED],
    },
  }).rewindThread;

/** Every call the run's state tracks: what a rewind may have to forget. */
function trackedCalls(st: ThreadState): string[] {
  const calls = new Set<string>([
    ...st.prep.subscriptions.keys(),
    ...st.prep.eventTargets.keys(),
    ...st.children.values(),
    ...st.timers.map((t) => t.callId),
    ...st.prompts.map((p) => p.toolCallId),
  ]);
  if (st.prep.pendingCall) calls.add(st.prep.pendingCall.id);
  return [...calls];
}

/**
 * Rewinds the thread to its first `to` own items. Returns undefined when it did, or why the store refused (a point
 * outside the history, or inside an archived range): the caller drops the input as malformed.
 */
export async function rewindTo(ctx: ActionContext, to: number): Promise<string | undefined> {
  const { st, args } = ctx;
  const opts = args.options ?? {};
  let outcome: RewindOutcome;
  try {
    outcome = await rewindActivity(opts).executeWithOptions({ summary: `rewind to item ${to}` }, [
      {
        threadId: args.threadId,
        sliceId: sliceIdFor(args.threadId, st.slices),
        to,
        expectedLength: st.length,
        calls: trackedCalls(st),
        ...(st.prep.pendingCall && { pendingCall: st.prep.pendingCall.id }),
      },
    ]);
  } catch (e) {
    // The activity's failure carries the store's reason as its cause.
    const cause = e instanceof Error && e.cause instanceof ApplicationFailure ? e.cause : undefined;
    const why = cause?.message ?? (e instanceof Error ? e.message : String(e));
    st.lastError = `rewind to item ${to} failed: ${why}`;
    return why;
  }
  st.length = outcome.length;
  st.slices += 1;
  await forget(st, new Set(outcome.archivedCalls), opts.dedupWindow ?? DEDUP_WINDOW);
  return undefined;
}

/** Drops the state that archived calls created; their late inputs are dropped as `rewound` from now on. */
async function forget(st: ThreadState, archived: ReadonlySet<string>, window: number): Promise<void> {
  if (st.prep.pendingCall && archived.has(st.prep.pendingCall.id)) st.prep.pendingCall = null;
  for (const id of archived) {
    st.prep.subscriptions.delete(id);
    st.prep.eventTargets.delete(id);
  }
  st.timers = st.timers.filter((t) => !archived.has(t.callId));
  st.prompts = st.prompts.filter((p) => !archived.has(p.toolCallId));
  const rewound = (st.prep.rewound ??= new Set());
  for (const id of archived) rewound.add(id);
  // Bounded like the dedup window: a result that late is dropped as a result of no pending call instead.
  if (rewound.size > window) st.prep.rewound = new Set([...rewound].slice(rewound.size - window));
  for (const [child, call] of [...st.children]) {
    if (!archived.has(call)) continue;
    st.children.delete(child);
    // Temporal's own cancel: the child's workflow ends as cancelled (shown so in the UI), with its running slice.
    try {
      await getExternalWorkflowHandle(child).cancel();
    } catch {
      // Already closed: nothing to end.
    }
  }
}
