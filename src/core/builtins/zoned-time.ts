/** Wall-clock arithmetic for `sleep_until`: a local date and time in an IANA zone to an instant. */

function offsetMs(utcMs: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(utcMs));
  const get = (t: string) => Number(parts.find((p) => p.type === t)?.value);
  const asUtc = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  return asUtc - Math.floor(utcMs / 1000) * 1000;
}

/**
 * Parses `YYYY-MM-DD` and `HH:MM[:SS]` in `timeZone` and returns the instant in ms, or an error text.
 * A local time that does not exist (skipped by a DST change) is an error.
 */
export function zonedInstant(date: string, time: string, timeZone: string): { ms: number } | { error: string } {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
  } catch {
    return { error: `Error: invalid timezone '${timeZone}'` };
  }
  const d = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (!d) return { error: `Error: invalid date '${date}', expected YYYY-MM-DD` };
  const t = /^(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(time);
  if (!t) return { error: `Error: invalid time '${time}', expected HH:MM or HH:MM:SS` };
  const [y, mo, da] = [Number(d[1]), Number(d[2]), Number(d[3])];
  const [h, mi, se] = [Number(t[1]), Number(t[2]), Number(t[3] ?? 0)];
  const naive = Date.UTC(y, mo - 1, da, h, mi, se);
  const check = new Date(naive);
  if (check.getUTCMonth() !== mo - 1 || check.getUTCDate() !== da || h > 23 || mi > 59 || se > 59) {
    return { error: `Error: invalid date or time '${date} ${time}'` };
  }
  // Two passes settle the offset across a DST boundary.
  let ms = naive - offsetMs(naive, timeZone);
  ms = naive - offsetMs(ms, timeZone);
  if (ms + offsetMs(ms, timeZone) !== naive) return { error: `Error: ${date} ${time} does not exist in ${timeZone}` };
  return { ms };
}
