/**
 * `npx tsx bench/probes/migrate-sweep.ts [threads=1000] [concurrency=32]` (options: `--park 50`, `--fairness-key k`,
 * `--nonsticky-ratio r`, `--during`, the last one last): what `migrateThreads` (issue 39, decision 84) costs at
 * scale, on a fresh dev server, with the real runtime in this process: `createAgentWorker` (its default cache of 100
 * workflows, so most parked threads are evicted and replay when asked to move) with a scripted model that answers
 * `ok: <text>`, and an `AgentClient` on the worker's connection starting threads eagerly.
 *
 * 1. Parks `threads` threads: each gets one user text and answers it, then waits idle (`--park` starts at a time).
 * 2. Records a cutoff once visibility lists every one as running and started before it.
 * 3. Runs `client.migrateThreads({ before: cutoff, concurrency })` and reports threads moved, closed, not moved, wall
 *    time, threads/s, the history events each move added (the old run's tail after its last event before the sweep,
 *    plus the new run's events; 50 threads sampled), the CPU the dev server and this process (worker + client) spent
 *    per moved thread, up to the sweep's return and until the last 50 moved threads' new runs had taken their first
 *    workflow task ("settled"), and how long moves took (from the runs' histories: migrate signal → old run's task →
 *    continued as new → new run's first task), for the sampled threads and for the last 50 moved.
 * 4. Checks 20 moved threads: each has a new run, answers a new user text, and its history is the one it had before
 *    plus that turn, with nothing dropped.
 * `--during` (last): halfway through the sweep, 5 threads already moved and 5 not yet moved get a user text; prints how
 * long each took to answer, and whether it answered before the sweep ended.
 * `--nonsticky-ratio r`: the worker's `nonStickyToStickyPollRatio` (the SDK's default 0.2: 8 of 10 workflow task polls
 * on its sticky queue, where the old runs' migrate tasks go, 2 on the task queue, where the new runs' first tasks go).
 * `--fairness-key k` starts every thread with that fairness key instead of its own id (the runtime's default): a
 * control for the order in which the task queue hands out the old runs' and the new runs' workflow tasks.
 * Prints a table and writes bench/results/migrate-sweep-<threads>-c<concurrency>[-fk]-<time>.json.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { AgentClient } from '../../src/client/agent-client';
import { migrationQuery, type MigrateProgress } from '../../src/client/migrate';
import type { HistoryItem } from '../../src/core/types';
import type { ModelRequest } from '../../src/model/provider';
import { ScriptedModel } from '../../src/model/scripted';
import { SqliteConversationStore } from '../../src/store/sqlite';
import { createAgentWorker } from '../../src/worker/create-worker';
import { flag, positionals } from '../lib/args';
import { eventTypeName } from '../lib/history';
import { runMain } from '../lib/main';
import { cpuSeconds, treeCpu } from '../lib/proc';
import { probeBase } from '../lib/probe-base';
import { median } from '../lib/stats';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `fn` over `items`, `width` at a time. */
async function pool<T>(items: readonly T[], width: number, fn: (t: T, i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i]!, i);
      }
    }),
  );
}

/** `count` items spread evenly over `ids`. */
const spread = (ids: readonly string[], count: number, offset = 0): string[] => {
  const step = Math.max(1, Math.floor(ids.length / count));
  return Array.from({ length: Math.min(count, ids.length) }, (_, i) => ids[(i * step + offset) % ids.length]!);
};

const lastUser = (req: ModelRequest) =>
  [...req.messages].reverse().find((m): m is { role: 'user'; text: string } => m.role === 'user')?.text ?? '';

