/**
 * Context windows of well-known models, for automatic compaction. Unknown models get none (no automatic
 * compaction) unless `INFINITY_CONTEXT_WINDOW` or `contextWindow` says otherwise. Matched by prefix, first wins.
 */
const KNOWN: readonly [prefix: string, tokens: number][] = [
  ['claude-', 200_000],
  ['anthropic.claude-', 200_000],
  ['us.anthropic.claude-', 200_000],
  ['eu.anthropic.claude-', 200_000],
  ['global.anthropic.claude-', 200_000],
  ['gpt-4.1', 1_047_576],
  ['gpt-4o', 128_000],
  ['gpt-5', 400_000],
  ['o3', 200_000],
  ['o4-mini', 200_000],
  ['amazon.nova-pro', 300_000],
  ['amazon.nova-lite', 300_000],
  ['amazon.nova-micro', 128_000],
];

export function contextWindowOf(_provider: string, modelId: string): number | undefined {
  return KNOWN.find(([prefix]) => modelId.startsWith(prefix))?.[1];
}
