import {
  addSpend,
  type Budget,
  type BudgetRef,
  type BudgetState,
  byModelOrder,
  mergeModelAmounts,
  type ModelSpend,
  type Spend,
  ZERO_SPEND,
} from '../core/budget';
import type { SliceResult } from '../core/slice-protocol';
import { MemoryCapacity } from './memory-capacity';
import { MemoryEvals } from './memory-evals';
import type { EvalRecords } from './eval-records';
import type { HistoryItem, StagedRef, StoredItem } from '../core/types';
import { newStagedRef } from './staged-blobs';
import { endsInside, mergeRanges } from './archived-ranges';
import {
  ArchiveLimitError,
  CommitConflictError,
  MAX_ARCHIVED_RANGES,
  type CapacityLedger,
  type ArchivedRange,
  type CommitRequest,
  type ConversationStore,
  type NewThreadRecord,
  type Summary,
  type ThreadRecord,
} from './conversation-store';

/** A store in process memory, for tests and throwaway systems. Not shared across processes. */
export class InMemoryConversationStore implements ConversationStore {
  private readonly threads = new Map<string, ThreadRecord>();
  private readonly items = new Map<string, StoredItem[]>();
  private readonly slices = new Map<string, SliceResult>();
  /** Per thread, in saving order; a re-save from the same source replaces in place. */
  private readonly summaries = new Map<string, (Summary & { sourceThreadId: string })[]>();
  private readonly staged = new Map<string, Uint8Array>();
  /** Budget ledger (issue 27 §1), keyed `scope\u0000key`. */
  private readonly limits = new Map<string, Budget>();
  private readonly spends = new Map<string, Spend>();
  /** Scope key → model → that model's spend under the scope (issue 40). */
  private readonly modelSpends = new Map<string, Map<string, Spend>>();
  /** Scope key → threads stopped for budget under it. */
  private readonly waiting = new Map<string, Set<string>>();
  /** Provider limits' ledger (issue 27 §2), in this process. */
  readonly capacity: CapacityLedger = new MemoryCapacity();
  /** Slices in commit order and outcome scores (issue 29 §1), in this process. */
  readonly evals: EvalRecords = new MemoryEvals(this.slices);

  async ensureThread(record: NewThreadRecord): Promise<ThreadRecord> {
    const existing = this.threads.get(record.threadId);
    if (existing) return structuredClone(existing);
    const created: ThreadRecord = { ...record, rootThreadId: record.rootThreadId ?? record.threadId, closed: false };
    this.threads.set(record.threadId, created);
    return structuredClone(created);
  }

  async getThread(threadId: string): Promise<ThreadRecord | undefined> {
    const r = this.threads.get(threadId);
    return r && structuredClone(r);
  }

  async markClosed(threadId: string): Promise<void> {
    const r = this.threads.get(threadId);
    if (r) r.closed = true;
  }

  async load(threadId: string, from = 0, to?: number): Promise<StoredItem[]> {
    return structuredClone((this.items.get(threadId) ?? []).slice(from, to));
  }

  async length(threadId: string): Promise<number> {
    return this.items.get(threadId)?.length ?? 0;
  }

  async findSlice(threadId: string, sliceId: string): Promise<SliceResult | undefined> {
    const r = this.slices.get(`${threadId}\u0000${sliceId}`);
    return r && structuredClone(r);
  }

