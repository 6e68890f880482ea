/**
 * Rewinding a thread (issue 28 §2): the thread goes back to a point of its own history and continues from there, as if
 * what came after never happened for the model, while nothing is lost: the items after the point stay in the store as
 * an archived branch (`history({ branch })`). The client checks the point in the store and sends a `rewind` control
 * input, acknowledged; the thread takes it at its next pause between slices (workflows/rewind.ts), so a slice that is
 * running commits first and is archived too, and inputs that arrive meanwhile are taken after the rewind.
 */
import { randomUUID } from 'node:crypto';
import { rewindInput } from '../core/inputs';
import { InvalidInputError, ThreadClosedError, ThreadNotFoundError } from '../inbox/errors';
import { rewindPointError } from '../store/chain';
import type { ArchivedRange, ConversationStore } from '../store/conversation-store';
import type { AgentClient } from './agent-client';
import { type ForkAt, resolveForkPoint } from './fork';

/** Options of {@link AgentClient.rewindThread}. */
export interface RewindThreadOptions {
  /**
   * The point: how many of the thread's own committed items stay (0 to its length − 1, the numbering of `history`), or
   * a slice (`slice-<n>`, or a whole slice id): the items up to the end of that slice.
   */
  to: number | string;
  /** The rewind input's id: a retried call with the same id rewinds once. @default a random UUID */
  id?: string;
}

/** What a rewind did. */
export interface RewindResult {
  threadId: string;
  /** The point: the thread's first `to` own items stay. */
  to: number;
  /** The archived branch, `history({ branch })` (1 for the thread's first rewind). */
  branch: number;
  /** The own items the branch holds, `[from, to)`. */
  archived: ArchivedRange;
}

/** The thread's own reason for refusing a rewind to `to` (its `lastError`), when it still says so. */
async function refusal(client: AgentClient, threadId: string, to: number): Promise<string | undefined> {
  const prefix = `rewind to item ${to} failed: `;
  try {
    const last = (await client.thread(threadId).status()).lastError;
    return last?.startsWith(prefix) ? last.slice(prefix.length) : undefined;
  } catch {
    return undefined; // the refusal stands without its reason
  }
}

/** Rewinds `threadId` (see the module comment); the caller is {@link AgentClient.rewindThread}. */
export async function rewindThread(
  client: AgentClient,
  store: ConversationStore | undefined,
  threadId: string,
  options: RewindThreadOptions,
): Promise<RewindResult> {
  if (!store) throw new Error('rewindThread() needs the conversation store: pass `store` to AgentClient');
  const record = await store.getThread(threadId);
  if (!record) throw new ThreadNotFoundError(threadId);
  if (options.to === 'now') throw new InvalidInputError('rewinding to now changes nothing: give an earlier point');
  const to = await resolveForkPoint(store, threadId, options.to as ForkAt);
  // Checked against the length now plus one: a slice running now may still commit items after the point (the thread
  // checks again against its length when it takes the rewind). Refuses too when the thread holds the most archived
  // ranges it keeps (MAX_ARCHIVED_RANGES): the thread would refuse it.
  const error = rewindPointError(record, to, (await store.length(threadId)) + 1);
  if (error) throw new InvalidInputError(error);
  // A thread waiting for a budget raise takes no input until then: its rewind would wait as long, and so would this call.
  if ((await client.thread(threadId).status()).status === 'over_budget')
    throw new InvalidInputError(
      `thread ${threadId} waits for a budget raise and takes no input until then: raise its budget, then rewind`,
    );
  const r = await client.deliver(rewindInput(options.id ?? randomUUID(), threadId, to), { acknowledge: true });
  if (!r.delivered) {
    if (r.reason === 'closed') throw new ThreadClosedError(threadId);
    // The thread refused it: nothing was committed after the point, the point fell inside a range another rewind
    // archived meanwhile, another rewind took the thread's last one (MAX_ARCHIVED_RANGES), or a worker older than
    // release 0.8 took it (its `lastError` and drops say which).
    if (r.reason !== 'duplicate') {
      const why = await refusal(client, threadId, to);
      throw new InvalidInputError(`thread ${threadId} refused the rewind (${r.reason})${why ? `: ${why}` : ''}`);
    }
  }
  const ranges = (await store.getThread(threadId))?.archived ?? [];
  let branch = 0;
  ranges.forEach(([from], i) => {
    if (from === to) branch = i + 1;
  });
  if (branch === 0) throw new Error(`thread ${threadId} took the rewind but the store has no branch from item ${to}`);
  return { threadId, to, branch, archived: [...ranges[branch - 1]!] };
}
