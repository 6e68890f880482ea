/**
 * One HTTP request to a listener on 127.0.0.1 with any headers, `Host` included (fetch cannot set it), for the
 * gateway's hardening tests.
 */
import { request } from 'node:http';

export interface RawAnswer {
  status: number;
  body: string;
}

/** Sends `body` (as JSON unless `headers` says otherwise) and resolves with the status and the body read whole. */
export function rawRequest(
  port: number,
  path: string,
  body: string | undefined,
  headers: Record<string, string> = {},
  method = 'POST',
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method,
        headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...headers },
        agent: false,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
