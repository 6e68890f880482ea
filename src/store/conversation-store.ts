/**
 * Where conversations live. Temporal carries ids and counters; the store carries the words.
 * Implementations: {@link InMemoryConversationStore} (tests), {@link SqliteConversationStore} (embedded default) and
 * {@link PostgresConversationStore} (workers on several machines).
 */
import type { Budget, BudgetRef, BudgetState, ModelSpend, ModelSpendAmount, SpendAmount } from '../core/budget';
import type { CapacityGrant, CapacityRequest, ProviderAnswer, ProviderLimits } from '../core/capacity';
import type { SliceResult } from '../core/slice-protocol';
import type { HistoryItem, StagedRef, StoredItem, ThreadKind } from '../core/types';
import type { EvalRecords } from './eval-records';

/** What the store knows of a thread besides its items: its place in the agent tree. */
export interface ThreadRecord {
  threadId: string;
  kind: ThreadKind;
  parentThreadId?: string;
  rootThreadId: string;
  /** How many of the parent's own items the child inherits (its spawn point). */
  spawnOrder?: number;
  /** The parent's tool call that created this thread. */
  spawnToolCallId?: string;
  /**
   * A fork (issue 28 §1): the thread whose history this one starts with, and how many of that thread's own items it
   * takes (with all they inherit). Shared, not copied: committed items never change. A fork is a root thread, so it
   * has no `parentThreadId`.
   */
  base?: ForkBase;
  /**
   * Ranges of the thread's own items that rewinds archived (issue 28 §2), oldest first: branch k is the k-th. Hidden
   * from the thread's view, never moved or deleted (see {@link visibleRanges} for who else they hide from).
   */
  archived?: ArchivedRange[];
  closed: boolean;
}

/**
 * Own items `[from, to)` of a thread that a rewind archived. The rewind commits a `rewind` item at `to`, so every view
 * or summary made after it reaches past `to`, and everything made before it stops at `to` or earlier.
 */
export type ArchivedRange = [from: number, to: number];

/**
 * The most archived ranges a thread keeps (issue 38 finding 7): a commit that would add one more throws
 * {@link ArchiveLimitError}, and a rewind past it is refused. Every view of the thread and of the children and forks
 * made after its rewinds reads the ranges, and every rewind rewrites them with the thread's record; a fork starts with
 * none of its own.
 */
export const MAX_ARCHIVED_RANGES = 1_000;

/** Where a fork's history comes from: the first `upTo` own items of `threadId` (see {@link ThreadRecord.base}). */
export interface ForkBase {
  threadId: string;
  upTo: number;
}

export type NewThreadRecord = Omit<ThreadRecord, 'closed' | 'rootThreadId'> & { rootThreadId?: string };

export interface CommitRequest {
  threadId: string;
  sliceId: string;
  /** The commit applies only if the thread holds exactly this many items. */
  expectedLength: number;
  items: StoredItem[];
  /** Recorded with the commit and returned to retries of the same slice. */
  result: SliceResult;
  /** A compaction summary saved in the same transaction (a compaction thread closing with its report). */
  summary?: NewSummary;
  /** Staged inputs whose content `items` now hold: removed in the same transaction (they are never needed again). */
  consumedStaged?: string[];
  /**
   * What the slice spent, added to each of `refs` (its thread, tree and tenant) in the same transaction: a duplicate
   * commit adds nothing, so a retried slice is billed once. Also ends the thread's wait for budget, if it waited.
   * `byModel`: the same spend split by the models that served the slice, added to each of `refs` per model in the same
   * transaction ({@link ConversationStore.spendByModel}).
   */
  spend?: { refs: BudgetRef[]; amount: SpendAmount; byModel?: ModelSpendAmount[] };
  /**
   * A rewind (issue 28 §2): appended to the thread's archived ranges in the same transaction. A thread already holding
   * {@link MAX_ARCHIVED_RANGES} refuses it: the commit throws {@link ArchiveLimitError} and writes nothing.
   */
  archive?: ArchivedRange;
}

