/**
 * Baseline agents for the benchmark, run on the same dev server as ours.
 *
 * - `ceilingAgent`: the same Temporal operations per turn as our thread (user signal, activity, tool-result signal,
 *   activity) with empty bodies: the most any design could get out of this dev server.
 * - `blockingAgent`: the common pattern — the transcript lives in workflow state and is passed to each completion
 *   activity, and a tool call is an activity that waits for its result, holding a worker slot.
 */
import { condition, defineSignal, proxyActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import { searchAttributes } from '../../src/workflows/definitions';

export const userSignal = defineSignal<[string]>('user');
export const resultSignal = defineSignal<[string]>('result');

export interface BaselineActivities {
  emptyCompletion(input: { threadId: string; phase: 'call' | 'end' }): Promise<void>;
  blockingCompletion(input: { threadId: string; phase: 'call' | 'end'; transcript: string[] }): Promise<string>;
  blockingTool(input: { threadId: string; turn: number }): Promise<string>;
}

/**
 * @param statusUpserts write the same `AgentStatus` search attribute ours writes when it is on (`waiting_tool` after
 * the completion that calls the tool, `idle` after the one that ends the turn), so the ceiling keeps performing the
 * same Temporal operations per turn.
 */
export async function ceilingAgent(threadId: string, turns: number, statusUpserts = false): Promise<void> {
  let users = 0;
  let results = 0;
  setHandler(userSignal, () => void users++);
  setHandler(resultSignal, () => void results++);
  const acts = proxyActivities<BaselineActivities>({ startToCloseTimeout: '5m' });
  const show = (value: string) => statusUpserts && upsertSearchAttributes([{ key: searchAttributes.AgentStatus, value }]);
  for (let turn = 0; turn < turns; turn++) {
    await condition(() => users > turn);
    await acts.emptyCompletion({ threadId, phase: 'call' });
    show('waiting_tool');
    await condition(() => results > turn);
    await acts.emptyCompletion({ threadId, phase: 'end' });
    show('idle');
  }
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
