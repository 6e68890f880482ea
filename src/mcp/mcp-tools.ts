/**
 * MCP servers' tools as agent tools, through the official MCP TypeScript SDK (stdio or Streamable HTTP). Each MCP
 * tool becomes an async tool named `<server>__<tool>`: the call starts the MCP request and returns at once, the slice
 * ends, and the answer comes back through the thread's input queue like any other tool result.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { toolResult } from '../tools/messages';
import { defineTool, type JsonSchemaObject, type Tool } from '../tools/tool';

/** An MCP server the runtime starts as a child process and talks to over stdio. */
export interface McpStdioServerConfig {
  /** Prefix of its tools' names (`<name>__<tool>`). */
  name: string;
  /** The program to run (no shell). */
  command: string;
  /** @default [] */
  args?: string[];
  /**
   * Variables set for the server, on top of the MCP SDK's default environment (`HOME`, `LOGNAME`, `PATH`, `SHELL`,
   * `TERM`, `USER` on POSIX) and `passEnv`.
   * @default {}
   */
  env?: Record<string, string>;
  /**
   * Names of the worker's own environment variables the server also gets (e.g. a token the server needs). The worker's
   * other variables never reach it: they hold the model API keys, the callback signing keys and the events token.
   * @default []
   */
  passEnv?: string[];
  /** @default the worker's working directory */
  cwd?: string;
}

/** An MCP server reached over Streamable HTTP. */
export interface McpHttpServerConfig {
  /** Prefix of its tools' names (`<name>__<tool>`). */
  name: string;
  url: string;
  /** Headers on every request (e.g. `authorization`). @default {} */
  headers?: Record<string, string>;
}

export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

export interface McpToolsOptions {
  /**
   * Per-call timeout: a call that never answers still ends with an error result.
   * @default 600_000 (10 min)
   */
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

/**
 * The environment of a stdio server: the SDK's safe default, the worker's variables named in `passEnv`, then the
 * server's own `env`. Never the worker's whole environment, which holds its secrets.
 */
export function stdioEnvironment(server: Pick<McpStdioServerConfig, 'env' | 'passEnv'>): Record<string, string> {
  const passed: Record<string, string> = {};
  for (const name of server.passEnv ?? []) {
    const value = process.env[name];
    if (value !== undefined) passed[name] = value;
  }
  return { ...getDefaultEnvironment(), ...passed, ...server.env };
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
              env: stdioEnvironment(server),
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