/** A compaction summary of a thread's own items `[0, upTo)` (docs/semantics.md §12). */
export interface Summary {
  summary: string;
  upTo: number;
}

export interface NewSummary extends Summary {
  /** The thread whose history was summarized. */
  threadId: string;
  /** The compaction thread that wrote it: saving again from the same source replaces, never duplicates. */
  sourceThreadId: string;
}

/** The thread's history changed under a slice: someone else committed. Not retryable. */
/**
 * Provider limits' shared state (issue 27 §2): per key, the buckets and the leases of requests in flight. Each call is
 * one transaction over the key's state (core/capacity.ts decides), so every worker on the store reads one state.
 */
export interface CapacityLedger {
  /** A lease on `request.key`'s capacity, or why not and how long to wait. */
  acquire(request: CapacityRequest): Promise<CapacityGrant>;
  /**
   * The call is over: ends the lease and corrects the key's tokens by what the call used beyond its estimate; `answer`:
   * the grant's ticket and what the provider's rate-limit headers said (issue 41).
   */
  release(
    key: string,
    leaseId: string,
    limits: ProviderLimits,
    usedTokens: number | undefined,
    answer?: ProviderAnswer,
  ): Promise<void>;
  /** Extends the lease of a call still running (it expires `leaseMs` from now). */
  renew(key: string, leaseId: string, leaseMs: number): Promise<void>;
  /**
   * The provider answered "rate limited": every worker waits `waitMs` on the key, and its rates go down once per episode
   * (`answer`: the refused request's ticket and the 429's headers).
   */
  backoff(key: string, limits: ProviderLimits, waitMs: number, answer?: ProviderAnswer): Promise<void>;
  /**
   * Capacity may have freed (issue 41): holds a grant for each thread on the key's wake-up list that the key has room
   * for, in weighted fair order, and names them (workflow ids) to wake; `againInMs`: when to dispatch again while some
   * still wait for rate (none when only a lease's end can free capacity). Any worker may call it: the key's
   * transaction gives each thread to one of them. Optional for a store of one's own: without it, threads refused for
   * capacity are not put on a list and come back on their timers.
   */
  dispatch?(key: string, limits: ProviderLimits): Promise<CapacityDispatch>;
}

/** What a dispatch woke, and when to dispatch again. */
export interface CapacityDispatch {
  woken: string[];
  againInMs?: number;
  /** Threads still on the key's wake-up list. */
  waiting?: number;
}

export class CommitConflictError extends Error {
  override readonly name = 'CommitConflictError';
  constructor(
    readonly threadId: string,
    readonly expectedLength: number,
    readonly actualLength: number,
  ) {
    super(`thread ${threadId}: expected ${expectedLength} committed items, found ${actualLength}`);
  }
}

/** A rewind's commit to a thread that already holds {@link MAX_ARCHIVED_RANGES} archived ranges. Not retryable. */
export class ArchiveLimitError extends Error {
  override readonly name = 'ArchiveLimitError';
  constructor(
    readonly threadId: string,
    readonly limit = MAX_ARCHIVED_RANGES,
  ) {
    super(archiveLimitMessage(threadId, limit));
  }
}

/** Why a thread holding `limit` archived ranges takes no further rewind. */
export const archiveLimitMessage = (threadId: string, limit = MAX_ARCHIVED_RANGES): string =>
  `thread ${threadId} has reached the most rewinds a thread keeps (${limit} archived ranges): fork it ` +
  '(forkThread) at the point to go on from there';

/**
 * The store every worker and client of one deployment share: threads' committed histories, the slices that wrote
 * them, compaction summaries and staged large inputs. Committed items never change, so readers may cache them; a
 * commit is conditional on the thread's length and idempotent per slice id, which is what makes a retried or
 * duplicated slice harmless (docs/architecture.md, "The slice protocol").
 *
 * To write another implementation, run the contract suite `test/store-contract.ts` against it, as the memory, SQLite
 * and PostgreSQL stores do.
 */
