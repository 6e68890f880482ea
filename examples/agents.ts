/**
 * Two agents on one worker (issue 40), no API key: a `coder` that may spawn a `reviewer`. A thread of the coder
 * spawns a reviewer child, which reads the diff with its own tool and reports back; the coder answers the report.
 * Each agent has its own instructions, model (scripted here, so the run is the same every time) and tools.
 *
 *   npx tsx examples/agents.ts      (DEMO_KEEP_RUNNING=1 keeps the server up to browse both threads in the UI)
 *
 * test/examples-agents.test.ts runs it and checks what it prints; test/browser/agents-ui.test.ts shows its agents'
 * threads in the Temporal UI (docs/ui-agents.png).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineAgent, defineTool, type HistoryItem, type ModelRequest, startLocalSystem } from '../src';
import { ScriptedModel } from '../src/testing';

export const TASK = 'Fix the crash on empty input in parse.ts';
export const REPORT = 'LGTM: parse.ts returns [] for empty input; add a test for it.';

/** The thread a request is for (the runtime appends its id to every system prompt). */
const threadOf = (req: ModelRequest) => /Your current thread ID is `([^`]+)`/.exec(req.system)?.[1] ?? '';

/** The coder's model: asks a reviewer, then passes the reviewer's report on. */
const coderModel = new ScriptedModel((req) => {
  const last = req.messages[req.messages.length - 1]!;
  if (last.role === 'user')
    return {
      toolCall: {
        name: 'spawn_thread',
        args: { agent: 'reviewer', instructions: 'Review my change to parse.ts', child_of: [threadOf(req)] },
      },
    };
  if (last.role === 'tool_result' && last.name === 'spawn_thread') return { text: 'Fixed; a reviewer is looking.' };
  if (last.role === 'tool_result' && last.name === 'receive_event__injected') return { text: 'The reviewer approved.' };
  return { text: 'Done.' };
});

/** The reviewer's model: reads the diff with its own tool, reports once, then stops. */
const reviewerModel = new ScriptedModel((req) => {
  const called = (name: string) => req.messages.some((m) => m.role === 'tool_call' && m.name === name);
  if (!called('read_diff')) return { toolCall: { name: 'read_diff', args: { file: 'parse.ts' } } };
  if (!called('report_to_parent')) return { toolCall: { name: 'report_to_parent', args: { report: REPORT } } };
  return { text: 'Reported.' };
});

const readDiff = defineTool<{ file: string }>({
  name: 'read_diff',
  description: 'The diff of one file',
  parameters: { type: 'object', properties: { file: { type: 'string' } }, required: ['file'] },
  sync: true, // answers within the slice
  execute: (args) => `--- ${args.file}\n+  if (input === '') return [];`,
});

export const coder = defineAgent({
  name: 'coder',
  description: 'Writes code',
  instructions: 'You write code, then have it reviewed.',
  model: coderModel,
  spawns: ['reviewer'], // spawn_thread offers the reviewer, by its description
});

export const reviewer = defineAgent({
  name: 'reviewer',
  description: 'Reviews a change and reports what to fix',
  instructions: 'You review code. Be brief.',
  model: reviewerModel,
  tools: [readDiff],
});

/** What `infinity-temporal dev --tools examples/agents.ts` hosts beside the default agent. */
export const agents = [coder, reviewer];

/** One line per history item: what the agent said or called, and what came back (long texts cut). */
function line(agent: string, item: HistoryItem): string {
  const text = describe(item).replace(/\s+/g, ' ');
  return `[${agent}] ${text.length > 110 ? `${text.slice(0, 109)}…` : text}`;
}

function describe(item: HistoryItem): string {
  switch (item.kind) {
    case 'user':
      return `user: ${item.text}`;
    case 'assistant':
      return `says: ${item.text}`;
    case 'tool_call':
      return `→ ${item.name} ${JSON.stringify(item.args)}`;
    case 'tool_result':
      return `← ${item.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join(' ')}`;
    case 'subscription_event':
      return `← ${item.result.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join(' ')}`;
    default:
      return item.kind;
  }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'agents-example-'));
  console.log('Starting a Temporal dev server and one worker with two agents...');
  const system = await startLocalSystem({ agents, dataDir });
  try {
    const threadId = `coder-${Date.now()}`;
    const thread = system.client.thread(threadId);
    await system.client.sendUserText(threadId, TASK, { agent: 'coder' }); // starts a thread of the coder
    // The reviewer's report arrives after the coder's slice that spawned it: wait for the coder's answer to it.
    const deadline = Date.now() + 60_000;
    let history = await thread.history();
    while (!history.some((i) => i.kind === 'subscription_event') || history.at(-1)?.kind !== 'assistant') {
      if (Date.now() > deadline) throw new Error('no report from the reviewer within 60 s');
      await new Promise((r) => setTimeout(r, 100));
      history = await thread.history();
    }
    const parent = await thread.waitForIdle({ settled: true });
    const childId = parent.children[0]!;
    const child = await system.client.thread(childId).waitForIdle({ settled: true });
    // The child's own items: it sees the parent's up to the spawn call too, but does not store them again.
    const childItems = await system.client.thread(childId).history();

    for (const item of history) console.log(line(parent.agent ?? 'default', item));
    for (const item of childItems) console.log(line(child.agent ?? 'default', item));
    console.log(`\nparent ${threadId}: agent ${parent.agent}, ${parent.kind}, ${parent.status}`);
    console.log(`child  ${childId}: agent ${child.agent}, ${child.kind} of ${child.parentThreadId}, ${child.status}`);
    const byAgent = encodeURIComponent("AgentName IN ('coder', 'reviewer')");
    console.log(
      `\nTemporal UI, threads by agent: ${system.devServer.uiUrl}/namespaces/default/workflows?query=${byAgent}`,
    );
    console.log(`The coder's thread: ${system.threadUrl(threadId)}`);
    if (process.env.DEMO_KEEP_RUNNING) {
      console.log('DEMO_KEEP_RUNNING is set: the server stays up until Ctrl-C.');
      await new Promise<void>((r) => process.once('SIGINT', () => r()));
    }
  } finally {
    await system.shutdown();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
