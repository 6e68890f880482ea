/**
 * `npx tsx bench/probes/eval-throughput.ts [threads] [turns] [fromSlice]` (defaults 1000 20 10): replay-evals'
 * throughput (issue 29 §1; goal: 1,000 recorded 20-turn threads in ≤ 5 min on the 2-core machine, no provider call
 * for the recorded part). Writes the threads straight into a new SQLite store file — each turn one slice: a user text
 * and the model's answer with an async tool call, then, the next turn, the tool's result and the model's text (~1.2 KB
 * a completion, as the simulated model streams) — closes it, reopens it, and replays every thread against the scripted
 * model from `fromSlice` on. Prints the write time, the eval time, threads/s, and the candidate calls against the
 * rounds expected from `fromSlice` on (a call for a recorded slice would make them differ).
 */
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { evaluateThreads } from '../../src/evals';
import type { SliceResult } from '../../src/core/slice-protocol';
import type { StoredItem } from '../../src/core/types';
import { type ModelRequest } from '../../src/model/provider';
import { type ScriptedReply, ScriptedModel } from '../../src/model/scripted';
import { SqliteConversationStore } from '../../src/store/sqlite';
import { runMain } from '../lib/main';

const THREADS = Number(process.argv[2] ?? 1000);
const TURNS = Number(process.argv[3] ?? 20);
const FROM = Number(process.argv[4] ?? 10);
const COMPLETION = 'Checking the state of the pipeline and the recent changes that could affect it. '.repeat(15);
const USAGE = { inputTokens: 900, outputTokens: 300, totalTokens: 1200 };

/** One recorded thread of `TURNS` slices, committed as the runtime commits them. */
async function writeThread(store: SqliteConversationStore, threadId: string): Promise<void> {
  await store.ensureThread({ threadId, kind: 'root' });
  let length = 0;
  for (let n = 0; n < TURNS; n++) {
    const sliceId = `${threadId}/slice-${n}`;
    const out = (k: number) => `${sliceId}-completion-${k}`;
    const callId = `${threadId}-call-${n}`;
    const asks = n % 2 === 0;
    const inputs: StoredItem[] = asks
      ? [{ messageId: `${sliceId}-user`, item: { kind: 'user', text: `check build ${n}` } }]
      : [
          {
            messageId: `${threadId}-call-${n - 1}-result`,
            item: {
              kind: 'tool_result',
              id: `${threadId}-call-${n - 1}`,
              content: [{ type: 'text', text: `build ${n - 1}: green` }],
            },
          },
        ];
    const outputs: StoredItem[] = asks
      ? [
          { messageId: out(0), item: { kind: 'assistant', text: COMPLETION } },
          {
            messageId: out(1),
            item: { kind: 'tool_call', id: callId, name: 'get_build_status', args: { build_id: `${n}` } },
          },
        ]
      : [{ messageId: out(0), item: { kind: 'assistant', text: `${COMPLETION} Build ${n - 1} is green.` } }];
    const items = [...inputs, ...outputs];
    const result: SliceResult = {
      sliceId,
      length: length + items.length,
      pendingCall: asks ? { id: callId, name: 'get_build_status', passive: false } : null,
      answeredCallIds: [],
      followUps: [],
      interrupted: false,
      appended: inputs.length,
      usage: USAGE,
    };
    await store.commit({ threadId, sliceId, expectedLength: length, items, result });
    length += items.length;
  }
}

/** Answers as the record did: a call after a user text, text after a tool result. */
function script(req: ModelRequest): ScriptedReply {
  const last = req.messages.at(-1);
  if (last?.role === 'user') {
    const n = /\d+/.exec(last.text)?.[0] ?? '0';
    return { text: COMPLETION, toolCall: { name: 'get_build_status', args: { build_id: n } }, usage: USAGE };
  }
  return { text: `${COMPLETION} done`, usage: USAGE };
}

async function main(): Promise<void> {
  const file = join(mkdtempSync(join(tmpdir(), 'eval-throughput-')), 'store.sqlite');
  const ids = Array.from({ length: THREADS }, (_, i) => `recorded-${i}`);
  let t0 = performance.now();
  const writer = new SqliteConversationStore(file);
  for (const id of ids) await writeThread(writer, id);
  await writer.close();
  const writeS = (performance.now() - t0) / 1000;

  let calls = 0;
  const model = new ScriptedModel((req) => {
    calls++;
    // The scripted model keeps every request for tests to read; a probe of 10,000 calls does not need them.
    model.requests.length = 0;
    return script(req);
  });
  const store = new SqliteConversationStore(file, { readonly: true });
  t0 = performance.now();
  const report = await evaluateThreads(store, { threads: ids, model, fromSlice: FROM });
  const evalS = (performance.now() - t0) / 1000;
  await store.close();

  const expected = THREADS * Math.max(0, TURNS - FROM);
  const t = report.totals;
  console.log(
    `store: ${(statSync(file).size / 1e6).toFixed(1)} MB, ${THREADS} threads × ${TURNS} slices, written in ${writeS.toFixed(1)} s`,
  );
  console.log(
    `eval from slice ${FROM}: ${THREADS} threads in ${evalS.toFixed(1)} s = ${(THREADS / evalS).toFixed(1)} threads/s ` +
      `(${(t.evaluatedRounds / evalS).toFixed(0)} rounds/s)`,
  );
  console.log(
    `candidate calls ${calls} (report: ${t.providerCalls}); expected from slice ${FROM} on: ${expected}; ` +
      `calls for recorded slices: ${calls - expected}; diverged slices ${t.divergedSlices}, errors ${t.candidateErrors}`,
  );
  if (calls !== expected || t.providerCalls !== expected)
    throw new Error('the candidate was called for a recorded slice');
}

runMain(main);
