/**
 * OpenTelemetry traces end to end (issue 16 §4): a worker and client traced through Temporal's interceptors export
 * over OTLP/HTTP (the real exporter) to a collector on loopback; a spawn → report turn and a RAP round trip each read
 * as one trace. Then the replay gate with the tracing interceptors bundled, both ways, and its negative control.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SLICE_ATTRIBUTES as A } from '../src/activities/slice-tracing';
import { AgentClient } from '../src/client/agent-client';
import { ScriptedModel } from '../src/model/scripted';
import { startRapGateway, type RapGateway } from '../src/rap/gateway';
import { CallbackTokens, newCallbackKey } from '../src/rap/tokens';
import { loadRapToolsets } from '../src/rap/toolsets';
import { SqliteConversationStore } from '../src/store/sqlite';
import { installTracing, type Tracing } from '../src/tracing/install';
import { tracingClientInterceptors, tracingWorkerOptions, tracingWorkflowModules } from '../src/tracing/interceptors';
import { type AgentWorker, createAgentWorker, threadWorkflowsPath } from '../src/worker/create-worker';
import { type CollectedSpan, type Collector, startCollector, Trace } from './fixtures/otlp-collector';
import { treeScript } from './fixtures/tree-script';
import { eventually, FAST_POLICY, render, uid } from './helpers';
import { manifestRoute, type RecordedRequest, startPeer } from './rap/fixture';
import { cliRunner } from './cli-process';
import { recordedHistories } from './recorded';

let collector: Collector;
let tracing: Tracing;
let tracedBundle: string;
let connection: NativeConnection;
let store: SqliteConversationStore;
let worker: AgentWorker;
let client: AgentClient;
let gateway: RapGateway;
let peer: Awaited<ReturnType<typeof startPeer>>;
let taskQueue: string;

/** A tool server that acknowledges, then answers on the callback URL with no trace header of its own. */
function ciServer(req: RecordedRequest, res: import('node:http').ServerResponse) {
  res.end('OK');
  if (req.path !== '/invoke') return; // lifecycle notices (/close_thread, /cancel_tool_call)
  const call = JSON.parse(req.body) as { callback_url: string; group_id: string; id: string };
  void fetch(call.callback_url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'tool_result', group_id: call.group_id, id: call.id, text: 'build green' }),
  });
}

beforeAll(async () => {
  collector = await startCollector();
  tracing = installTracing({ endpoint: `${collector.url}/v1/traces`, serviceName: 'tracing-test' });
  // A prebuilt bundle, as deployments use: the tracing workflow module must be bundled in.
  tracedBundle = (
    await bundleWorkflowCode({
      workflowsPath: threadWorkflowsPath(),
      workflowInterceptorModules: tracingWorkflowModules(),
      logger: new DefaultLogger('WARN'),
    })
  ).code;
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  store = new SqliteConversationStore(join(inject('scratchDir'), `store-${randomUUID()}.sqlite`));
  taskQueue = `test-${randomUUID()}`;
  client = new AgentClient({
    client: new Client({ connection, interceptors: tracingClientInterceptors() }),
    taskQueue,
    store,
  });
  gateway = await startRapGateway({
    tokens: new CallbackTokens({ current: 'k1', keys: { k1: newCallbackKey() } }),
    deliver: (m) => client.deliver(m),
  });
  peer = await startPeer(
    manifestRoute(
      (url) => ({
        name: 'ci',
        endpoint: `${url}/invoke`,
        tools: [{ name: 'run_build', description: 'Runs a CI build', inputSchema: { type: 'object' } }],
      }),
      ciServer,
    ),
  );
  const rap = await loadRapToolsets({ servers: [{ url: peer.url }], gateway });
  expect(rap.errors).toEqual([]);
  worker = await createAgentWorker({
    connection,
    taskQueue,
    store,
    model: new ScriptedModel(treeScript),
    tools: rap.tools,
    toolLifecycle: [rap],
    completionPolicy: FAST_POLICY,
    workflowBundle: { code: tracedBundle },
    tracing: tracing.options,
  });
  void worker.run();
}, 120_000);

afterAll(async () => {
  await worker?.shutdown();
  await gateway?.close();
  await peer?.close();
  await connection?.close();
  await store?.close();
  await collector?.close();
});

