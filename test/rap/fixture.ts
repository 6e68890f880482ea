/**
 * A RAP setup for tests: the callback gateway, a tool server made with the SDK, optional raw peers, and a worker
 * whose agent obeys `call <tool> <json>` and acknowledges every result and event.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { firstText } from '../../src/model/projection';
import { ScriptedModel } from '../../src/model/scripted';
import { callbackStateOf } from '../../src/client/callback-check';
import type { CallbackStateCheck } from '../../src/rap/callback-guard';
import { startRapGateway, type RapGateway } from '../../src/rap/gateway';
import { CallbackTokens, newCallbackKey } from '../../src/rap/tokens';
import { createRapToolServer, type RapToolHandler, type RapToolServer } from '../../src/rap/tool-server';
import { loadRapToolsets, type RapServerConfig, type RapToolsets } from '../../src/rap/toolsets';
import { startTestSystem, type TestSystem } from '../helpers';

/** `call <tool> <json>` → that call; a result → `got: <text>`; an injected event → `noted: <text>`. */
export const obedientModel = () =>
  new ScriptedModel((req) => {
    const last = req.messages[req.messages.length - 1]!;
    if (last.role === 'user') {
      const m = /^call (\S+) (.*)$/.exec(last.text);
      return m ? { toolCall: { name: m[1]!, args: JSON.parse(m[2]!) } } : { text: `ok: ${last.text}` };
    }
    if (last.role === 'tool_result')
      return { text: `${last.name === 'receive_event__injected' ? 'noted' : 'got'}: ${firstText(last.content)}` };
    return { text: 'ok' };
  });

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A hand-written peer: answers by `route`, records every request. */
export async function startPeer(
  route: (req: RecordedRequest, res: ServerResponse, url: string) => void,
): Promise<{ url: string; requests: RecordedRequest[]; close(): Promise<void> }> {
  const requests: RecordedRequest[] = [];
  let url = '';
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      };
      requests.push(r);
      route(r, res, url);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, requests, close: () => new Promise((r) => (server.closeAllConnections(), server.close(() => r()))) };
}

/** A manifest handler for peers. */
export function manifestRoute(
  manifest: (url: string) => unknown,
  invoke: (req: RecordedRequest, res: ServerResponse) => void = (_r, res) => res.end('OK'),
) {
  return (req: RecordedRequest, res: ServerResponse, url: string) => {
    if (req.method === 'GET' && req.path === '/.well-known/rap-toolset') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(manifest(url)));
    } else if (req.method === 'POST') invoke(req, res);
    else res.writeHead(404).end();
  };
}

export interface RapSystem {
  sys: TestSystem;
  gateway: RapGateway;
  tokens: CallbackTokens;
  toolServer: RapToolServer;
  toolsets: RapToolsets;
  close(): Promise<void>;
}

export async function startRapSystem(
  handlers: RapToolHandler[],
  extraServers: RapServerConfig[] = [],
): Promise<RapSystem> {
  const tokens = new CallbackTokens({ current: 'k1', keys: { k1: newCallbackKey() } });
  // The gateway starts first (tools need its URLs); the system it delivers to comes after.
  const ref: { sys?: TestSystem; check?: CallbackStateCheck } = {};
  const gateway = await startRapGateway({
    tokens,
    deliver: (m) => ref.sys!.client.deliver(m),
    // As in production: the thread says whether a callback URL is revoked (410).
    callbackState: async (threadId, callId) => ref.check?.(threadId, callId),
    onEvent: (e) => ref.sys?.events.emit(e),
  });
  const toolServer = await createRapToolServer({ name: 'test-tools', tools: handlers });
  const toolsets = await loadRapToolsets({
    servers: [{ url: toolServer.url, token: toolServer.token! }, ...extraServers],
    gateway,
    backoffMs: 20,
  });
  const sys = (ref.sys = await startTestSystem({
    model: obedientModel(),
    tools: toolsets.tools,
    toolLifecycle: [toolsets],
  }));
  ref.check = callbackStateOf(sys.client.temporal);
  return {
    sys,
    gateway,
    tokens,
    toolServer,
    toolsets,
    close: async () => {
      await sys.shutdown();
      await toolServer.close();
      await gateway.close();
    },
  };
}
