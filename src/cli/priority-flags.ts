/** `--priority`, `--fairness-key`, `--fairness-weight`: the task priority of a thread a command may start. */
import type { Command } from 'commander';
import { priorityViolation, type ThreadPriority } from '../core/priority';
import { CliError } from './errors';

export interface PriorityFlags {
  priority?: string;
  fairnessKey?: string;
  fairnessWeight?: string;
}

/** `--priority`, `--fairness-key`, `--fairness-weight` on a command that may start a thread. */
export const priorityOptions = (cmd: Command) =>
  cmd
    .option(
      '--priority <1-5>',
      'task priority if this starts the thread: 1 first, 5 last (default 2; children run at 4)',
    )
    .option('--fairness-key <key>', "the thread's fair share of the task queue (default: its id; children inherit it)")
    .option('--fairness-weight <weight>', "the share's weight, 0.001 to 1000 (default 1)");

export function priorityOf(flags: PriorityFlags): ThreadPriority | undefined {
  const number = (name: string, v: string) => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n)) throw new CliError(`${name} must be a number, got '${v}'`);
    return n;
  };
  const p: ThreadPriority = {
    ...(flags.priority !== undefined && { priorityKey: number('--priority', flags.priority) }),
    ...(flags.fairnessKey !== undefined && { fairnessKey: flags.fairnessKey }),
    ...(flags.fairnessWeight !== undefined && { fairnessWeight: number('--fairness-weight', flags.fairnessWeight) }),
  };
  const violation = priorityViolation(p);
  if (violation) throw new CliError(violation);
  return Object.keys(p).length > 0 ? p : undefined;
}