/** One line per history item (as test/helpers' render, enough to compare a conversation before and after). */
const render = (items: readonly HistoryItem[]): string[] =>
  items.map((it) =>
    it.kind === 'user' || it.kind === 'assistant' || it.kind === 'reasoning' ? `${it.kind}: ${it.text}` : it.kind,
  );

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const positional = positionals();
  const threads = Number(positional[0] ?? 1000);
  const concurrency = Number(positional[1] ?? 32);
  const parkWidth = Number(flag('--park') ?? 50);
  // One fairness key for every thread instead of each its own id (the default): a control for the task queue's order.
  const fairnessKey = flag('--fairness-key');
  // The worker's share of workflow task polls on the task queue against its sticky queue (Temporal's default 0.2).
  const nonStickyRatio = flag('--nonsticky-ratio');
  const loadStart = loadavg();
  const startedAt = new Date().toISOString();
  console.log(
    `${startedAt} · ${threads} threads, concurrency ${concurrency}; load ${loadStart.map((l) => l.toFixed(2)).join(' ')}`,
  );

  // A fresh dev server, an empty store and the thread workflow's bundle, as the other fleet probes start from.
  const { server, storeFile, bundlePath } = await probeBase('migrate-sweep');
  const connection = await NativeConnection.connect({ address: server.address });
  const temporal = new Client({ connection });
  const store = new SqliteConversationStore(storeFile);
  const taskQueue = `migrate-sweep-${Date.now()}`;
  const idleWaiters = new Map<string, () => void>();
  const model = new ScriptedModel((req) => ({ text: `ok: ${lastUser(req)}` }));
  const worker = await createAgentWorker({
    connection,
    taskQueue,
    store,
    model,
    workflowBundle: { codePath: bundlePath },
    ...(nonStickyRatio && { workerOptions: { nonStickyToStickyPollRatio: Number(nonStickyRatio) } }),
    onEvent(e) {
      if (e.type === 'status' && e.status === 'idle') {
        idleWaiters.get(e.threadId)?.();
        idleWaiters.delete(e.threadId);
      }
    },
  });
  const running = worker.run();
  const client = new AgentClient({
    client: temporal,
    taskQueue,
    store,
    eagerStart: true,
    ...(fairnessKey && { priority: { fairnessKey } }),
  });
  const read = () => ({ server: treeCpu(server.pid), process: cpuSeconds(process.pid) });

  try {
    // 1. Park.
    const ids = Array.from({ length: threads }, (_, i) => `${taskQueue}-${i}`);
    const parkErrors: string[] = [];
    const park0 = Date.now();
    let parked = 0;
    await pool(ids, parkWidth, async (id, i) => {
      const idle = new Promise<void>((resolve) => idleWaiters.set(id, resolve));
      try {
        await client.sendUserText(id, `hello ${i}`);
        await Promise.race([
          idle,
          sleep(120_000).then(() => {
            throw new Error('no idle event within 120 s');
          }),
        ]);
      } catch (e) {
        parkErrors.push(`${id}: ${e instanceof Error ? e.message : String(e)}`);
      }
      if (++parked % 1000 === 0)
        console.error(`parked ${parked}/${threads} (${((Date.now() - park0) / 1000).toFixed(0)} s)`);
    });
    const parkMs = Date.now() - park0;
    if (parkErrors.length > 0) console.error(`${parkErrors.length} threads failed to park:`, parkErrors.slice(0, 5));

    // 2. The cutoff, once visibility lists every parked thread before it.
    await sleep(1000);
    const cutoff = new Date();
    const query = migrationQuery(taskQueue, cutoff);
    for (let deadline = Date.now() + 120_000; ; await sleep(500)) {
      const { count } = await temporal.workflow.count(query);
      if (count >= threads) break;
      if (Date.now() > deadline) throw new Error(`visibility lists ${count} of ${threads} threads`);
    }

    // The samples: 50 threads for the events a move adds, 20 for the history check (their last events settled).
    const eventSample = spread(ids, 50);
    const checkSample = spread(ids, 20, 7);
    // `--during`: up to 40 more threads, of which 5 already moved and 5 not yet moved get a user text halfway through
    // the sweep; the time until each has answered.
    const duringSample = process.argv.includes('--during')
      ? spread(ids, 40, 13).filter((id) => !eventSample.includes(id) && !checkSample.includes(id))
      : [];
    // Settled: no workflow task pending or running, and the same length on two reads 500 ms apart (a task's
    // commands are recorded after its completed event, so the last event's type says nothing). Read every 500 ms:
    // the reads of the 50 threads settled after the sweep count in its "settled" CPU.
    const settledEvents = async (id: string, runId?: string): Promise<number> => {
      let last = -1;
      for (let i = 0; i < 600; i++) {
        const { raw, historyLength } = await temporal.workflow.getHandle(id, runId).describe();
        const quiet = !raw.pendingWorkflowTask;
        if (quiet && historyLength === last) return historyLength;
        last = quiet ? historyLength : -1;
        await sleep(500);
      }
      throw new Error(`history of ${id} ${runId ?? ''} did not settle`);
    };
    /**
     * A move's times from the two runs' histories, in ms: the migrate signal until the old run's workflow task started
     * (its wait in the task queue), until the old run continued as new, and from that until the new run's first
     * workflow task started.
     */
    const moveTimes = async (id: string, oldRunId: string, newRunId: string) => {
      const old = (await temporal.workflow.getHandle(id, oldRunId).fetchHistory()).events ?? [];
      const next = (await temporal.workflow.getHandle(id, newRunId).fetchHistory()).events ?? [];
      const at = (events: typeof old, type: string, from = 0) =>
        tsToMs(events.slice(from).find((e) => eventTypeName(e.eventType) === type)?.eventTime);
      const signals = old.flatMap((e, i) => (eventTypeName(e.eventType) === 'workflow_execution_signaled' ? [i] : []));
      const signalIndex = signals.at(-1) ?? -1;
      const signaled = tsToMs(old[signalIndex]?.eventTime);
      const can = at(old, 'workflow_execution_continued_as_new');
      return {
        signalToTask: at(old, 'workflow_task_started', signalIndex) - signaled,
        signalToCan: can - signaled,
        canToNewTask: at(next, 'workflow_task_started') - can,
      };
    };
    const before = new Map<string, { runId: string; events: number }>();
    for (const id of eventSample) {
      const runId = (await temporal.workflow.getHandle(id).describe()).runId;
      before.set(id, { runId, events: await settledEvents(id, runId) });
    }
    const histories = new Map<string, { runId: string; lines: string[] }>();
    for (const id of checkSample) {
      const runId = (await temporal.workflow.getHandle(id).describe()).runId;
      histories.set(id, { runId, lines: render(await client.thread(id).history()) });
    }

    const duringRuns = new Map<string, string>();
    for (const id of duringSample) duringRuns.set(id, (await temporal.workflow.getHandle(id).describe()).runId);
    let sweeping = true;
    const answerDuring = async () => {
      const state = await Promise.all(
        duringSample.map(async (id) => ({
          id,
          moved: (await temporal.workflow.getHandle(id).describe()).runId !== duringRuns.get(id),
        })),
      );
      const chosen = [...state.filter((x) => x.moved).slice(0, 5), ...state.filter((x) => !x.moved).slice(0, 5)];
      return Promise.all(
        chosen.map(async ({ id, moved }) => {
          const t = Date.now();
          try {
            await client.sendUserText(id, `during the sweep ${id}`);
            await client.thread(id).waitForIdle({ timeoutMs: 900_000 });
            return { id, movedWhenSent: moved, answerMs: Date.now() - t, answeredDuringSweep: sweeping };
          } catch (e) {
            return { id, movedWhenSent: moved, error: e instanceof Error ? e.message : String(e) };
          }
        }),
      );
    };
    let duringProbe: ReturnType<typeof answerDuring> | undefined;

    // 3. The sweep.
    const timeline: MigrateProgress[] = [];
    let lastShown = 0;
    const cpu0 = read();
    const t0 = Date.now();
    const report = await client.migrateThreads({
      before: cutoff,
      concurrency,
      onProgress(p) {
        if (p.elapsedMs - (timeline.at(-1)?.elapsedMs ?? -1000) >= 1000) timeline.push(p);
        if (duringSample.length > 0 && !duringProbe && p.moved >= threads / 2) duringProbe = answerDuring();
        if (p.elapsedMs - lastShown >= 30_000) {
          lastShown = p.elapsedMs;
          console.error(
            `sweep: ${p.moved} moved, ${p.notMoved} not moved, ${p.closed} closed, ${(p.elapsedMs / 1000).toFixed(0)} s`,
          );
        }
      },
    });
    const sweepMs = Date.now() - t0;
    sweeping = false;
    const cpu1 = read();
    timeline.push({
      found: report.found,
      moved: report.moved,
      closed: report.closed,
      notMoved: report.notMoved,
      elapsedMs: report.elapsedMs,
    });
    const moved = report.threads.filter((t) => t.outcome === 'moved');
    // Settled: the last 50 moved threads' new runs have completed their first workflow task.
    const settle0 = Date.now();
    await Promise.all(moved.slice(-50).map((t) => settledEvents(t.threadId, t.newRunId)));
    const settledMs = sweepMs + (Date.now() - settle0);
    const cpu2 = read();
    const during = (await duringProbe) ?? [];
    const lastTimes = await Promise.all(moved.slice(-50).map((t) => moveTimes(t.threadId, t.runId, t.newRunId!)));
    const leftRunning = (await temporal.workflow.count(query)).count;

    // Events a move added, per sampled thread that moved.
    const byId = new Map(report.threads.map((t) => [t.threadId, t]));
    const tails: number[] = [];
    const fresh: number[] = [];
    const sampleTimes: Awaited<ReturnType<typeof moveTimes>>[] = [];
    let tailTypes: string[] = [];
    let priorities = { oldRun: '', newRun: '' };
    let taskQueues = { oldRunMigrateTask: '', newRunFirstTask: '' };
    let freshTypes: string[] = [];
    for (const id of eventSample) {
      const t = byId.get(id);
      if (t?.outcome !== 'moved') continue;
      const old = (await temporal.workflow.getHandle(id, before.get(id)!.runId).fetchHistory()).events ?? [];
      await settledEvents(id, t.newRunId);
      const next = (await temporal.workflow.getHandle(id, t.newRunId).fetchHistory()).events ?? [];
      tails.push(old.length - before.get(id)!.events);
      sampleTimes.push(await moveTimes(id, before.get(id)!.runId, t.newRunId!));
      fresh.push(next.length);
      if (tailTypes.length === 0) {
        // The task priority each run carries (a root thread starts at priority key 2 with its id as fairness key).
        const priorityOf = async (runId: string) =>
          JSON.stringify(
            (await temporal.workflow.getHandle(id, runId).describe()).raw.workflowExecutionInfo?.priority ?? null,
          );
        priorities = { oldRun: await priorityOf(before.get(id)!.runId), newRun: await priorityOf(t.newRunId!) };
        tailTypes = old.slice(before.get(id)!.events).map((e) => eventTypeName(e.eventType));
        freshTypes = next.map((e) => eventTypeName(e.eventType));
        // Which queue each run's workflow task was scheduled on: the worker's sticky queue or the task queue.
        const queueOf = (events: typeof old) =>
          events
            .filter((e) => e.workflowTaskScheduledEventAttributes)
            .map((e) => {
              const q = e.workflowTaskScheduledEventAttributes!.taskQueue;
              return q?.kind === 2 || String(q?.kind) === 'TASK_QUEUE_KIND_STICKY' ? 'sticky' : 'normal';
            })
            .at(-1) ?? '';
        taskQueues = { oldRunMigrateTask: queueOf(old), newRunFirstTask: queueOf(next) };
      }
    }

    // 4. Moved threads still answer, with their history intact.
    const checks = await Promise.all(
      checkSample.map(async (id) => {
        const was = histories.get(id)!;
        const problems: string[] = [];
        try {
          const t = byId.get(id);
          if (t?.outcome !== 'moved') problems.push(`outcome ${t?.outcome ?? 'not listed'}`);
          const runNow = (await temporal.workflow.getHandle(id).describe()).runId;
          if (runNow === was.runId) problems.push('same run as before the sweep');
          const text = `after the move ${id}`;
          await client.sendUserText(id, text);
          await client.thread(id).waitForIdle({ timeoutMs: 120_000 });
          const lines = render(await client.thread(id).history());
          const expected = [...was.lines, `user: ${text}`, `assistant: ok: ${text}`];
          if (JSON.stringify(lines) !== JSON.stringify(expected))
            problems.push(`history ${JSON.stringify(lines)} != ${JSON.stringify(expected)}`);
          const st = await client.thread(id).status();
          if (Object.keys(st.dropped).length > 0) problems.push(`dropped ${JSON.stringify(st.dropped)}`);
        } catch (e) {
          problems.push(e instanceof Error ? e.message : String(e));
        }
        return { id, problems };
      }),
    );
    const failedChecks = checks.filter((c) => c.problems.length > 0);
    const loadEnd = loadavg();

    const notMovedReasons: Record<string, number> = {};
    for (const t of report.threads)
      if (t.outcome !== 'moved') {
        const key = `${t.outcome}: ${(t.reason ?? '').slice(0, 160)}`;
        notMovedReasons[key] = (notMovedReasons[key] ?? 0) + 1;
      }
    const timesSummary = (times: Awaited<ReturnType<typeof moveTimes>>[]) =>
      Object.fromEntries(
        (['signalToTask', 'signalToCan', 'canToNewTask'] as const).map((k) => [
          k,
          { median: median(times.map((t) => t[k])), max: Math.max(...times.map((t) => t[k])) },
        ]),
      );
    const ms = (s: number) => (s * 1000) / Math.max(1, moved.length);
    const f = (n: number, d = 1) => n.toFixed(d);
    // The sweep's rate in each quarter of the threads it moved (a rate that falls as it goes shows here).
    const quarters = [0.25, 0.5, 0.75, 1].map((q) => {
      const target = Math.ceil(moved.length * q);
      return timeline.find((p) => p.moved >= target)?.elapsedMs ?? sweepMs;
    });
    const quarterRates = quarters.map((end, i) => {
      const start = i === 0 ? 0 : quarters[i - 1]!;
      return (moved.length / 4 / Math.max(1, end - start)) * 1000;
    });
    const result = {
      startedAt,
      threads,
      concurrency,
      parkWidth,
      fairnessKey: fairnessKey ?? '<thread id>',
      nonStickyToStickyPollRatio: nonStickyRatio ? Number(nonStickyRatio) : 'default (0.2)',
      parked: threads - parkErrors.length,
      parkSeconds: parkMs / 1000,
      cutoff: cutoff.toISOString(),
      found: report.found,
      moved: report.moved,
      closed: report.closed,
      notMoved: report.notMoved,
      complete: report.complete,
      leftRunningBeforeCutoff: leftRunning,
      notMovedReasons,
      sweepSeconds: sweepMs / 1000,
      threadsPerSecond: (report.moved / sweepMs) * 1000,
      quarterRates,
      settledSeconds: settledMs / 1000,
      eventsSampled: tails.length,
      oldRunTail: {
        median: median(tails),
        mean: tails.reduce((a, b) => a + b, 0) / Math.max(1, tails.length),
        max: Math.max(...tails),
      },
      newRun: {
        median: median(fresh),
        mean: fresh.reduce((a, b) => a + b, 0) / Math.max(1, fresh.length),
        max: Math.max(...fresh),
      },
      tailTypes,
      freshTypes,
      priorities,
      taskQueues,
      // Medians (and maxima) over the sampled threads, and over the last 50 the sweep moved.
      moveMs: { sample: timesSummary(sampleTimes), last50: timesSummary(lastTimes) },
      cpuMsPerMoved: {
        serverAtReturn: ms(cpu1.server - cpu0.server),
        processAtReturn: ms(cpu1.process - cpu0.process),
        serverSettled: ms(cpu2.server - cpu0.server),
        processSettled: ms(cpu2.process - cpu0.process),
      },
      cpuCoresDuringSweep: {
        server: (cpu1.server - cpu0.server) / (sweepMs / 1000),
        process: (cpu1.process - cpu0.process) / (sweepMs / 1000),
      },
      during,
      checked: checks.length,
      checkFailures: failedChecks,
      loadStart,
      loadEnd,
      timeline: timeline.map((p) => ({
        s: p.elapsedMs / 1000,
        moved: p.moved,
        notMoved: p.notMoved,
        closed: p.closed,
      })),
    };
    const table = [
      '| threads | C | park s | found | moved | not moved | closed | sweep s | threads/s (by quarter) | events per moved thread (old tail + new run) | server CPU ms / moved (settled) | worker+client CPU ms / moved (settled) | history check |',
      '|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
      `| ${threads} | ${concurrency} | ${f(parkMs / 1000)} | ${report.found} | ${report.moved} | ${report.notMoved} | ${report.closed} | ${f(sweepMs / 1000)} | ${f(result.threadsPerSecond)} (${quarterRates.map((r) => f(r)).join(', ')}) | ${f(result.oldRunTail.mean)} + ${f(result.newRun.mean)} | ${f(result.cpuMsPerMoved.serverAtReturn)} (${f(result.cpuMsPerMoved.serverSettled)}) | ${f(result.cpuMsPerMoved.processAtReturn)} (${f(result.cpuMsPerMoved.processSettled)}) | ${checks.length - failedChecks.length}/${checks.length} |`,
    ].join('\n');
    console.log(table);
    console.log(`old run tail: ${tailTypes.join(', ')}`);
    console.log(`new run: ${freshTypes.join(', ')}`);
    console.log(`task priority: old run ${priorities.oldRun}, new run ${priorities.newRun}`);
    console.log(
      `workflow task queue: old run's migrate task ${taskQueues.oldRunMigrateTask}, new run's first task ${taskQueues.newRunFirstTask}`,
    );
    console.log(
      `settled ${f(settledMs / 1000)} s; CPU during the sweep: server ${f(result.cpuCoresDuringSweep.server, 2)} cores, ` +
        `worker+client ${f(result.cpuCoresDuringSweep.process, 2)} cores; still running before the cutoff: ${leftRunning}; complete: ${report.complete}`,
    );
    const showTimes = (name: string, x: ReturnType<typeof timesSummary>) =>
      console.log(
        `${name}: migrate signal → old run's task started ${f(x.signalToTask!.median, 0)} ms (max ${f(x.signalToTask!.max, 0)}), ` +
          `→ continued as new ${f(x.signalToCan!.median, 0)} ms (max ${f(x.signalToCan!.max, 0)}); ` +
          `continued as new → new run's first task started ${f(x.canToNewTask!.median, 0)} ms (max ${f(x.canToNewTask!.max, 0)})`,
      );
    showTimes('sampled threads (medians)', result.moveMs.sample);
    showTimes('last 50 moved (medians)', result.moveMs.last50);
    for (const d of during)
      console.log(
        `user text halfway through the sweep to a thread ${d.movedWhenSent ? 'already moved' : 'not yet moved'}: ` +
          ('error' in d
            ? `error ${d.error}`
            : `answered in ${d.answerMs} ms${d.answeredDuringSweep ? '' : ' (after the sweep ended)'}`),
      );
    if (Object.keys(notMovedReasons).length > 0) console.log('not moved:', notMovedReasons);
    if (failedChecks.length > 0) console.log('history check failures:', JSON.stringify(failedChecks, null, 1));
    console.log(
      `load ${loadStart.map((l) => f(l, 2)).join(' ')} at start, ${loadEnd.map((l) => f(l, 2)).join(' ')} at end`,
    );
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const file = join(
      __dirname,
      '..',
      'results',
      `migrate-sweep-${threads}-c${concurrency}${fairnessKey ? '-fk' : ''}${nonStickyRatio ? `-ns${nonStickyRatio}` : ''}-${stamp}.json`,
    );
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`wrote ${file}`);
  } finally {
    await worker.shutdown();
    await running.catch(() => undefined);
    await connection.close();
    await store.close();
    await server.stop();
  }
}

runMain(main);
