/**
 * A loopback HTTP server that answers model requests in one provider's real wire format. Each request takes the
 * next scripted reply; every request body is recorded so tests can assert what the real client sent.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One model turn, described independently of any provider. */
export interface WireTurn {
  reasoning?: { text: string; signature: string };
  /** Text deltas, in order. */
  text?: string[];
  /** A tool call whose arguments arrive in these fragments (joined, they need not be valid JSON). */
  toolCall?: { id: string; name: string; argChunks: string[] };
  usage?: { input: number; output: number };
}

export type WireReply =
  | { kind: 'turn'; turn: WireTurn }
  /** An HTTP error with the provider's error body. */
  | { kind: 'error'; status: number; message: string; retryAfterSeconds?: number }
  /** The turn's first `afterFrames` frames, then the socket is destroyed. */
  | { kind: 'cut'; turn: WireTurn; afterFrames: number };

/** How one provider speaks: which path it serves, how a turn and an error look on the wire. */
export interface WireDialect {
  name: string;
  /** Does this request path belong to the dialect? */
  matches(path: string): boolean;
  contentType: string;
  frames(turn: WireTurn): (string | Uint8Array)[];
  error(status: number, message: string): { headers: Record<string, string>; body: string };
}

export interface RecordedRequest {
  /** When it arrived (ms since the epoch). */
  at: number;
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

export interface WireServer {
  url: string;
  requests: RecordedRequest[];
  /** Queues replies for the next requests. */
  reply(...replies: WireReply[]): void;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startWireServer(dialect: WireDialect): Promise<WireServer> {
  const queue: WireReply[] = [];
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      const raw = await readBody(req);
      const path = req.url ?? '/';
      if (!dialect.matches(path)) {
        res.writeHead(404).end(`no route ${path}`);
        return;
      }
      requests.push({
        at: Date.now(),
        path,
        headers: req.headers,
        body: raw ? (JSON.parse(raw) as Record<string, unknown>) : {},
      });
      const next = queue.shift();
      if (!next) {
        const e = dialect.error(500, `wire server: no reply scripted for request ${requests.length}`);
        res.writeHead(500, e.headers).end(e.body);
        return;
      }
      if (next.kind === 'error') {
        const e = dialect.error(next.status, next.message);
        const headers = {
          ...e.headers,
          ...(next.retryAfterSeconds !== undefined && { 'retry-after': String(next.retryAfterSeconds) }),
        };
        res.writeHead(next.status, headers).end(e.body);
        return;
      }
      res.writeHead(200, { 'content-type': dialect.contentType, 'cache-control': 'no-cache' });
      const frames = dialect.frames(next.turn);
      const limit = next.kind === 'cut' ? next.afterFrames : frames.length;
      for (const f of frames.slice(0, limit)) {
        res.write(f);
        // Let each frame leave as its own chunk, as a real streaming server's would.
        await new Promise((r) => setImmediate(r));
      }
      if (next.kind === 'cut') res.socket?.destroy();
      else res.end();
    })().catch((e: unknown) => {
      res.destroy(e instanceof Error ? e : new Error(String(e)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    reply: (...r) => queue.push(...r),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** One server-sent event. */
export function sse(data: unknown, event?: string): string {
  return `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}
