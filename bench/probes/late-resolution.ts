/**
 * Decision 79's SDK behaviour, on its own: Temporal's TypeScript SDK (1.24) delivers a local activity's result a
 * workflow task late when a query arrives while the local activity runs, and a `patched()` first asked after that
 * result does not replay (TMPRL1100). Worth reporting upstream with this probe.
 *
 * `npx tsx bench/probes/late-resolution.ts [workflows=20] [iterations=10] [query|noquery] [fail|ok] [update]`
 *
 * Prints, for the run: patch markers recorded a task after the local activity's marker, and histories that fail to
 * replay against the same code. With `update`, the client also sends updates without pause while the workflows run:
 * an update accepted in the late task comes before the commands that follow the result live, and after them on replay
 * (decision 80), so histories fail to replay even where no patch is asked late.
 */
import { ApplicationFailure } from '@temporalio/common';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { startDevServer } from '../../src/devserver/server';
import { runMain } from '../lib/main';

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const workflows = Number(process.argv[2] ?? 20);
  const iterations = Number(process.argv[3] ?? 10);
  const query = process.argv[4] !== 'noquery';
  const fail = process.argv[5] !== 'ok';
  const updates = process.argv[6] === 'update';
  const server = await startDevServer({ ui: false });
  try {
    const bundle = await bundleWorkflowCode({
      workflowsPath: require.resolve('./late-resolution/workflow'),
      logger: new DefaultLogger('ERROR'),
    });
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await Worker.create({
      connection,
      taskQueue: 'late-resolution',
      workflowBundle: bundle,
      activities: {
        quick: async (refuse: boolean) => {
          if (refuse) throw ApplicationFailure.nonRetryable('no capacity', 'Throttled');
          return 1;
        },
      },
    });
    const running = worker.run();
    const client = new Client({ connection: await Connection.connect({ address: server.address }) });
    const handles = await Promise.all(
      Array.from({ length: workflows }, (_, i) =>
        client.workflow.start('patchAfterLocalActivity', {
          taskQueue: 'late-resolution',
          workflowId: `late-${i}-${Date.now()}`,
          args: [iterations, fail],
        }),
      ),
    );
    let querying = true;
    const queries = Promise.all(
      handles.flatMap((h) => [
        (async () => {
          while (query && querying) await h.query('patches').catch(() => undefined);
        })(),
        (async () => {
          while (updates && querying) await h.executeUpdate('ping').catch(() => undefined);
        })(),
      ]),
    );
    await Promise.all(handles.map((h) => h.result()));
    querying = false;
    await queries;
    worker.shutdown();
    await running;
    let patchesATaskLate = 0;
    let notReplayed = 0;
    const errors: Record<string, number> = {};
    for (const h of handles) {
      const history = await h.fetchHistory();
      let task = 0;
      let localActivityTask = -1;
      for (const e of history.events ?? []) {
        if (e.workflowTaskCompletedEventAttributes) task = Number(e.eventId);
        const marker = e.markerRecordedEventAttributes?.markerName;
        if (marker === 'core_local_activity') localActivityTask = task;
        if (marker === 'core_patch' && localActivityTask !== task) patchesATaskLate++;
        if (marker === 'core_patch') localActivityTask = task;
      }
      await Worker.runReplayHistory({ workflowBundle: bundle, replayName: h.workflowId }, history).catch(
        (e: unknown) => {
          notReplayed++;
          // What the replay met: a patch marker, or an accepted update where another command was expected.
          const kind = /patch marker|UpdateAccepted/.exec(String(e))?.[0] ?? 'other';
          errors[kind] = (errors[kind] ?? 0) + 1;
        },
      );
    }
    console.log(JSON.stringify({ workflows, iterations, query, fail, updates, patchesATaskLate, notReplayed, errors }));
  } finally {
    await server.stop();
  }
}

if (require.main === module) runMain(main);
