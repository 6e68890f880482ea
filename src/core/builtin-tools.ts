/**
 * The runtime's own tools (reference spec §3): names, parameters and descriptions as the model sees them.
 * They need workflow commands (children, signals, timers), so the slice validates them and hands an action back to
 * the workflow instead of running them.
 */

export interface BuiltinToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  /** Answered inline by the slice (the model continues in the same slice). */
  sync: boolean;
  /** Represents waiting: a pending passive call never defers events. */
  passive: boolean;
}

const obj = (properties: Record<string, unknown>, required: string[] = []) => ({ type: 'object', properties, required });

export const BUILTIN_TOOLS: readonly BuiltinToolSpec[] = [
  {
    name: 'spawn_thread',
    description:
      'Spawn a child thread to work on a sub-task in parallel. The child inherits your current context and gets its own ' +
      'thread ID; you are notified automatically when it reports. Returns the child thread ID.',
    parameters: obj(
      {
        instructions: {
          type: 'string',
          description: 'What the child must do. Also state what you (the parent) will do in the meantime.',
        },
        child_of: {
          type: 'array',
          items: { type: 'string' },
          description: 'The full thread stack from the root thread to the current thread, e.g. ["R"] or ["R", "A"].',
        },
      },
      ['instructions', 'child_of'],
    ),
    sync: true,
    passive: false,
  },
  {
    name: 'report_to_parent',
    description: 'Send a report to the parent thread. The parent sees it as an event tied to the call that spawned you.',
    parameters: obj({ report: { type: 'string' } }, ['report']),
    sync: false,
    passive: false,
  },
  {
    name: 'close_thread',
    description:
      'Permanently shut down the specified thread, which must be the current thread. Cancel its subscriptions first. ' +
      'Optionally include a final report for the parent.',
    parameters: obj({ thread_id: { type: 'string' }, report_to_parent: { type: 'string' } }, ['thread_id']),
    sync: false,
    passive: false,
  },
  {
    name: 'send_message_to_child',
    description: 'Send a message to one of your direct child threads.',
    parameters: obj({ thread_id: { type: 'string' }, message: { type: 'string' } }, ['thread_id', 'message']),
    sync: false,
    passive: false,
  },
  {
    name: 'cancel_subscription',
    description: 'Cancel an active subscription started by one of your earlier tool calls.',
    parameters: obj({ tool_call_id: { type: 'string' } }, ['tool_call_id']),
    sync: true,
    passive: false,
  },
  {
    name: 'sleep_until_event_or_input',
    description: 'Wait until an event, a report or user input arrives. Nothing else happens meanwhile.',
    parameters: obj({}),
    sync: false,
    passive: true,
  },
  {
    name: 'sleep',
    description: 'Sleep for a number of seconds; you are woken earlier by user input or events.',
    parameters: obj({ seconds: { type: 'number' }, reason: { type: 'string' } }, ['seconds']),
    sync: false,
    passive: true,
  },
  {
    name: 'sleep_until',
    description: 'Sleep until a wall-clock time in a time zone (IANA name, default UTC).',
    parameters: obj(
      {
        date: { type: 'string', description: 'YYYY-MM-DD' },
        time: { type: 'string', description: 'HH:MM or HH:MM:SS' },
        timezone: { type: 'string', description: 'IANA time zone, default UTC' },
      },
      ['date', 'time'],
    ),
    sync: false,
    passive: true,
  },
];

export const BUILTIN_TOOL_NAMES = new Set(BUILTIN_TOOLS.map((t) => t.name));
