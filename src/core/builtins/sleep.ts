/**
 * The sleep family of built-in tools: `sleep`, `sleep_until` and `sleep_until_event_or_input`. Each is a passive
 * call (a pending one never defers events); the workflow turns a sleep into a durable timer carried across
 * continue-as-new (decision 22), and user input or an event wakes the thread earlier.
 */
import { type BuiltinToolSpec, type BuiltinValidator, objectSchema, str } from './spec';
import { zonedInstant } from './zoned-time';

export const SLEEP_TOOLS: readonly BuiltinToolSpec[] = [
  {
    name: 'sleep_until_event_or_input',
    description: 'Wait until an event, a report or user input arrives. Nothing else happens meanwhile.',
    parameters: objectSchema({}),
    sync: false,
    passive: true,
  },
  {
    name: 'sleep',
    description: 'Sleep for a number of seconds; you are woken earlier by user input or events.',
    parameters: objectSchema({ seconds: { type: 'number' }, reason: { type: 'string' } }, ['seconds']),
    sync: false,
    passive: true,
  },
  {
    name: 'sleep_until',
    description: 'Sleep until a wall-clock time in a time zone (IANA name, default UTC).',
    parameters: objectSchema(
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

export const validateSleepTool: BuiltinValidator = (name, args, callId, ctx) => {
  switch (name) {
    case 'sleep_until_event_or_input':
      // Takes no arguments and needs no command: the call stays pending, passive, until an input wakes the thread.
      return { pending: true };
    case 'sleep': {
      const seconds = typeof args.seconds === 'number' && Number.isFinite(args.seconds) ? args.seconds : undefined;
      if (seconds === undefined) return { result: 'Error: seconds is required' };
      return {
        action: { type: 'sleep', callId, wakeAtMs: ctx.now() + Math.max(0, seconds) * 1000, text: slept(seconds) },
      };
    }
    case 'sleep_until': {
      const date = str(args.date);
      const time = str(args.time);
      if (date === undefined || time === undefined) return { result: 'Error: date and time are required' };
      const tz = str(args.timezone) ?? 'UTC';
      const at = zonedInstant(date, time, tz);
      if ('error' in at) return { result: at.error };
      const now = ctx.now();
      if (at.ms <= now) return { action: { type: 'sleep', callId, wakeAtMs: now, text: wokeInPast(date, time) } };
      return { action: { type: 'sleep', callId, wakeAtMs: at.ms, text: wokeAt(date, time, tz) } };
    }
    default:
      throw new Error(`not a sleep tool: ${name}`);
  }
};

/** JavaScript prints integral numbers without `.0`, as the reference does. */
export const slept = (seconds: number) => `Slept for ${seconds} seconds`;
export const wokeInPast = (date: string, time: string) =>
  `Target time ${date} ${time} is in the past. Waking immediately.`;
export const wokeAt = (date: string, time: string, tz: string) => `Woke up at target time: ${date} ${time} (${tz})`;
