/**
 * The runtime side of RAP: load toolsets from tool servers and expose their tools to agents as async tools. A call
 * is one POST that the server acknowledges at once; the result comes back later through the callback gateway into
 * the thread's input queue, while no activity runs for it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { BUILTIN_TOOL_NAMES } from '../core/builtins';
import { toolResult } from '../tools/messages';
import {
  defineTool,
  type JsonSchemaObject,
  type Tool,
  type ToolContext,
  type ToolLifecycle,
  type ToolSource,
} from '../tools/tool';
import { traceHeaders } from './trace-context';
import { checkManifest, type RapInvocation, type RapManifest, trimBase } from './wire';

export interface RapServerConfig {
  /** Base URL of the tool server (lifecycle paths hang off it; invocations go to the manifest's endpoint). */
  url: string;
  /**
   * The server's bearer token (its `token` option): sent as `Authorization: Bearer <token>` on the manifest request,
   * invocations, cancellations and thread closings.
   * @default none
   */
  token?: string;
  /**
   * Headers for every request to this server (e.g. an `authorization` of another scheme); `token` wins over an
   * `authorization` here.
   * @default none
   */
  headers?: Record<string, string>;
}

/** The headers that go with every request to `server`: its own, and its token. */
export function serverHeaders(server: RapServerConfig): Record<string, string> | undefined {
  if (server.token === undefined) return server.headers;
  const own = Object.fromEntries(
    Object.entries(server.headers ?? {}).filter(([k]) => k.toLowerCase() !== 'authorization'),
  );
  return { ...own, authorization: `Bearer ${server.token}` };
}

/**
 * A server's credentials (token, headers) go to its manifest's endpoint only on the server's own origin: a manifest that
 * names another origin (a mistake, or a manifest rewritten on its way) is refused rather than handed them.
 */
function checkEndpointOrigin(server: RapServerConfig, manifest: RapManifest): void {
  if (server.token === undefined && server.headers === undefined) return;
  const own = new URL(trimBase(server.url)).origin;
  let endpoint: string;
  try {
    endpoint = new URL(manifest.endpoint).origin;
  } catch {
    throw new Error(`the manifest's endpoint ${manifest.endpoint} is not a URL`);
  }
  if (endpoint !== own)
    throw new Error(
      `the manifest's endpoint ${manifest.endpoint} is not on ${own}: this server's credentials are not sent there`,
    );
}

export interface RapToolsetsOptions {
  servers: RapServerConfig[];
  /** Mints the callback URL of one call (a {@link RapGateway}). */
  gateway: { callbackUrl(threadId: string, callId: string): string };
  /** Invocation attempts on 5xx or an unreachable server; 4xx is never retried (RAP §2.2). @default 3 */
  attempts?: number;
  /** First backoff between attempts, doubling. @default 250 */
  backoffMs?: number;
  /** Per-request timeout. @default 10000 (10 s) */
  timeoutMs?: number;
  /**
   * Manifests are fetched again for a new agent tree once this long has passed since the last fetch, so a burst of
   * new threads makes one round of requests, not one per thread.
   * @default 1000 (1 s)
   */
  refreshAfterMs?: number;
  /** Agent trees whose tool sets are remembered (the least recently used is forgotten first). @default 10000 */
  maxTrees?: number;
}

export interface RapToolsetLoadError {
  server: string;
  error: string;
}

export interface RapToolsets extends ToolLifecycle, ToolSource {
  /** Tools of every toolset that loaded at start, minus names that collided (exposed by none). */
  tools: Tool[];
  manifests: { server: string; manifest: RapManifest }[];
  /** Toolsets rejected whole, and name collisions. */
  errors: RapToolsetLoadError[];
}

/** The error result of a call the server refused (RAP §2.2, exact text of the reference runtime). */
export const rapRefusedText = (op: string, endpoint: string, status: number) =>
  `Error: RAP tool '${op}' failed: the server at ${endpoint} responded with HTTP ${status}. No result will arrive for this call.`;

/** A request with credentials follows no redirect: it would carry them to a URL nobody configured. */
const redirectFor = (credentials: unknown): 'follow' | 'error' => (credentials === undefined ? 'follow' : 'error');

async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> | undefined,
  timeoutMs: number,
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    // W3C trace headers of the slice that calls (none when untraced): a traced tool server continues the trace.
    headers: { ...traceHeaders(), 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
    redirect: redirectFor(headers),
  });
}

async function loadManifest(server: RapServerConfig, timeoutMs: number): Promise<RapManifest> {
  const url = `${trimBase(server.url)}/.well-known/rap-toolset`;
  const res = await fetch(url, {
    headers: { accept: 'application/json', ...serverHeaders(server) },
    signal: AbortSignal.timeout(timeoutMs),
    redirect: redirectFor(server.headers ?? server.token),
  });
  if (!res.ok) throw new Error(`GET ${url} answered HTTP ${res.status}`);
  let json: unknown;
  try {
    json = await res.json();
  } catch {
    throw new Error(`GET ${url} did not return JSON`);
  }
  const checked = checkManifest(json);
  if (!checked.ok) throw new Error(checked.error);
  checkEndpointOrigin(server, checked.value);
  return checked.value;
}

/** The tools of one round of manifests: every toolset that loaded, minus names that collide. */
interface Snapshot {
  tools: Tool[];
  loaded: { server: RapServerConfig; manifest: RapManifest }[];
  errors: RapToolsetLoadError[];
}