const slicesOf = (threadId: string) =>
  collector.spans.filter((s) => s.name.startsWith('Slice:') && s.attributes[A.threadId] === threadId);

/** Flushes until every slice the threads ran has its span at the collector (and `more` holds). */
async function exported(
  threads: { threadId: string; slices: number }[],
  more: () => boolean = () => true,
): Promise<void> {
  await eventually(
    async () => {
      await tracing.flush();
      return (
        threads.every((t) => new Set(slicesOf(t.threadId).map((s) => s.attributes[A.sliceId])).size >= t.slices) &&
        more()
      );
    },
    30_000,
    'the spans of every slice',
  );
}

/** One line per span: its name and what says which thread, slice and outcome it is. */
function label(names: Record<string, string>) {
  const named = (v: unknown) => names[String(v)] ?? String(v);
  return (s: CollectedSpan) => {
    const a = s.attributes;
    if (s.name.startsWith('Slice:')) {
      const facts = [
        named(a[A.threadId]),
        a[A.outcome],
        a[A.tool] && `tool=${String(a[A.tool])}`,
        a[A.action] && `action=${String(a[A.action])}`,
        `tokens=${String(a[A.tokensInput])}/${String(a[A.tokensOutput])}`,
      ];
      return `${s.name} [${facts.filter(Boolean).join(' ')}]`;
    }
    const wf = a.temporalWorkflowId ?? a.workflowId ?? a['infinity.thread_id'];
    return wf ? `${s.name} (${named(wf)})` : s.name;
  };
}

