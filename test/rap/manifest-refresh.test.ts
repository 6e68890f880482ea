/**
 * RAP manifests are fetched again for each new agent tree (issue 17 §5): a tool server that was down when the worker
 * started, or that changed its tools since, reaches the next root thread without a restart, while a tree keeps the
 * tool set it started with. Real gateway, real worker, real tool servers (SDK) on loopback.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { unknownToolError } from '../../src/core/texts';
import { firstText } from '../../src/model/projection';
import { ScriptedModel } from '../../src/model/scripted';
import { startRapGateway, type RapGateway } from '../../src/rap/gateway';
import { CallbackTokens, newCallbackKey } from '../../src/rap/tokens';
import { createRapToolServer, type RapToolHandler, type RapToolServer } from '../../src/rap/tool-server';
import { loadRapToolsets, type RapToolsets } from '../../src/rap/toolsets';
import { render, startTestSystem, type TestSystem, uid } from '../helpers';

const ref: { sys?: TestSystem } = {};
let gateway: RapGateway;
let sys: TestSystem;
let toolsets: RapToolsets;
let server: RapToolServer | undefined;
let port: number;

/** `call <tool> <json>` in the last user text calls it; anything else is answered with what came in. */
const model = new ScriptedModel((req) => {
  const last = req.messages[req.messages.length - 1]!;
  const text = last.role === 'user' ? last.text : last.role === 'tool_result' ? firstText(last.content) : '';
  const m = last.role === 'user' ? /\bcall (\S+) (\{.*\})/.exec(text) : null;
  if (m) return { toolCall: { name: m[1]!, args: JSON.parse(m[2]!) } };
  return { text: `got: ${text}` };
});

const tool = (name: string): RapToolHandler => ({
  name,
  description: `The ${name} tool.`,
  inputSchema: { type: 'object' },
  handler: () => `${name} ran`,
});

/** A port nothing listens on yet. */
const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });

/** The token of every start of the server: the worker is configured before the server first runs. */
const TOKEN = randomBytes(32).toString('base64url');

const startToolServer = async (tools: RapToolHandler[]) => {
  await server?.close();
  server = await createRapToolServer({ name: 'late-tools', tools, port, token: TOKEN });
};

/** The history of a root thread after it ran `text` to idle, settled. */
const turn = async (threadId: string, text: string) => {
  const thread = sys.client.thread(threadId);
  await thread.sendUserText(text);
  await thread.waitForIdle({ settled: true, timeoutMs: 30_000 });
  return render(await thread.history());
};

beforeAll(async () => {
  port = await freePort();
  gateway = await startRapGateway({
    tokens: new CallbackTokens({ current: 'k1', keys: { k1: newCallbackKey() } }),
    deliver: (m) => ref.sys!.client.deliver(m),
  });
  // The server is down while the worker starts: the first load reports it and offers no tools of it.
  toolsets = await loadRapToolsets({
    servers: [{ url: `http://127.0.0.1:${port}`, token: TOKEN }],
    gateway,
    attempts: 1,
    timeoutMs: 2_000,
    refreshAfterMs: 0,
  });
  sys = ref.sys = await startTestSystem({ model, toolSources: [toolsets], toolLifecycle: [toolsets] });
}, 60_000);

afterAll(async () => {
  await sys?.shutdown();
  await server?.close();
  await gateway?.close();
});

it('offers a server that was down at start to the next root thread, and a changed toolset to the tree after', async () => {
  expect(toolsets.tools).toEqual([]);
  expect(toolsets.errors.map((e) => e.server)).toEqual([`http://127.0.0.1:${port}`]);

  // Before the server is up, the tool does not exist for a new tree.
  const early = uid('early');
  expect(await turn(early, 'call run_build {}')).toContain(`result #1: ${unknownToolError('run_build')}`);

  await startToolServer([tool('run_build')]);
  const late = uid('late');
  const lateHistory = await turn(late, 'call run_build {}');
  expect(lateHistory).toContain('result #1: run_build ran');
  // The early tree keeps the set it started with (none of this server's tools), even now that the server is up.
  expect(await turn(early, 'call run_build {}')).toContain(`result #2: ${unknownToolError('run_build')}`);

  // The server changes what it offers: the late tree keeps its set, a new tree gets the new one.
  await startToolServer([tool('run_tests')]);
  expect(await turn(late, 'call run_tests {}')).toContain(`result #2: ${unknownToolError('run_tests')}`);
  expect(await turn(uid('newer'), 'call run_tests {}')).toContain('result #1: run_tests ran');

  // A server that goes down again keeps offering its last manifest to new trees; their calls get RAP's refusal.
  await server!.close();
  server = undefined;
  const down = await turn(uid('down'), 'call run_tests {}');
  expect(down).toContain('call #1 run_tests {}');
  expect(down.find((l) => l.startsWith('result #1:'))).toMatch(
    /^result #1: Error: (Tool call failed|RAP tool 'run_tests' failed)/,
  );
});
