/** What `infinity-temporal status` prints for a thread, line by line (no colour). */
import { describe, expect, it } from 'vitest';
import { statusLines } from '../../src/cli/format';
import type { ThreadStatus } from '../../src/core/types';

const base: ThreadStatus = {
  threadId: 't1',
  kind: 'root',
  status: 'waiting_tool',
  pendingCall: { id: 'call_1', name: 'get_build_status', passive: false },
  historyLength: 3,
  slices: 1,
  runs: 1,
  queued: 0,
  deferred: 0,
  dropped: {},
  subscriptions: {},
  children: [],
  compaction: { completed: 0 },
  prompts: [],
};

describe('status lines', () => {
  it('name the call a waiting thread waits for', () => {
    expect(statusLines(base)).toContain('waiting for get_build_status (call_1)');
  });

  it('do not say a closed thread waits for its close_thread call', () => {
    const lines = statusLines({
      ...base,
      status: 'closed',
      pendingCall: { id: 'call_9', name: 'close_thread', passive: false },
    });
    expect(lines[0]).toBe('t1 root closed');
    expect(lines.join('\n')).not.toContain('waiting for');
  });
});