describe('traces', () => {
  it("reads a spawn → report turn as one trace, from the client span down to the report's slice", async () => {
    const root = client.thread(uid('traced'));
    await root.sendUserText('spawn report:A done');
    // The child reports, then closes: both reach the root's history.
    await eventually(
      async () => (await root.history()).filter((i) => i.kind === 'subscription_event').length === 2,
      60_000,
      'report and shutdown',
    );
    const rootStatus = await root.waitForIdle({ settled: true });
    const childId = rootStatus.children[0]!;
    const childStatus = await client.thread(childId).status();
    const childRun = () =>
      collector.spans.some((s) => s.name === 'RunWorkflow:agentThread' && s.attributes.workflowId === childId);
    await exported(
      [
        { threadId: root.threadId, slices: rootStatus.slices },
        { threadId: childId, slices: childStatus.slices },
      ],
      childRun,
    );

    const traceId = slicesOf(root.threadId)[0]!.traceId;
    const t = new Trace(collector.spans, traceId);
    console.log(`span tree of one turn:\n${t.render(label({ [root.threadId]: 'root', [childId]: 'child' }))}`);

    // Every slice of both threads is in this one trace, whose only root is the client's call.
    for (const s of [...slicesOf(root.threadId), ...slicesOf(childId)]) expect(s.traceId).toBe(traceId);
    expect(t.roots().map((s) => s.name)).toEqual(['SignalWithStartWorkflow:agentThread']);
    expect(t.roots()[0]!.attributes.temporalWorkflowId).toBe(root.threadId);
    expect(new Set(t.spans.map((s) => s.service))).toEqual(new Set(['tracing-test']));

    // Each slice hangs under its activity's span, which hangs under the workflow's scheduling span.
    for (const s of t.spans.filter((x) => x.name.startsWith('Slice:'))) {
      expect(t.parent(s)?.name).toMatch(/^RunActivity:(runSliceLocal|runSlice|adoptSlice)$/);
      expect(t.parent(t.parent(s)!)?.name).toMatch(/^StartActivity:/);
      expect(s.attributes).toMatchObject({ [A.model]: 'scripted', [A.tokensInput]: 10, [A.tokensOutput]: 10 });
      expect(s.attributes[A.sliceId]).toEqual(expect.any(String));
    }
    const [spawnSlice] = slicesOf(root.threadId);
    expect(spawnSlice!.attributes).toMatchObject({
      [A.threadKind]: 'root',
      [A.outcome]: 'committed',
      [A.tool]: 'spawn_thread',
      [A.action]: 'spawn',
    });
    // The user's signal is the turn: the first slice descends from its HandleSignal span.
    expect(t.ancestors(spawnSlice!).map((s) => s.name)).toContainEqual(expect.stringMatching(/^HandleSignal:/));

    // The child's run hangs under the parent's StartChildWorkflow; its slices under its run.
    const childRunSpan = t.spans.find(
      (s) => s.name === 'RunWorkflow:agentThread' && s.attributes.workflowId === childId,
    )!;
    expect(childRunSpan).toBeDefined();
    expect(t.parent(childRunSpan)?.name).toBe('StartChildWorkflow:agentThread');
    expect(t.parent(childRunSpan)?.attributes.workflowId).toBe(root.threadId);
    const childSlices = slicesOf(childId);
    for (const s of childSlices) expect(t.ancestors(s)).toContain(childRunSpan);
    expect(
      childSlices.map((s) => [
        s.attributes[A.threadKind],
        s.attributes[A.tool],
        s.attributes[A.action],
        s.attributes[A.outcome],
      ]),
    ).toEqual([
      ['child', 'report_to_parent', 'report', 'committed'],
      ['child', 'close_thread', 'close', 'committed'],
    ]);

    // The report comes back as the child's signal: the root's slice that reads it descends from the child's run.
    const fromChild = slicesOf(root.threadId).filter((s) => t.ancestors(s).includes(childRunSpan));
    expect(fromChild.length).toBeGreaterThan(0);
    expect(t.ancestors(fromChild[0]!).map((s) => s.name)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^HandleSignal:/), expect.stringMatching(/^SignalWorkflow:/)]),
    );
  });

  it("carries a RAP dispatch's trace through the callback URL into the slice that reads the result", async () => {
    const root = client.thread(uid('traced-rap'));
    await root.sendUserText('call run_build {"ref":"main"}');
    await eventually(
      async () => render(await root.history()).includes('assistant: ok: build green'),
      30_000,
      'the result read',
    );
    const status = await root.waitForIdle({ settled: true });
    await exported([{ threadId: root.threadId, slices: status.slices }], () =>
      collector.spans.some(
        (s) => s.name === 'RapCallback:tool_result' && s.attributes['infinity.thread_id'] === root.threadId,
      ),
    );

    const dispatch = slicesOf(root.threadId).find((s) => s.attributes[A.tool] === 'run_build')!;
    expect(dispatch.attributes[A.outcome]).toBe('committed');
    const t = new Trace(collector.spans, dispatch.traceId);
    console.log(`span tree of a RAP round trip:\n${t.render(label({ [root.threadId]: 'root' }))}`);
    expect(t.roots().map((s) => s.name)).toEqual(['SignalWithStartWorkflow:agentThread']);

    // The dispatch request names the slice's span; the tool server sent nothing back but the callback URL.
    const invoke = peer.requests.find((r) => r.method === 'POST' && r.path === '/invoke')!;
    expect(invoke.headers.traceparent).toBe(`00-${dispatch.traceId}-${dispatch.spanId}-01`);
    const callback = t.spans.find((s) => s.name === 'RapCallback:tool_result')!;
    expect(callback).toBeDefined();
    expect(t.parent(callback)).toBe(dispatch);
    expect(callback.attributes).toMatchObject({
      'infinity.thread_id': root.threadId,
      'rap.callback_type': 'tool_result',
    });

    // The result's signal continues the trace: the next slice descends from the gateway's span.
    const next = slicesOf(root.threadId).filter((s) => s !== dispatch && t.ancestors(s).includes(callback));
    expect(next).toHaveLength(1);
    expect(next[0]!.traceId).toBe(dispatch.traceId);
    expect(t.ancestors(next[0]!).map((s) => s.name)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^HandleSignal:/),
        expect.stringMatching(/^SignalWorkflow:/),
        'RapCallback:tool_result',
      ]),
    );
    expect(next[0]!.attributes[A.outcome]).toBe('committed');
    expect(next[0]!.attributes[A.tool]).toBeUndefined();
    expect(collector.rejected).toEqual([]);
  });

  it("starts the turn's trace in another process: the CLI traced by the OTEL_* variables alone", async () => {
    const threadId = uid('traced-cli');
    const cli = cliRunner(() => ['--address', inject('temporalAddress'), '--task-queue', taskQueue], {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_SERVICE_NAME: 'cli-test',
    });
    const sent = await cli.run('send', threadId, 'hello from a shell');
    expect(sent.stderr).toBe('');
    expect(sent.code).toBe(0);
    const status = await client.thread(threadId).waitForIdle();
    await exported([{ threadId, slices: status.slices }]);
    const t = new Trace(collector.spans, slicesOf(threadId)[0]!.traceId);
    // The command exported its span before it exited; the worker's spans continue its trace.
    expect(t.roots().map((s) => [s.name, s.service])).toEqual([['SignalWithStartWorkflow:agentThread', 'cli-test']]);
    expect(slicesOf(threadId).every((s) => s.service === 'tracing-test' && s.traceId === t.traceId)).toBe(true);
  });
});

