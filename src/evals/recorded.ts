/**
 * A recorded thread as evals read it (docs/evals.md): its committed slices, each split into the inputs it appended
 * and the model rounds of its completion. A round is what one model request produced: the model's items (message ids
 * `<slice id>-completion-<n>`, core/ids.ts), then what the runtime answered inline (a sync tool's result, an unknown
 * tool's error) before the next request.
 */
import { messageIds } from '../core/ids';
import type { SliceResult } from '../core/slice-protocol';
import type { HistoryItem, StoredItem } from '../core/types';
import type { ConversationStore, ThreadRecord } from '../store/conversation-store';
import { threadChain } from '../store/chain';
import { UnknownThreadError } from './errors';

/** A tool call as evals compare it. */
export interface ToolChoice {
  name: string;
  args: unknown;
}

/** One model round of a recorded slice. */
export interface RecordedRound {
  /** How many of the slice's output items came before this round (what the round's request included). */
  offset: number;
  /** The model's items of this round. */
  outputs: StoredItem[];
  /** What the runtime committed after them in the same slice (inline tool results), before the next round. */
  answered: StoredItem[];
  /** The round's assistant text, its runs joined. */
  text: string;
  /** The round's tool call (only the first of a round counts), if any. */
  toolCall?: ToolChoice & { id: string };
}

/** One committed slice of a recorded thread. */
export interface RecordedSliceView {
  /** The slice's number: `n` of its id `<thread>/slice-<n>`, else its place among the thread's slices. */
  number: number;
  sliceId: string;
  result: SliceResult;
  /** The thread's own length when the slice started. */
  start: number;
  /** The inputs it appended (user texts, tool results, events), as committed. */
  inputs: StoredItem[];
  /** Everything its completion committed after the inputs. */
  outputs: StoredItem[];
  /** Its model rounds; none for a rewind's slice, which called no model. */
  rounds: RecordedRound[];
}

export interface RecordedThread {
  record: ThreadRecord;
  /** The thread and its ancestors, root first (`store/chain.ts`). */
  chain: ThreadRecord[];
  slices: RecordedSliceView[];
}

/** A slice's number: `n` of its id `<thread>/slice-<n>` (core/ids.ts), else `index`, its place in commit order. */
export const sliceNumber = (threadId: string, sliceId: string, index: number): number => {
  const prefix = `${threadId}/slice-`;
  return sliceId.startsWith(prefix) && /^\d+$/.test(sliceId.slice(prefix.length))
    ? Number(sliceId.slice(prefix.length))
    : index;
};

/** Reads a thread's record, chain, items and slices; throws {@link UnknownThreadError} when the store has none. */
export async function readRecordedThread(store: ConversationStore, threadId: string): Promise<RecordedThread> {
  const record = await store.getThread(threadId);
  if (!record) throw new UnknownThreadError(threadId);
  const chain = await threadChain(store, threadId);
  const items = await store.load(threadId);
  const slices: RecordedSliceView[] = [];
  let start = 0;
  for (const [i, s] of (await store.evals.slices(threadId)).entries()) {
    const end = Math.min(s.result.length, items.length);
    const own = items.slice(start, end);
    // The model's items carry the slice's completion ids (`<slice>-completion-<n>`): the prefix before the counter.
    const modelPrefix = messageIds.completion(s.sliceId, 0).replace(/0$/, '');
    const isModel = (x: StoredItem) => x.messageId.startsWith(modelPrefix);
    // Recorded since release 0.3; before it, the inputs are what comes before the model's first item.
    const appended = s.result.appended ?? (own.findIndex(isModel) < 0 ? own.length : own.findIndex(isModel));
    const outputs = own.slice(appended);
    slices.push({
      number: sliceNumber(threadId, s.sliceId, i),
      sliceId: s.sliceId,
      result: s.result,
      start,
      inputs: own.slice(0, appended),
      outputs,
      // A rewind's slice (issue 28 §2) commits its `rewind` note and no completion: nothing to evaluate.
      rounds: own.some((x) => x.item.kind === 'rewind') ? [] : splitRounds(outputs, isModel),
    });
    start = end;
  }
  return { record, chain, slices };
}

/** Splits a slice's outputs into model rounds; a slice whose model produced nothing has one empty round. */
export function splitRounds(outputs: readonly StoredItem[], isModel: (s: StoredItem) => boolean): RecordedRound[] {
  const rounds: RecordedRound[] = [];
  let i = 0;
  do {
    const offset = i;
    const model: StoredItem[] = [];
    const answered: StoredItem[] = [];
    while (i < outputs.length && isModel(outputs[i]!)) model.push(outputs[i++]!);
    while (i < outputs.length && !isModel(outputs[i]!)) answered.push(outputs[i++]!);
    rounds.push({ offset, outputs: model, answered, ...turnOf(model.map((s) => s.item)) });
  } while (i < outputs.length);
  return rounds;
}

/** The text and first tool call of a round's items. */
export function turnOf(items: readonly HistoryItem[]): { text: string; toolCall?: ToolChoice & { id: string } } {
  const text = items.map((it) => (it.kind === 'assistant' ? it.text : '')).join('');
  const call = items.find((it) => it.kind === 'tool_call');
  return call?.kind === 'tool_call' ? { text, toolCall: { id: call.id, name: call.name, args: call.args } } : { text };
}
