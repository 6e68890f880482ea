/**
 * `npm start`: the embedded demo. A Temporal dev server, a worker and one agent on the simulated model
 * (no API key). The agent calls `get_build_status`, which answers 2 s later through the thread's input queue
 * while no activity is running for it.
 */
import { Runtime } from '@temporalio/worker';
// The tool (src/tools/demo.ts) starts its work and returns at once; its result arrives 2 s later as a signal.
import { buildStatusDemoTool, SimulatedModel, startLocalSystem, workerLogger } from '../src';
import { show } from './show-events';

async function main(): Promise<void> {
  Runtime.install({ logger: workerLogger('WARN') }); // keep the worker's own logs out of the conversation
  console.log('Starting the Temporal dev server and a worker (the first run installs the Temporal CLI)...');
  const system = await startLocalSystem({
    model: new SimulatedModel({ completionBytes: 400, chunkDelayMs: 15 }),
    tools: [buildStatusDemoTool()],
  });
  try {
    const threadId = `demo-${Date.now()}`;
    const thread = await system.client.startThread({ threadId });
    console.log(`Temporal UI: ${system.devServer.uiUrl}`);
    console.log(`This thread: ${system.threadUrl(threadId)}`);
    const events = (async () => {
      for await (const e of thread.events()) show(e);
    })();
    await thread.sendUserText('Is build 42 green yet?');
    const status = await thread.waitForIdle({ settled: true, timeoutMs: 60_000 });
    const history = await thread.history();
    console.log(`\nDone: ${history.length} history items, ${status.slices} slices, status ${status.status}.`);
    console.log(`Inspect it in the Temporal UI: ${system.threadUrl(threadId)}`);
    if (process.env.DEMO_KEEP_RUNNING) {
      console.log('DEMO_KEEP_RUNNING is set: the server stays up until Ctrl-C.');
      await new Promise<void>((r) => process.once('SIGINT', () => r()));
    }
    void events;
  } finally {
    await system.shutdown();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
