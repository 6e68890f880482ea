/**
 * Baseline agents for the benchmark, run on the same dev server as ours.
 *
 * - `v01Agent`: release 0.1's Temporal operations per turn (user signal, activity, tool-result signal, activity, and
 *   the two status upserts) with empty bodies. A fixed reference: it does not follow the runtime's changes.
 * - `ceilingAgent`: the current operations per turn (each completion a local activity: one marker event, no second
 *   workflow task) with empty bodies: the most this operation pattern can get out of the dev server.
 * - `bareAgent`: a workflow that parks on a signal and nothing else (no activity, no marker, no search attribute): the
 *   floor of a start on this server. Its {@link BareSteps} add the parts of our first workflow task one at a time,
 *   for the waterfall of `bench/probes/park-rate.ts`.
 * - `blockingAgent`: the common pattern — the transcript lives in workflow state and is passed to each completion
 *   activity, and a tool call is an activity that waits for its result, holding a worker slot.
 */
import {
  condition,
  defineSignal,
  patched,
  proxyActivities,
  proxyLocalActivities,
  proxySinks,
  setHandler,
  upsertSearchAttributes,
  type Sinks,
} from '@temporalio/workflow';
import { searchAttributes } from '../../src/workflows/definitions';

export const userSignal = defineSignal<[string]>('user');
export const resultSignal = defineSignal<[string]>('result');

export interface BaselineActivities {
  emptyCompletion(input: { threadId: string; phase: 'call' | 'end' }): Promise<void>;
  blockingCompletion(input: { threadId: string; phase: 'call' | 'end'; transcript: string[] }): Promise<string>;
  blockingTool(input: { threadId: string; turn: number }): Promise<string>;
}

/**
 * One empty-bodied agent: per turn, wait for the user signal, a completion that calls the tool, the status upsert,
 * wait for the tool-result signal, the completion that ends the turn, the status upsert.
 *
 * @param statusUpserts write the same `AgentStatus` search attribute ours writes when it is on (`waiting_tool` after
 * the completion that calls the tool, `idle` after the one that ends the turn), so the baseline keeps performing the
 * same Temporal operations per turn.
 */
async function emptyBodiedAgent(
  complete: BaselineActivities['emptyCompletion'],
  threadId: string,
  turns: number,
  statusUpserts: boolean,
): Promise<void> {
  let users = 0;
  let results = 0;
  setHandler(userSignal, () => void users++);
  setHandler(resultSignal, () => void results++);
  const show = (value: string) =>
    statusUpserts && upsertSearchAttributes([{ key: searchAttributes.AgentStatus, value }]);
  for (let turn = 0; turn < turns; turn++) {
    await condition(() => users > turn);
    await complete({ threadId, phase: 'call' });
    show('waiting_tool');
    await condition(() => results > turn);
    await complete({ threadId, phase: 'end' });
    show('idle');
  }
}

/** Release 0.1's operation pattern: each completion a regular activity (scheduled, started, completed, and a second workflow task). */
export async function v01Agent(threadId: string, turns: number, statusUpserts = false): Promise<void> {
  const acts = proxyActivities<BaselineActivities>({ startToCloseTimeout: '5m' });
  await emptyBodiedAgent(acts.emptyCompletion, threadId, turns, statusUpserts);
}

/** The current operation pattern: each completion a local activity, one attempt, as a 0.3 slice within its budget. */
export async function ceilingAgent(threadId: string, turns: number, statusUpserts = false): Promise<void> {
  const acts = proxyLocalActivities<BaselineActivities>({ startToCloseTimeout: '5m', retry: { maximumAttempts: 1 } });
  await emptyBodiedAgent(acts.emptyCompletion, threadId, turns, statusUpserts);
}

/** The bench's sink: tells the driver an agent parked without an activity to say so (no history event). */
export interface BenchSinks extends Sinks {
  bench: { parked(threadId: string): void };
}

/** What the first workflow task of {@link bareAgent} does beyond parking: the parts of ours' first task. */
export interface BareSteps {
  /** Ask `patched('infinity-v0.3')` first, as ours' first task does: a marker and a `TemporalChangeVersion` upsert. */
  patch?: boolean;
  /** Run the (empty) slice as a local activity, which dispatches the tool (a marker event); else a sink says parked. */
  localActivity?: boolean;
  /** Then upsert `AgentStatus = waiting_tool`, as ours does when its slice calls a tool. */
  statusUpsert?: boolean;
}

/** Parks on the result signal after the first task's {@link BareSteps}; with none, it only parks. */
export async function bareAgent(threadId: string, steps: BareSteps = {}): Promise<void> {
  let results = 0;
  setHandler(userSignal, () => {});
  setHandler(resultSignal, () => void results++);
  if (steps.patch) patched('infinity-v0.3');
  if (steps.localActivity) {
    const acts = proxyLocalActivities<BaselineActivities>({ startToCloseTimeout: '5m', retry: { maximumAttempts: 1 } });
    await acts.emptyCompletion({ threadId, phase: 'call' });
  } else {
    proxySinks<BenchSinks>().bench.parked(threadId);
  }
  if (steps.statusUpsert) upsertSearchAttributes([{ key: searchAttributes.AgentStatus, value: 'waiting_tool' }]);
  await condition(() => results > 0);
}

export async function blockingAgent(threadId: string, turns: number): Promise<void> {
  const transcript: string[] = [];
  let users = 0;
  setHandler(userSignal, (text: string) => {
    users++;
    transcript.push(text);
  });
  const acts = proxyActivities<BaselineActivities>({ startToCloseTimeout: '2h' });
  for (let turn = 0; turn < turns; turn++) {
    await condition(() => users > turn);
    transcript.push(await acts.blockingCompletion({ threadId, phase: 'call', transcript }));
    transcript.push(await acts.blockingTool({ threadId, turn }));
    transcript.push(await acts.blockingCompletion({ threadId, phase: 'end', transcript }));
  }
}
