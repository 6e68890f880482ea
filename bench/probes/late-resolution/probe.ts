/**
 * The late-resolution probe's body (decisions 79–81), self-contained: it imports nothing but `@temporalio/*`, Node's
 * built-ins and `./workflow`, so that a copy of this folder placed beside another SDK's node_modules runs on that SDK
 * (`scripts/sdk-newest.ts`). It needs a running server: `bench/probes/late-resolution.ts` starts one and calls
 * {@link runProbe}; run as a program it takes the server's address.
 *
 * `npx tsx bench/probes/late-resolution/probe.ts --address HOST:PORT [workflows=20] [iterations=10] [query|noquery]
 *   [fail|ok] [update] [nopatch] [--histories DIR [--temporal-cli PATH]]`
 *
 * `nopatch`: the workflow asks no patch, so only an accepted update (with `update`) can meet the late result.
 *
 * Prints one JSON line: the SDK version that ran (read from the `@temporalio/worker` this file resolved), and per run:
 * - `lateResults`: local activity markers whose task recorded no timer after them. The workflow starts a timer right
 *   after each result, so a task that records the marker without the timer completed before the workflow saw the
 *   result, and the result came in the next task.
 * - `patchesATaskLate`: patch markers recorded in a later task than the local activity marker before them.
 * - `notReplayed`: histories that fail `Worker.runReplayHistory` against the same bundle, by what the replay met.
 * With `--histories DIR`, every history is written there as JSON by `temporal workflow show --output json` (the CLI
 * at `--temporal-cli`, else `temporal` on PATH: the SDKs' own `historyToJSON` fails on 1.22.0's histories, and on
 * 1.24.0's where protobufjs is not deduplicated), and the replay's error beside each one that failed
 * (`<workflow id>.error.txt`).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';

export interface ProbeOptions {
  /** `host:port` of a Temporal server's frontend. */
  address: string;
  workflows: number;
  iterations: number;
  /** Query each workflow without pause while it runs. */
  query: boolean;
  /** The local activity fails (non-retryable) rather than returns. */
  fail: boolean;
  /** Also send updates without pause while the workflows run (decision 80). */
  updates: boolean;
  /** The workflow asks a patch after each local activity (the default). */
  patch: boolean;
  /** Where to write the histories, and the replay errors of those that fail to replay. */
  historiesDir?: string;
  /** The Temporal CLI that writes the histories. @default `temporal` on PATH */
  temporalCli?: string;
}

export interface ProbeResult {
  /** `@temporalio/worker`'s version as this file resolved it. */
  sdk: string;
  /** The versions of the SDK's packages that ran: the worker, the workflow library bundled, the client, the core. */
  packages: Record<string, string>;
  workflows: number;
  iterations: number;
  query: boolean;
  fail: boolean;
  updates: boolean;
  patch: boolean;
  lateResults: number;
  patchesATaskLate: number;
  notReplayed: number;
  /** Histories that failed to replay, by what the replay met: a patch marker, an accepted update, or other. */
  errors: Record<string, number>;
  /** The first replay failure's message (its first 400 characters). */
  firstError?: string;
}

type Event = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;
const is = (e: Event, t: temporal.api.enums.v1.EventType) => e.eventType === t;

/** The version of `@temporalio/<name>` as this file resolves it (`from`: as that file does). */
function packageVersion(name: string, from?: string): string {
  const path = require.resolve(`@temporalio/${name}/package.json`, from ? { paths: [from] } : undefined);
  return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
}

/** The SDK version of the worker package this file resolves (the other SDK's, in a copy beside its node_modules). */
export const sdkVersion = (): string => packageVersion('worker');

/** The versions of the SDK's packages this file resolves; the core bridge as the worker resolves it. */
export function sdkPackages(): Record<string, string> {
  const worker = dirname(require.resolve('@temporalio/worker/package.json'));
  return {
    worker: packageVersion('worker'),
    workflow: packageVersion('workflow'),
    client: packageVersion('client'),
    'core-bridge': packageVersion('core-bridge', worker),
  };
}

/** Local activity markers whose task recorded no timer: the workflow saw their result only in the next task. */
export function lateResults(events: Event[]): number {
  let late = 0;
  events.forEach((e, i) => {
    if (e.markerRecordedEventAttributes?.markerName !== 'core_local_activity') return;
    const rest = events.slice(i + 1);
    const next = rest.findIndex((n) => is(n, EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED));
    const sameTask = rest.slice(0, next === -1 ? undefined : next);
    if (!sameTask.some((n) => is(n, EventType.EVENT_TYPE_TIMER_STARTED))) late++;
  });
  return late;
}