export interface ConversationStore {
  /** Creates the thread record if it does not exist; returns the stored record either way. */
  ensureThread(record: NewThreadRecord): Promise<ThreadRecord>;
  /** The thread's record, or undefined for a thread the store has never seen. */
  getThread(threadId: string): Promise<ThreadRecord | undefined>;
  /** Records that the thread closed (`close_thread`); its history stays. */
  markClosed(threadId: string): Promise<void>;
  /** Items `[from, to)` of the thread's own history (default: all). */
  load(threadId: string, from?: number, to?: number): Promise<StoredItem[]>;
  /** How many items the thread's own history holds (0 for an unknown thread). */
  length(threadId: string): Promise<number>;
  /** The recorded result of a committed slice, or undefined. */
  findSlice(threadId: string, sliceId: string): Promise<SliceResult | undefined>;
  /**
   * Appends `items` and records the slice atomically. Committing a slice id twice is a no-op that returns
   * `'duplicate'`; a length mismatch throws {@link CommitConflictError}; an `archive` past the bound throws
   * {@link ArchiveLimitError}.
   */
  commit(request: CommitRequest): Promise<'committed' | 'duplicate'>;
  /** The thread's tool call with this id among its first `before` items (default: all), if any. */
  findToolCall(
    threadId: string,
    callId: string,
    before?: number,
  ): Promise<Extract<HistoryItem, { kind: 'tool_call' }> | undefined>;
  /**
   * The most recently saved summary of the thread, optionally only among those with `upTo <= maxUpTo`, and none whose
   * `upTo` lies in `(from, to]` of a range of `hidden` (it summarizes items a rewind archived).
   */
  latestSummary(threadId: string, maxUpTo?: number, hidden?: readonly ArchivedRange[]): Promise<Summary | undefined>;
  /**
   * Keeps the bytes of a large input until the slice that commits it (`core/staged.ts`): Temporal payloads carry
   * only the returned reference.
   */
  stageInput(data: Uint8Array): Promise<StagedRef>;
  /** The bytes staged under `ref.id`, or undefined when there are none; the caller checks hash and size. */
  loadStaged(ref: StagedRef): Promise<Uint8Array | undefined>;
  /** Forgets staged inputs that no thread will commit (their delivery failed). */
  discardStaged(ids: readonly string[]): Promise<void>;
  /** Sets (or with `null` removes) the limits of one budget scope (issue 27 §1). */
  setBudget(ref: BudgetRef, budget: Budget | null): Promise<void>;
  /** Limit (if set) and spend of each scope, in the order asked; an unknown scope has no limit and zero spend. */
  budgets(refs: readonly BudgetRef[]): Promise<BudgetState[]>;
  /**
   * Records that a thread stopped for budget, under each of `refs`: {@link budgetWaiters} finds it when one of them is
   * raised. The thread's next commit with spend forgets it.
   */
  waitForBudget(threadId: string, refs: readonly BudgetRef[]): Promise<void>;
  /** Threads stopped for budget under `ref` (they check again when woken). */
  budgetWaiters(ref: BudgetRef): Promise<string[]>;
  /**
   * The spend of `ref` per model that served its slices (commits' `spend.byModel`), sorted by model; none for an
   * unknown scope (or one whose slices were committed without `byModel`).
   */
  spendByModel(ref: BudgetRef): Promise<ModelSpend[]>;
  /** Releases connections and files; the store is unusable afterwards. */
  /** Provider limits shared by every worker on this store (issue 27 §2); the memory store's hold within its process. */
  readonly capacity: CapacityLedger;
  /** Slices in commit order and outcome scores, for evals (issue 29 §1; `./eval-records`). */
  readonly evals: EvalRecords;
  close(): Promise<void>;
}