  async commit(req: CommitRequest): Promise<'committed' | 'duplicate'> {
    const key = `${req.threadId}\u0000${req.sliceId}`;
    if (this.slices.has(key)) return 'duplicate';
    const list = this.items.get(req.threadId) ?? [];
    if (list.length !== req.expectedLength)
      throw new CommitConflictError(req.threadId, req.expectedLength, list.length);
    const rec = this.threads.get(req.threadId);
    if (req.archive && rec && (rec.archived?.length ?? 0) >= MAX_ARCHIVED_RANGES)
      throw new ArchiveLimitError(req.threadId);
    list.push(...structuredClone(req.items));
    this.items.set(req.threadId, list);
    this.slices.set(key, structuredClone(req.result));
    for (const id of req.consumedStaged ?? []) this.staged.delete(id);
    if (req.archive && rec) rec.archived = [...(rec.archived ?? []), [...req.archive]];
    if (req.spend) {
      for (const ref of req.spend.refs) {
        const k = refKey(ref);
        this.spends.set(k, addSpend(this.spends.get(k) ?? ZERO_SPEND, req.spend.amount));
        const models = this.modelSpends.get(k) ?? new Map<string, Spend>();
        for (const { model, amount } of mergeModelAmounts(req.spend.byModel ?? []))
          models.set(model, addSpend(models.get(model) ?? ZERO_SPEND, amount));
        if (models.size > 0) this.modelSpends.set(k, models);
      }
      for (const threads of this.waiting.values()) threads.delete(req.threadId);
    }
    if (req.summary) {
      const { threadId, sourceThreadId, summary, upTo } = req.summary;
      const list = this.summaries.get(threadId) ?? [];
      const existing = list.find((s) => s.sourceThreadId === sourceThreadId);
      if (existing) Object.assign(existing, { summary, upTo });
      else list.push({ sourceThreadId, summary, upTo });
      this.summaries.set(threadId, list);
    }
    return 'committed';
  }

  async findToolCall(
    threadId: string,
    callId: string,
    before?: number,
  ): Promise<Extract<HistoryItem, { kind: 'tool_call' }> | undefined> {
    const found = (this.items.get(threadId) ?? [])
      .slice(0, before)
      .find((s) => s.item.kind === 'tool_call' && s.item.id === callId)?.item;
    return found?.kind === 'tool_call' ? structuredClone(found) : undefined;
  }

  async latestSummary(
    threadId: string,
    maxUpTo = Number.MAX_SAFE_INTEGER,
    hidden: readonly ArchivedRange[] = [],
  ): Promise<Summary | undefined> {
    const merged = mergeRanges(hidden);
    const found = (this.summaries.get(threadId) ?? [])
      .filter((s) => s.upTo <= maxUpTo && !endsInside(merged, s.upTo))
      .pop();
    return found && { summary: found.summary, upTo: found.upTo };
  }

  async stageInput(data: Uint8Array): Promise<StagedRef> {
    const ref = newStagedRef(data);
    this.staged.set(ref.id, new Uint8Array(data)); // a copy: the caller may reuse its buffer
    return ref;
  }

  async loadStaged(ref: StagedRef): Promise<Uint8Array | undefined> {
    const data = this.staged.get(ref.id);
    return data && new Uint8Array(data);
  }

  async discardStaged(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.staged.delete(id);
  }

  async setBudget(ref: BudgetRef, budget: Budget | null): Promise<void> {
    if (budget) this.limits.set(refKey(ref), { ...budget });
    else this.limits.delete(refKey(ref));
  }

  async budgets(refs: readonly BudgetRef[]): Promise<BudgetState[]> {
    return refs.map((ref) => {
      const limit = this.limits.get(refKey(ref));
      const spend = { ...(this.spends.get(refKey(ref)) ?? ZERO_SPEND) };
      return limit ? { ref: { ...ref }, limit: { ...limit }, spend } : { ref: { ...ref }, spend };
    });
  }

  async waitForBudget(threadId: string, refs: readonly BudgetRef[]): Promise<void> {
    for (const ref of refs) {
      const k = refKey(ref);
      const set = this.waiting.get(k) ?? new Set<string>();
      set.add(threadId);
      this.waiting.set(k, set);
    }
  }

  async budgetWaiters(ref: BudgetRef): Promise<string[]> {
    return [...(this.waiting.get(refKey(ref)) ?? [])];
  }

  async spendByModel(ref: BudgetRef): Promise<ModelSpend[]> {
    return [...(this.modelSpends.get(refKey(ref)) ?? [])]
      .map(([model, spend]) => ({ model, ...spend }))
      .sort(byModelOrder);
  }

  async close(): Promise<void> {}
}

const refKey = (ref: BudgetRef) => `${ref.scope}\u0000${ref.key}`;
