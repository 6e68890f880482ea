/**
 * Baseline agents for the benchmark, run on the same dev server as ours.
 *
 * - `v01Agent`: release 0.1's Temporal operations per turn (user signal, activity, tool-result signal, activity, and
 *   the two status upserts) with empty bodies. A fixed reference: it does not follow the runtime's changes.
 * - `ceilingAgent`: the current operations per turn (each completion a local activity: one marker event, no second
 *   workflow task) with empty bodies: the most this operation pattern can get out of the dev server.
 * - `blockingAgent`: the common pattern — the transcript lives in workflow state and is passed to each completion
 *   activity, and a tool call is an activity that waits for its result, holding a worker slot.
 */
import {
  condition,
  defineSignal,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
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
