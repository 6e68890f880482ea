/**
 * What a stdio MCP server started by the runtime receives in its environment: the MCP SDK's safe default (PATH, HOME,
 * ...), the variables its config names in `passEnv`, and its own `env`; never the worker's secrets (model keys,
 * callback signing keys, the events token, the store URL). The server is a real process (test/mcp/env-server.mjs) an
 * agent calls on the dev server; it answers with its environment.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcpTools, type McpTools } from '../../src/mcp/mcp-tools';
import { startTestSystem, uid, type TestSystem } from '../helpers';
import { obedientModel } from '../rap/fixture';

/** Secrets as a worker holds them (the names src/ reads), each with a value a leak would show verbatim. */
const SECRETS = {
  ANTHROPIC_API_KEY: 'sk-ant-leak-check',
  OPENAI_API_KEY: 'sk-openai-leak-check',
  INFINITY_API_KEY: 'infinity-key-leak-check',
  INFINITY_CALLBACK_KEYS: 'k1:bGVhay1jaGVjaw==',
  INFINITY_EVENTS_TOKEN: 'events-token-leak-check',
  INFINITY_STORE: 'postgres://app:leak-check@db/agents',
};

let saved: Record<string, string | undefined>;
let mcp: McpTools;
let sys: TestSystem;

beforeAll(async () => {
  const names = [...Object.keys(SECRETS), 'MCP_PASSED_VAR'];
  saved = Object.fromEntries(names.map((k) => [k, process.env[k]]));
  Object.assign(process.env, SECRETS, { MCP_PASSED_VAR: 'passed-through' });
  mcp = await connectMcpTools([
    {
      name: 'probe',
      command: process.execPath,
      args: [join(__dirname, 'env-server.mjs')],
      env: { MCP_OWN_VAR: 'own-value' },
      passEnv: ['MCP_PASSED_VAR', 'MCP_UNSET_VAR'],
    },
  ]);
  expect(mcp.errors).toEqual([]);
  sys = await startTestSystem({ model: obedientModel(), tools: mcp.tools });
}, 60_000);

afterAll(async () => {
  await sys?.shutdown();
  await mcp?.close();
  for (const [k, v] of Object.entries(saved ?? {})) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

describe('the environment of a stdio MCP server', () => {
  it("holds the SDK's default, passEnv and its own env, and none of the worker's secrets", async () => {
    const thread = await sys.client.startThread({ threadId: uid('mcp-env') });
    await thread.sendUserText('call probe__env {}');
    await thread.waitForIdle({ settled: true });
    const result = (await thread.history()).find((i) => i.kind === 'tool_result');
    const first = result?.kind === 'tool_result' ? result.content[0] : undefined;
    const text = first?.type === 'text' ? first.text : '';
    expect(text).toMatch(/^Tool "env" completed\.\n\n\{/);
    const seen = JSON.parse(text.slice(text.indexOf('{'))) as Record<string, string>;
    for (const name of Object.keys(SECRETS)) expect(seen[name], name).toBeUndefined();
    for (const value of Object.values(SECRETS)) expect(JSON.stringify(seen)).not.toContain(value);
    expect(seen.MCP_PASSED_VAR).toBe('passed-through');
    expect(seen.MCP_OWN_VAR).toBe('own-value');
    expect('MCP_UNSET_VAR' in seen).toBe(false);
    expect(seen.PATH).toBe(process.env.PATH);
    // Nothing beyond the SDK's default names, passEnv and the server's env.
    const allowed = new Set(['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER', 'MCP_PASSED_VAR', 'MCP_OWN_VAR']);
    expect(Object.keys(seen).filter((k) => !allowed.has(k))).toEqual([]);
  });
});
