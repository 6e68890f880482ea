/**
 * A server this process started goes when the process goes, however it goes: normal exit, `process.exit()`, or a
 * signal such as `timeout`'s or a supervisor's SIGTERM. Otherwise the orphan keeps its ports and its database file,
 * and the next `npm start` or `dev` opens a second server on the same file.
 */
import type { ChildProcess } from 'node:child_process';
import { onExit } from 'signal-exit';

/** Sends `signal` to `child` when this process exits; returns the function that cancels that. */
export function killOnExit(child: ChildProcess, signal: NodeJS.Signals): () => void {
  return onExit(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  });
}