/** Patch markers recorded in a later workflow task than the local activity marker before them. */
export function patchesATaskLate(events: Event[]): number {
  let late = 0;
  let task = 0;
  let localActivityTask = -1;
  for (const e of events) {
    if (e.workflowTaskCompletedEventAttributes) task = Number(e.eventId);
    const marker = e.markerRecordedEventAttributes?.markerName;
    if (marker === 'core_local_activity') localActivityTask = task;
    if (marker === 'core_patch' && localActivityTask !== task) late++;
    if (marker === 'core_patch') localActivityTask = task;
  }
  return late;
}

export async function runProbe(o: ProbeOptions): Promise<ProbeResult> {
  const taskQueue = `late-resolution-${process.pid}-${Date.now()}`;
  const bundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('./workflow'),
    logger: new DefaultLogger('ERROR'),
  });
  const connection = await NativeConnection.connect({ address: o.address });
  const clientConnection = await Connection.connect({ address: o.address });
  try {
    const worker = await Worker.create({
      connection,
      taskQueue,
      workflowBundle: bundle,
      activities: {
        quick: async (refuse: boolean) => {
          if (refuse) throw ApplicationFailure.nonRetryable('no capacity', 'Throttled');
          return 1;
        },
      },
    });
    const running = worker.run();
    const client = new Client({ connection: clientConnection });
    const handles = await Promise.all(
      Array.from({ length: o.workflows }, (_, i) =>
        client.workflow.start('patchAfterLocalActivity', {
          taskQueue,
          workflowId: `late-${i}-${Date.now()}`,
          args: [o.iterations, o.fail, o.patch],
        }),
      ),
    );
    let querying = true;
    const queries = Promise.all(
      handles.flatMap((h) => [
        (async () => {
          while (o.query && querying) await h.query('patches').catch(() => undefined);
        })(),
        (async () => {
          while (o.updates && querying) await h.executeUpdate('ping').catch(() => undefined);
        })(),
      ]),
    );
    await Promise.all(handles.map((h) => h.result()));
    querying = false;
    await queries;
    worker.shutdown();
    await running;
    const result: ProbeResult = {
      sdk: sdkVersion(),
      packages: sdkPackages(),
      workflows: o.workflows,
      iterations: o.iterations,
      query: o.query,
      fail: o.fail,
      updates: o.updates,
      patch: o.patch,
      lateResults: 0,
      patchesATaskLate: 0,
      notReplayed: 0,
      errors: {},
    };
    if (o.historiesDir) mkdirSync(o.historiesDir, { recursive: true });
    for (const h of handles) {
      const history = await h.fetchHistory();
      const events = history.events ?? [];
      result.lateResults += lateResults(events);
      result.patchesATaskLate += patchesATaskLate(events);
      if (o.historiesDir) {
        const show = ['workflow', 'show', '--workflow-id', h.workflowId, '--address', o.address, '--output', 'json'];
        const json = execFileSync(o.temporalCli ?? 'temporal', show, { encoding: 'utf8', maxBuffer: 64 << 20 });
        writeFileSync(join(o.historiesDir, `${h.workflowId}.json`), json);
      }
      await Worker.runReplayHistory({ workflowBundle: bundle, replayName: h.workflowId }, history).catch(
        (e: unknown) => {
          result.notReplayed++;
          // What the replay met: a patch marker, or an accepted update where another command was expected.
          const kind = /patch marker|UpdateAccepted/.exec(String(e))?.[0] ?? 'other';
          result.errors[kind] = (result.errors[kind] ?? 0) + 1;
          result.firstError ??= String(e).slice(0, 400);
          if (o.historiesDir) writeFileSync(join(o.historiesDir, `${h.workflowId}.error.txt`), `${String(e)}\n`);
        },
      );
    }
    return result;
  } finally {
    await clientConnection.close();
    await connection.close();
  }
}

/** The program's arguments: `--address HOST:PORT [workflows] [iterations] [query|noquery] [fail|ok] [update] ...` */
export function parseArgs(argv: string[]): ProbeOptions {
  const flag = (name: string) => {
    const i = argv.indexOf(name);
    if (i === -1) return undefined;
    const [value] = argv.splice(i, 2).slice(1);
    if (value === undefined) throw new Error(`${name} needs a value`);
    return value;
  };
  const address = flag('--address');
  const historiesDir = flag('--histories');
  const temporalCli = flag('--temporal-cli');
  if (!address) throw new Error('--address HOST:PORT is required');
  return {
    address,
    workflows: Number(argv[0] ?? 20),
    iterations: Number(argv[1] ?? 10),
    query: !argv.includes('noquery'),
    fail: !argv.includes('ok'),
    updates: argv.includes('update'),
    patch: !argv.includes('nopatch'),
    ...(historiesDir && { historiesDir }),
    ...(temporalCli && { temporalCli }),
  };
}

if (require.main === module) {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  runProbe(parseArgs(process.argv.slice(2))).then(
    (r) => {
      console.log(JSON.stringify(r));
      process.exit(0);
    },
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
