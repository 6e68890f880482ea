/**
 * The IPC messages between the driver (`bench/lib/worker-processes.ts`, `bench/lib/fleet.ts`) and a benchmark worker
 * process (`bench/worker-process.ts`). A worker sends its messages in batches: one array per turn of its event loop.
 */

/**
 * What a worker reports: ready, a tool dispatched, a completion started, a turn ended, a requested GC done, a start it
 * was asked for sent.
 */
export type WorkerToDriver =
  | { k: 'ready' }
  | { k: 'tool'; id: string; call: string }
  | { k: 'start'; id: string; at: number }
  | { k: 'end'; id: string; at: number }
  | { k: 'gc-done' }
  | { k: 'sent'; id: string; error?: string };

/**
 * What the driver sends a worker: a tool's result, a request to collect garbage, or (`startIn: 'worker'`) a user's
 * first text for the worker's own client to start the agent with, answered by `sent`.
 */
export type DriverToWorker =
  { k: 'result'; id: string; call: string } | { k: 'gc' } | { k: 'send'; id: string; text: string; msgId: string };
