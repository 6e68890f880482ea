/** A thread's prepare state as a new thread has it, with the fields a test sets (the unit tests' one fixture). */
import type { PrepareState } from '../../src/core/prepare';

export const freshPrepareState = (over: Partial<PrepareState> = {}): PrepareState => ({
  closed: false,
  pendingCall: null,
  processedInputIds: new Set(),
  processedToolCalls: new Set(),
  subscriptions: new Map(),
  eventTargets: new Map(),
  deferred: [],
  ...over,
});
