/**
 * MCP tools through the official SDK, over stdio (a server process) and Streamable HTTP (a server on loopback): an
 * agent calls them on the dev server, and their results come back through the input queue.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcpTools, formatMcpResult, type McpTools } from '../../src/mcp/mcp-tools';
import { render, startTestSystem, uid, type TestSystem } from '../helpers';
import { obedientModel } from '../rap/fixture';
import { buildMcpServer } from '../fixtures/mcp-tools-server';

let http: Server;
let mcp: McpTools;
let sys: TestSystem;

beforeAll(async () => {
  // Stateless Streamable HTTP: a server and transport per request, as the SDK's examples do.
  http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const server = buildMcpServer();
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => void transport.close().then(() => server.close()));
      const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString()) as unknown) : undefined;
      void server.connect(transport).then(() => transport.handleRequest(req, res, body));
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  mcp = await connectMcpTools([
    {
      name: 'calc',
      command: process.execPath,
      args: ['--import', 'tsx', join(__dirname, '..', 'fixtures', 'mcp-tools-server.ts')],
    },
    { name: 'web', url },
    { name: 'broken', command: '/nonexistent/mcp-server' },
  ]);
  sys = await startTestSystem({ model: obedientModel(), tools: mcp.tools });
}, 60_000);

afterAll(async () => {
  await sys?.shutdown();
  await mcp?.close();
  await new Promise((r) => http?.close(r));
});

describe('MCP tools', () => {
  it('lists the tools of every server that connected, and reports the one that did not', () => {
    expect(mcp.tools.map((t) => t.name).sort()).toEqual(['calc__add', 'calc__shout', 'web__add', 'web__shout']);
    expect(mcp.errors.map((e) => e.server)).toEqual(['broken']);
  });

  it('runs a stdio MCP tool and an HTTP MCP tool for an agent, results through the input queue', async () => {
    const thread = await sys.client.startThread({ threadId: uid('mcp') });
    await thread.sendUserText('call calc__add {"a":2,"b":40}');
    const waiting = await thread.waitForIdle({ settled: true });
    expect(waiting.status).toBe('idle');
    await thread.sendUserText('call web__shout {"text":"hello"}');
    await thread.waitForIdle({ settled: true });
    await thread.sendUserText('call web__shout {"text":""}');
    await thread.waitForIdle({ settled: true });
    await thread.sendUserText('call calc__add {"a":"two"}');
    await thread.waitForIdle({ settled: true });
    const lines = render(await thread.history());
    expect(lines.filter((l) => l.startsWith('result'))).toEqual([
      'result #1: Tool "add" completed.\n\n42\n',
      'result #2: Tool "shout" completed.\n\nHELLO\n',
      'result #3: Tool "shout" failed: nothing to shout\n',
      "result #4: Error: invalid arguments for tool 'calc__add': arguments must have required property 'b', arguments/a must be number",
    ]);
  });

  it('formats results like the reference bridge', () => {
    expect(
      formatMcpResult('t', {
        content: [
          { type: 'text', text: 'a' },
          { type: 'image', mimeType: 'image/png' },
          { type: 'resource', resource: { uri: 'file:///x' } },
        ],
      }),
    ).toBe('Tool "t" completed.\n\na\n[Image: image/png]\n[Resource: file:///x]\n');
  });
});
