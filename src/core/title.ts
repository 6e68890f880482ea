/** A thread's title: what lists, the relationships view and the memo show instead of its id. Pure. */
import { INTERRUPT_PREFIX } from './texts';

/** One line of at most `n` characters, whitespace collapsed, cut with an ellipsis. */
export const shortLine = (s: string, n: number): string => {
  const line = s.replace(/\s+/g, ' ').trim();
  return line.length > n ? `${line.slice(0, n - 1)}…` : line;
};

/** The thread's title (memo `title`): the start of its first user text. */
export const titleOf = (text: string): string =>
  shortLine(text.startsWith(INTERRUPT_PREFIX) ? text.slice(INTERRUPT_PREFIX.length) : text, 80);