export async function loadRapToolsets(options: RapToolsetsOptions): Promise<RapToolsets> {
  const attempts = options.attempts ?? 3;
  const backoffMs = options.backoffMs ?? 250;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const refreshAfterMs = options.refreshAfterMs ?? 1_000;
  const maxTrees = options.maxTrees ?? 10_000;
  /** The last manifest each server gave: a server down at a refresh keeps offering what it offered. */
  const lastGood = new Map<string, RapManifest>();

  const snapshot = async (): Promise<Snapshot> => {
    const errors: RapToolsetLoadError[] = [];
    const loaded: { server: RapServerConfig; manifest: RapManifest; tools: Tool[] }[] = [];
    const fetched = await Promise.all(
      options.servers.map(async (server) => {
        try {
          return { server, manifest: await loadManifest(server, timeoutMs) };
        } catch (e) {
          const known = lastGood.get(server.url);
          if (!known) errors.push({ server: server.url, error: e instanceof Error ? e.message : String(e) });
          return known && { server, manifest: known };
        }
      }),
    );
    for (const f of fetched) {
      if (!f) continue;
      try {
        // A schema our validator cannot compile rejects the toolset whole, like any other manifest error.
        const tools = f.manifest.tools.map((def) =>
          rapTool(f.server, f.manifest, def.name, def.description, def.inputSchema),
        );
        loaded.push({ ...f, tools });
        lastGood.set(f.server.url, f.manifest);
      } catch (e) {
        errors.push({ server: f.server.url, error: e instanceof Error ? e.message : String(e) });
      }
    }
    // Names must be unique across toolsets (and apart from the runtime's own tools): a collision exposes neither.
    const count = new Map<string, number>();
    for (const l of loaded) for (const t of l.tools) count.set(t.name, (count.get(t.name) ?? 0) + 1);
    for (const [name, n] of count) {
      if (n > 1)
        errors.push({ server: '*', error: `tool '${name}' is defined by ${n} toolsets; none of them is exposed` });
      if (BUILTIN_TOOL_NAMES.has(name))
        errors.push({ server: '*', error: `tool '${name}' is a runtime tool name; not exposed` });
    }
    const tools = loaded
      .flatMap((l) => l.tools)
      .filter((t) => count.get(t.name) === 1 && !BUILTIN_TOOL_NAMES.has(t.name));
    return { tools, loaded, errors };
  };

  /** Every configured server, concurrently, once; failures ignored (RAP §4.1, §4.2). */
  const notifyAll = async (path: string, body: unknown) => {
    await Promise.allSettled(
      options.servers.map((s) =>
        post(`${trimBase(s.url)}${path}`, body, serverHeaders(s), timeoutMs).then((r) => r.body?.cancel()),
      ),
    );
  };

  function rapTool(
    server: RapServerConfig,
    manifest: RapManifest,
    name: string,
    description: string,
    inputSchema: Record<string, unknown>,
  ): Tool {
    const parameters = { ...inputSchema, type: 'object' } as JsonSchemaObject;
    return defineTool({
      name,
      description,
      parameters,
      async execute(args: unknown, ctx: ToolContext) {
        const body: RapInvocation = {
          operation: name,
          arguments: (args ?? {}) as Record<string, unknown>,
          id: ctx.toolCallId,
          call_id: null,
          callback_url: options.gateway.callbackUrl(ctx.threadId, ctx.toolCallId),
          group_id: ctx.threadId,
          // Infinity's order: user_id (only when known) before thread_ancestors.
          ...(ctx.userId !== undefined && { user_id: ctx.userId }),
          thread_ancestors: ctx.ancestors.length > 0 ? ctx.ancestors : null,
        };
        for (let attempt = 1; ; attempt++) {
          let res: Response | undefined;
          let failure: unknown;
          try {
            res = await post(manifest.endpoint, body, serverHeaders(server), timeoutMs);
            await res.body?.cancel();
          } catch (e) {
            failure = e;
          }
          if (res && res.status >= 200 && res.status < 300) return;
          const retryable = !res || res.status >= 500;
          if (retryable && attempt < attempts) {
            await sleep(backoffMs * 2 ** (attempt - 1));
            continue;
          }
          if (res) {
            await ctx.send(toolResult(ctx, rapRefusedText(name, manifest.endpoint, res.status)));
            return;
          }
          throw failure; // unreachable: the slice answers `Error: Tool call failed`
        }
      },
    });
  }

  const first = await snapshot();
  let latest = { at: performance.now(), snapshot: Promise.resolve(first) };
  /** Trees by root thread id, least recently used first (a Map keeps insertion order). */
  const trees = new Map<string, Promise<readonly Tool[]>>();
  const fresh = (): Promise<Snapshot> => {
    // One round of requests serves every tree that starts within `refreshAfterMs` of it, the round in flight included.
    if (performance.now() - latest.at >= refreshAfterMs) latest = { at: performance.now(), snapshot: snapshot() };
    return latest.snapshot;
  };

  return {
    tools: first.tools,
    manifests: first.loaded.map((l) => ({ server: l.server.url, manifest: l.manifest })),
    errors: first.errors,
    toolsFor(rootThreadId) {
      let tools = trees.get(rootThreadId);
      if (tools) trees.delete(rootThreadId);
      else tools = fresh().then((s) => s.tools);
      trees.set(rootThreadId, tools);
      if (trees.size > maxTrees) trees.delete(trees.keys().next().value!);
      return tools;
    },
    callCancelled: (threadId, toolCallId) =>
      notifyAll('/cancel_tool_call', { thread_id: threadId, tool_call_id: toolCallId }),
    threadClosed: (threadId) => notifyAll('/close_thread', { thread_id: threadId }),
  };
}