const recorded = recordedHistories(true);

/** Replays `histories` against `code` in one replay worker; the names of those that failed, with the error's name. */
async function replayAll(
  code: string,
  histories: { name: string; history: unknown; workflowId: string }[],
): Promise<string[]> {
  const names = new Map(histories.map((h) => [h.workflowId, h.name]));
  expect(names.size).toBe(histories.length); // results come back by workflow id
  const failed: string[] = [];
  const options = {
    workflowBundle: { code },
    replayName: 'tracing',
    sinks: tracingWorkerOptions(tracing, false).sinks,
  };
  for await (const result of Worker.runReplayHistories(
    options,
    histories.map(({ workflowId, history }) => ({ workflowId, history })),
  )) {
    if (result.error) failed.push(`${names.get(result.workflowId)}: ${result.error.name}`);
  }
  return failed.sort();
}

describe('replay with tracing', () => {
  it('replays the recorded histories of every release in the window with the tracing interceptors bundled', async () => {
    // A sample of each release's set in `npm test`, every history in the soak tier (test/recorded.ts).
    expect(new Set(recorded.map((h) => h.name.split('/')[0]))).toEqual(new Set(['v0.11', 'v0.12']));
    expect(await replayAll(tracedBundle, recorded)).toEqual([]);
  }, 300_000);

  it("replays a traced thread's history with tracing and without it", async () => {
    const root = client.thread(uid('traced-replay'));
    await root.sendUserText('spawn report:B done');
    await eventually(
      async () => (await root.history()).filter((i) => i.kind === 'subscription_event').length === 2,
      60_000,
      'report and shutdown',
    );
    const { children } = await root.waitForIdle({ settled: true });
    const histories = await Promise.all(
      [root.threadId, children[0]!].map(async (id) => ({
        name: id,
        workflowId: id,
        history: await client.thread(id).workflow.fetchHistory(),
      })),
    );
    // The traced run's headers are in its history; the untraced bundle ignores them, the traced one reads them.
    expect(JSON.stringify(histories[0]!.history)).toContain('_tracer-data');
    const untraced = readFileSync(inject('workflowBundlePath'), 'utf8');
    expect(await replayAll(untraced, histories)).toEqual([]);
    expect(await replayAll(tracedBundle, histories)).toEqual([]);
  });

  /**
   * The negative control: Temporal's interceptors as they come draw span ids from the workflow's own random stream, so
   * a thread picks other child ids with tracing than without, and spawn histories recorded without it do not replay.
   */
  it("catches interceptors that draw span ids from the workflow's random stream", async () => {
    const plain = (
      await bundleWorkflowCode({
        workflowsPath: threadWorkflowsPath(),
        workflowInterceptorModules: [
          require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
        ],
        logger: new DefaultLogger('WARN'),
      })
    ).code;
    // Every recorded history that spawns a child (the control names one), not only the sample.
    const spawns = recordedHistories(false).filter((h) =>
      JSON.stringify(h.history).includes('startChildWorkflowExecutionInitiatedEventAttributes'),
    );
    expect(spawns.length).toBeGreaterThan(0);
    const failed = await replayAll(plain, spawns);
    expect(failed).toContain('v0.12/tree-three-children.json: DeterminismViolationError');
    // With the workflow's stream kept apart, the same histories replay.
    expect(await replayAll(tracedBundle, spawns)).toEqual([]);
  }, 120_000);
});
