/**
 * The thread workflow's state and its small serialized form carried across continue-as-new.
 */
import type { PrepareState } from '../core/prepare';
import type { DropReason, InputMessage, StoredItem, ThreadKind, TokenUsage } from '../core/types';

/** Tuning of a thread's slices; set by the worker side when it starts threads. */
export interface ThreadOptions {
  /** Heartbeat timeout of a slice: how fast a dead worker is noticed (default 4 s). */
  sliceHeartbeatTimeoutMs?: number;
  /** Upper bound of one slice (default 30 min). */
  sliceTimeoutMs?: number;
  /** Attempts of one slice before the thread reports an error and waits for new input (default 10). */
  sliceMaxAttempts?: number;
  /** Dedup ids kept across continue-as-new (default 4096). */
  dedupWindow?: number;
}

export interface ThreadWorkflowArgs {
  threadId: string;
  kind: ThreadKind;
  parentThreadId?: string;
  options?: ThreadOptions;
  /** Set by continue-as-new only. */
  carried?: CarriedState;
}

/** Everything a new run needs from the previous one: small, no conversation text except queued inputs. */
export interface CarriedState {
  length: number;
  slices: number;
  closed: boolean;
  pendingCall: PrepareState['pendingCall'];
  processedInputIds: string[];
  processedToolCalls: string[];
  subscriptions: [string, string][];
  metadata?: Record<string, unknown>;
  inbox: InputMessage[];
  carry: StoredItem[];
  dropped: Partial<Record<DropReason, number>>;
  lastUsage?: TokenUsage;
  runs: number;
}

export interface ThreadState {
  prep: PrepareState;
  length: number;
  slices: number;
  inbox: InputMessage[];
  /** Items handed to a slice that did not commit; the next slice commits exactly these first. */
  carry: StoredItem[];
  /** The last slice failed for good: wait for new input before trying again. */
  blocked: boolean;
  dropped: Partial<Record<DropReason, number>>;
  lastUsage?: TokenUsage;
  lastText?: string;
  lastError?: string;
  runs: number;
}

export function restoreState(c: CarriedState | undefined): ThreadState {
  return {
    prep: {
      closed: c?.closed ?? false,
      pendingCall: c?.pendingCall ?? null,
      processedInputIds: new Set(c?.processedInputIds),
      processedToolCalls: new Set(c?.processedToolCalls),
      subscriptions: new Map(c?.subscriptions),
      metadata: c?.metadata,
    },
    length: c?.length ?? 0,
    slices: c?.slices ?? 0,
    inbox: c?.inbox ?? [],
    carry: c?.carry ?? [],
    blocked: false,
    dropped: c?.dropped ?? {},
    lastUsage: c?.lastUsage,
    runs: (c?.runs ?? 0) + 1,
  };
}

/** Sets keep insertion order, so the window keeps the most recent ids. */
function lastN(set: Set<string>, n: number): string[] {
  const all = [...set];
  return all.length > n ? all.slice(all.length - n) : all;
}

export function carryState(s: ThreadState, dedupWindow: number): CarriedState {
  return {
    length: s.length,
    slices: s.slices,
    closed: s.prep.closed,
    pendingCall: s.prep.pendingCall,
    processedInputIds: lastN(s.prep.processedInputIds, dedupWindow),
    processedToolCalls: lastN(s.prep.processedToolCalls, dedupWindow),
    subscriptions: [...s.prep.subscriptions],
    metadata: s.prep.metadata,
    inbox: s.inbox,
    carry: s.carry,
    dropped: s.dropped,
    lastUsage: s.lastUsage,
    runs: s.runs,
  };
}
