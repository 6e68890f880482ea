import { defineTool, toolResult, SimulatedModel, startLocalSystem } from 'infinity-temporal';

// A stand-in for your CI system: a build's status, a second later.
const ci = {
  status: (id: string) => new Promise<string>((r) => setTimeout(() => r(id === '42' ? 'green' : 'red'), 1000)),
};

const getBuildStatus = defineTool<{ build_id: string }>({
  name: 'get_build_status',
  description: 'Look up a CI build',
  parameters: { type: 'object', properties: { build_id: { type: 'string' } }, required: ['build_id'] },
  execute(args, ctx) {
    // starts the work and returns at once; the result enters the thread later, as a signal
    void ci.status(args.build_id).then((s) => ctx.send(toolResult(ctx, `Build ${args.build_id}: ${s}`)));
  },
});

const system = await startLocalSystem({ model: new SimulatedModel(), tools: [getBuildStatus] });
const thread = system.client.thread('demo');
await thread.sendUserText('Is build 42 green yet?'); // starts the thread, titled by this text
let answered = false;
// live ThreadEvents (or eventsUrl from another process), until the model has read the tool's result
for await (const event of thread.events()) {
  if (event.type === 'tool_call') console.log(`→ ${event.name} ${JSON.stringify(event.args)}`);
  if (event.type === 'tool_result') {
    console.log(`← ${event.text}`);
    answered = true;
  }
  if (event.type === 'completion_finished' && answered) break;
}
await thread.waitForIdle({ settled: true }); // nothing running or queued, and no tool call pending
const items = await thread.history(); // committed HistoryItem[]
const status = await thread.status(); // { status, pendingCall, slices, dropped, ... }
console.log(`${status.status} after ${status.slices} slices: ${items.map((i) => i.kind).join(', ')}`);
console.log(`in the Temporal UI: ${system.threadUrl('demo')}`);
await system.shutdown();
