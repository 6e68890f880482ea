/**
 * The worker process's Temporal logger: the SDK's default, less the one warning every agent worker raises by design.
 * Each worker runs a second, activity-only Temporal worker on its own slice queue (adopted slices, decision 50), and
 * the SDK warns that it polls no workflow tasks; on every `dev`, `worker` and demo start that line read as a fault.
 */
import { DefaultLogger, type LogLevel, type LogMetadata, type Logger } from '@temporalio/worker';

const NO_WORKFLOWS = 'No workflows registered, not polling for workflow tasks';

/** The slice queue's name has this in it (`<taskQueue>/slices/<host>-<pid>-<id>`, create-worker.ts). */
export const SLICE_QUEUE_MARK = '/slices/';

const expected = (message: string, meta?: LogMetadata) =>
  message === NO_WORKFLOWS && typeof meta?.taskQueue === 'string' && meta.taskQueue.includes(SLICE_QUEUE_MARK);

/** Temporal's default logger at `level`, without the slice queue's expected warning. */
export function workerLogger(level: LogLevel): Logger {
  const inner = new DefaultLogger(level);
  return {
    log: (l, message, meta) => void (expected(message, meta) || inner.log(l, message, meta)),
    trace: (message, meta) => inner.trace(message, meta),
    debug: (message, meta) => inner.debug(message, meta),
    info: (message, meta) => inner.info(message, meta),
    warn: (message, meta) => void (expected(message, meta) || inner.warn(message, meta)),
    error: (message, meta) => inner.error(message, meta),
  };
}
