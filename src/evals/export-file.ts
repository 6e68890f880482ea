/**
 * Exported threads (docs/evals.md, "Exported threads"): one JSON file holds what an eval of a thread reads — the
 * thread and every thread its history comes from (ancestors, a fork's sources), with their items, slices and
 * compaction summaries — so a thread can be evaluated away from the store it ran on. Importing fills an in-memory store.
 */

import type { StoredItem, ThreadKind } from '../core/types';
import { threadChain, viewChain } from '../store/chain';
import type { ConversationStore, Summary, ThreadRecord } from '../store/conversation-store';
import type { RecordedSlice } from '../store/eval-records';
import { InMemoryConversationStore } from '../store/memory';
import { MalformedExportError, UnknownThreadError } from './errors';

export const EXPORT_FORMAT = 'infinity-temporal/thread-export';

/** One thread of an export. */
export interface ExportedThread {
  record: ThreadRecord;
  items: StoredItem[];
  slices: RecordedSlice[];
  /** Its compaction summaries, the one covering least first. */
  summaries: Summary[];
}

export interface ThreadExport {
  format: typeof EXPORT_FORMAT;
  version: 1;
  /** The exported thread; `threads` ends with it, after the threads its history comes from. */
  threadId: string;
  threads: ExportedThread[];
}

/**
 * What an eval of `threadId` reads, as one JSON-ready object (`JSON.stringify` it to a file).
 * @throws UnknownThreadError
 * @example writeFileSync('support-1.json', JSON.stringify(await exportThread(store, 'support-1')))
 */
export async function exportThread(store: ConversationStore, threadId: string): Promise<ThreadExport> {
  if (!(await store.getThread(threadId))) throw new UnknownThreadError(threadId);
  const chain = await viewChain(store, await threadChain(store, threadId));
  const threads: ExportedThread[] = [];
  for (const record of chain) {
    const summaries: Summary[] = [];
    // Each summary once, latest per end point: read back from the latest, below each one's end.
    for (
      let s = await store.latestSummary(record.threadId);
      s;
      s = await store.latestSummary(record.threadId, s.upTo - 1)
    )
      summaries.unshift(s);
    threads.push({
      record,
      items: await store.load(record.threadId),
      slices: await store.evals.slices(record.threadId),
      summaries,
    });
  }
  return { format: EXPORT_FORMAT, version: 1, threadId, threads };
}

const KINDS: readonly ThreadKind[] = ['root', 'child', 'event', 'compaction'];
const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/**
 * Checks a parsed file is an export this version reads; `source` names it in the error.
 * @throws MalformedExportError
 * @example const exported = parseThreadExport(JSON.parse(readFileSync(file, 'utf8')), file)
 */
export function parseThreadExport(value: unknown, source: string): ThreadExport {
  const bad = (what: string) => new MalformedExportError(`${source}: not a thread export (${what})`);
  if (!isObject(value)) throw bad('not a JSON object');
  if (value.format !== EXPORT_FORMAT) throw bad(`format must be '${EXPORT_FORMAT}'`);
  if (value.version !== 1) throw bad(`version ${String(value.version)}; this release reads version 1`);
  if (typeof value.threadId !== 'string' || !Array.isArray(value.threads) || value.threads.length === 0)
    throw bad('threadId and a non-empty threads list are required');
  value.threads.forEach((t: unknown, i) => {
    const at = `threads[${i}]`;
    if (!isObject(t) || !isObject(t.record)) throw bad(`${at}.record is missing`);
    const r = t.record;
    if (typeof r.threadId !== 'string' || typeof r.rootThreadId !== 'string' || !KINDS.includes(r.kind as ThreadKind))
      throw bad(`${at}.record needs threadId, rootThreadId and a kind`);
    if (
      !Array.isArray(t.items) ||
      !t.items.every(
        (s) => isObject(s) && typeof s.messageId === 'string' && isObject(s.item) && typeof s.item.kind === 'string',
      )
    )
      throw bad(`${at}.items must be stored items ({messageId, item})`);
    if (
      !Array.isArray(t.slices) ||
      !t.slices.every(
        (s) => isObject(s) && typeof s.sliceId === 'string' && isObject(s.result) && Number.isInteger(s.result.length),
      )
    )
      throw bad(`${at}.slices must be recorded slices ({sliceId, result})`);
    if (
      !Array.isArray(t.summaries) ||
      !t.summaries.every((s) => isObject(s) && typeof s.summary === 'string' && Number.isInteger(s.upTo))
    )
      throw bad(`${at}.summaries must be summaries ({summary, upTo})`);
  });
  const last = value.threads[value.threads.length - 1] as ExportedThread;
  if (last.record.threadId !== value.threadId) throw bad('the last of threads must be the exported thread');
  return value as unknown as ThreadExport;
}

/** The hidden thread whose empty commits carry imported summaries (a summary is saved with a commit). */
const SUMMARY_CARRIER = '\u0000import-summaries';

/**
 * An in-memory store holding the exports' threads, as their stores held them (threads in several exports once).
 * @throws MalformedExportError when two exports disagree on a thread's items
 * @example
 * ```ts
 * const store = await importThreadExports([parseThreadExport(JSON.parse(text), 'support-7.json')]);
 * const report = await evaluateThreads(store, { threads: ['support-7'], model });
 * ```
 */
export async function importThreadExports(exports: readonly ThreadExport[]): Promise<InMemoryConversationStore> {
  const store = new InMemoryConversationStore();
  let carried = 0;
  for (const ex of exports) {
    for (const t of ex.threads) {
      const { closed, ...record } = t.record;
      await store.ensureThread(record);
      if (closed) await store.markClosed(record.threadId);
      let start = 0;
      for (const s of t.slices) {
        const items = t.items.slice(start, s.result.length);
        await store
          .commit({ threadId: record.threadId, sliceId: s.sliceId, expectedLength: start, items, result: s.result })
          .catch((e: unknown) => {
            throw new MalformedExportError(
              `${ex.threadId}: thread ${record.threadId} does not fit what another export holds (${e instanceof Error ? e.message : String(e)})`,
            );
          });
        start = Math.max(start, s.result.length);
      }
      for (const summary of t.summaries) {
        const sliceId = `summary-${carried++}`;
        await store.commit({
          threadId: SUMMARY_CARRIER,
          sliceId,
          expectedLength: 0,
          items: [],
          result: { sliceId, length: 0, pendingCall: null, answeredCallIds: [], followUps: [], interrupted: false },
          summary: { ...summary, threadId: record.threadId, sourceThreadId: `import-${carried}` },
        });
      }
    }
  }
  return store;
}
