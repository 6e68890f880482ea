/** How a candidate's round compares with the recorded one: tool choice, text similarity, and a line diff of both. */
import type { ToolChoice } from './recorded';

/** JSON with object keys sorted, so `{a, b}` and `{b, a}` compare equal. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

/** Same tool and same arguments (deep, key order ignored), or neither calls a tool. */
export function sameToolChoice(a: ToolChoice | undefined, b: ToolChoice | undefined): boolean {
  if (!a || !b) return !a && !b;
  return a.name === b.name && canonicalJson(a.args) === canonicalJson(b.args);
}

const words = (text: string): string[] => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

/**
 * Word overlap of two texts, 0..1: the Dice coefficient of their word multisets (case and punctuation ignored). Two
 * empty texts are alike (1); cheap enough for every round of a thousand threads.
 */
export function textSimilarity(a: string, b: string): number {
  const wa = words(a);
  const wb = words(b);
  if (wa.length === 0 && wb.length === 0) return 1;
  const counts = new Map<string, number>();
  for (const w of wa) counts.set(w, (counts.get(w) ?? 0) + 1);
  let shared = 0;
  for (const w of wb) {
    const n = counts.get(w) ?? 0;
    if (n > 0) {
      shared++;
      counts.set(w, n - 1);
    }
  }
  return (2 * shared) / (wa.length + wb.length);
}

/** A round's decision as diff lines: its text lines, then `call <name> <args>`. */
export function decisionLines(turn: { text: string; toolCall?: ToolChoice }): string[] {
  const lines = turn.text === '' ? [] : turn.text.split('\n');
  if (turn.toolCall) lines.push(`call ${turn.toolCall.name} ${canonicalJson(turn.toolCall.args)}`);
  return lines;
}

/**
 * A line diff (longest common subsequence): `  ` kept, `- ` recorded only, `+ ` candidate only. Rounds are short; past
 * 2,000 lines a side the whole of each side is shown instead, to bound the table.
 */
export function lineDiff(recorded: readonly string[], candidate: readonly string[]): string[] {
  const n = recorded.length;
  const m = candidate.length;
  if (n > 2000 || m > 2000) return [...recorded.map((l) => `- ${l}`), ...candidate.map((l) => `+ ${l}`)];
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i]![j] = recorded[i] === candidate[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && recorded[i] === candidate[j]) {
      out.push(`  ${recorded[i++]}`);
      j++;
    } else if (i < n && (j === m || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) out.push(`- ${recorded[i++]}`);
    else out.push(`+ ${candidate[j++]}`);
  }
  return out;
}
