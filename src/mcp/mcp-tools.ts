/**
 * MCP servers' tools as agent tools, through the official MCP TypeScript SDK (stdio or Streamable HTTP). Each MCP
 * tool becomes an async tool named `<server>__<tool>`: the call starts the MCP request and returns at once, the slice
 * ends, and the answer comes back through the thread's input queue like any other tool result.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { toolResult } from '../tools/messages';
import { defineTool, type JsonSchemaObject, type Tool } from '../tools/tool';

export type McpServerConfig =
  | { name: string; command: string; args?: string[]; env?: Record<string, string>; cwd?: string }
  | { name: string; url: string; headers?: Record<string, string> };

export interface McpToolsOptions {
  /** Per-call timeout (default 10 min): a call that never answers still ends with an error result. */
  callTimeoutMs?: number;
}

export interface McpTools {
  tools: Tool[];
  /** Servers that could not be connected or listed: their tools are absent. */
  errors: { server: string; error: string }[];
  close(): Promise<void>;
}

interface McpContent {
  type: string;
  text?: string;
  mimeType?: string;
  resource?: { uri?: string };
}

/** The reference bridge's text for a call result (rap-protocol.md §6). */
export function formatMcpResult(tool: string, result: { content?: McpContent[]; isError?: boolean }): string {
  const body = (result.content ?? [])
    .map((c) =>
      c.type === 'text'
        ? `${c.text ?? ''}\n`
        : c.type === 'image'
          ? `[Image: ${c.mimeType ?? 'image'}]\n`
          : c.type === 'resource'
            ? `[Resource: ${c.resource?.uri ?? ''}]\n`
            : '',
    )
    .join('');
  return result.isError ? `Tool "${tool}" failed: ${body}` : `Tool "${tool}" completed.\n\n${body}`;
}

const toolName = (server: string, tool: string) => `${server}__${tool}`.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64);

export async function connectMcpTools(servers: McpServerConfig[], options: McpToolsOptions = {}): Promise<McpTools> {
  const clients: Client[] = [];
  const tools: Tool[] = [];
  const errors: McpTools['errors'] = [];
  const timeout = options.callTimeoutMs ?? 10 * 60_000;
  for (const server of servers) {
    const client = new Client({ name: 'infinity-temporal', version: '0.1.0' });
    try {
      const transport =
        'command' in server
          ? new StdioClientTransport({
              command: server.command,
              args: server.args ?? [],
              env: { ...(process.env as Record<string, string>), ...server.env },
              ...(server.cwd && { cwd: server.cwd }),
              stderr: 'ignore',
            })
          : new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.headers ?? {} } });
      await client.connect(transport);
      clients.push(client);
      const { tools: listed } = await client.listTools();
      for (const t of listed) {
        tools.push(
          defineTool({
            name: toolName(server.name, t.name),
            description: t.description ?? `${t.name} (MCP server ${server.name})`,
            parameters: { ...(t.inputSchema as Record<string, unknown>), type: 'object' } as JsonSchemaObject,
            execute(args, ctx) {
              // Not awaited: the call outlives the slice and answers through the input queue.
              void client
                .callTool({ name: t.name, arguments: (args ?? {}) as Record<string, unknown> }, undefined, { timeout })
                .then((r) => formatMcpResult(t.name, r as { content?: McpContent[]; isError?: boolean }))
                .catch((e: unknown) => `MCP tool error: ${e instanceof Error ? e.message : String(e)}`)
                .then((text) => ctx.send(toolResult(ctx, text)))
                .catch(() => undefined); // the thread is gone: nothing to answer
            },
          }),
        );
      }
    } catch (e) {
      errors.push({ server: server.name, error: e instanceof Error ? e.message : String(e) });
      await client.close().catch(() => undefined);
    }
  }
  return {
    tools,
    errors,
    close: async () => {
      await Promise.allSettled(clients.map((c) => c.close()));
    },
  };
}
