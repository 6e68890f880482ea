/**
 * Prometheus metrics from a worker process (`worker --metrics-port`): threads run against it, then one scrape of
 * `/metrics` must count exactly what happened — slices, their durations, tokens, tool calls, inputs accepted and
 * dropped — beside Temporal's own metrics.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { type AddressInfo, createServer } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { AgentClient } from '../src/client/agent-client';
import { METRICS } from '../src/core/metric-names';
import { inputSignal } from '../src/workflows/definitions';
import { cliRunner, waitForLine } from './cli-process';
import { eventually } from './helpers';
import { sample } from './metric-sample';

const taskQueue = `metrics-${randomUUID()}`;
const store = join(inject('scratchDir'), `metrics-${randomUUID()}.sqlite`);
let worker: ChildProcess;
let metricsUrl = '';
let client: AgentClient;
let connection: Connection;
/** The scrape of the first test. */
let scraped = '';

beforeAll(async () => {
  const port = await new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
  const runner = cliRunner(
    () => ['--address', inject('temporalAddress'), '--task-queue', taskQueue, '--store', store],
    { INFINITY_SIMULATED_DELAY_MS: '5' },
  );
  worker = runner.start([
    'worker',
    '--model',
    'simulated',
    '--no-events',
    '--metrics-port',
    String(port),
    '--tools',
    join(__dirname, 'fixtures', 'cli-tools.ts'),
  ]);
  metricsUrl = await waitForLine(worker, /^metrics (\S+)$/);
  connection = await Connection.connect({ address: inject('temporalAddress') });
  client = new AgentClient({ client: new Client({ connection }), taskQueue });
}, 60_000);

afterAll(async () => {
  worker?.kill('SIGTERM');
  await new Promise((r) => worker?.once('close', r));
  await connection?.close();
});

it('counts slices, durations, tokens, tool calls and inputs exactly', async () => {
  const threads = Array.from({ length: 4 }, (_, i) => `metrics-${i}-${randomUUID().slice(0, 6)}`);
  // One turn each: user text → completion calling the demo tool → its result (300 ms later) → completion.
  await Promise.all(threads.map((id) => client.sendUserText(id, `Is build ${id.length} green?`)));
  const statuses = await Promise.all(
    threads.map((id) =>
      eventually(async () => {
        const s = await client.thread(id).waitForIdle({ settled: true });
        return s.slices === 2 ? s : undefined;
      }),
    ),
  );
  // A raw signal that is not an input: dropped and counted.
  await client.temporal.workflow.getHandle(threads[0]!).signal(inputSignal, { text: 'not an input' });
  await eventually(async () => (await client.thread(threads[0]!).status()).dropped.malformed === 1 || undefined);

  const outTokens = statuses.reduce((n, s) => n + (s.usage?.outputTokens ?? 0), 0);
  const inTokens = statuses.reduce((n, s) => n + (s.usage?.inputTokens ?? 0), 0);
  // The exporter reads the runtime's meter when scraped; workflow metrics arrive with their activations.
  const text = await eventually(async () => {
    const t = await (await fetch(metricsUrl)).text();
    return sample(t, 'infinity_inputs_dropped_total', { reason: 'malformed' }) === 1 ? t : undefined;
  });
  expect(sample(text, 'infinity_slices_started_total', { kind: 'root' })).toBe(8);
  expect(sample(text, 'infinity_slices_committed_total', { kind: 'root' })).toBe(8);
  expect(sample(text, 'infinity_slices_failed_total')).toBe(0);
  expect(sample(text, 'infinity_slice_duration_count', { kind: 'root' })).toBe(8);
  expect(sample(text, 'infinity_slice_duration_sum', { kind: 'root' })).toBeGreaterThan(0);
  expect(sample(text, 'infinity_tokens_total', { direction: 'in' })).toBe(inTokens);
  expect(sample(text, 'infinity_tokens_total', { direction: 'out' })).toBe(outTokens);
  expect(sample(text, 'infinity_tool_calls_total', { kind: 'async' })).toBe(4);
  expect(sample(text, 'infinity_inputs_accepted_total')).toBe(8);
  expect(sample(text, 'infinity_inputs_dropped_total')).toBe(1);
  // Temporal's own metrics come from the same endpoint.
  expect(text).toMatch(/^temporal_\w+/m);
  scraped = text;
}, 120_000);

it('has a Grafana dashboard whose every query names a metric the runtime defines or this scrape holds', () => {
  const dashboard = JSON.parse(readFileSync(join(__dirname, '..', 'docs', 'grafana-dashboard.json'), 'utf8')) as {
    panels: { targets: { expr: string }[] }[];
  };
  const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr));
  expect(exprs.length).toBeGreaterThan(0);
  const ours = new Set<string>(Object.values(METRICS).map((m) => m.name));
  const names = new Set(exprs.flatMap((e) => [...e.matchAll(/\b((?:infinity|temporal)_\w+)/g)].map((m) => m[1]!)));
  for (const name of names) {
    const base = name.replace(/_(total|bucket|count|sum)$/, '');
    if (name.startsWith('infinity_')) expect(ours.has(name) || ours.has(base), name).toBe(true);
    // Temporal's metrics are checked against the scrape of the test above, where the worker has run tasks.
    else expect(new RegExp(`^${name}[{ ]`, 'm').test(scraped), name).toBe(true);
  }
});
