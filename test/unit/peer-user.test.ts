/**
 * Who opened a loopback connection, from the kernel's socket table (src/codec/peer-user.ts), which the codec endpoint
 * trusts instead of a token for the dev server's UI (issue 38, finding 4): the table's text read right (byte order,
 * IPv4-mapped IPv6, TIME_WAIT lines), and real connections from this process and, as root, from another user.
 */
import { execFile } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { addressBytes, canCheckPeerUser, peerUid, tableAddress, uidInTables } from '../../src/codec/peer-user';

const HEADER = '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode';

describe('the socket table, as text', () => {
  it('reads addresses in host byte order, IPv4 and IPv6 (mapped IPv4 as IPv4)', () => {
    expect(tableAddress('0100007F:1F90', true)).toEqual({ bytes: [127, 0, 0, 1], port: 8080 });
    expect(tableAddress('7F000001:1F90', false)).toEqual({ bytes: [127, 0, 0, 1], port: 8080 });
    expect(tableAddress('0000000000000000FFFF00000100007F:0050', true)).toEqual({ bytes: [127, 0, 0, 1], port: 80 });
    expect(tableAddress('00000000000000000000000001000000:0050', true)).toEqual({
      bytes: [...Array<number>(15).fill(0), 1],
      port: 80,
    });
    expect(addressBytes('::ffff:127.0.0.1')).toEqual([127, 0, 0, 1]);
    expect(addressBytes('::1')).toEqual([...Array<number>(15).fill(0), 1]);
    expect(addressBytes('not an address')).toBeUndefined();
  });

  it("finds the peer's socket by both ends, skipping the kernel's TIME_WAIT lines (uid 0) and other connections", () => {
    const table = [
      HEADER,
      // A listening socket, an old connection in TIME_WAIT with the same ends, another user's other connection.
      '   0: 0100007F:9C40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1 0 100 0 0 10 0',
      '   1: 0100007F:D431 0100007F:9C40 06 00000000:00000000 03:00000F2A 00000000     0        0 0 3 0',
      '   2: 0100007F:D432 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  4242        0 7 1 0 20 4 30 10 -1',
      '   3: 0100007F:D431 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 8 1 0 20 4 30 10 -1',
    ].join('\n');
    const peer = { address: '127.0.0.1', port: 0xd431 };
    const us = { address: '127.0.0.1', port: 0x9c40 };
    expect(uidInTables([table], peer, us, true)).toBe(1000);
    expect(uidInTables([table], { address: '127.0.0.1', port: 0xd432 }, us, true)).toBe(4242);
    expect(uidInTables([table], { address: '127.0.0.2', port: 0xd431 }, us, true)).toBeUndefined();
    // Only the TIME_WAIT line: nobody.
    expect(uidInTables([[HEADER, table.split('\n')[2]].join('\n')], peer, us, true)).toBeUndefined();
  });
});

describe.skipIf(!canCheckPeerUser())('real connections (Linux)', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((r) => server?.close(r));
    server = undefined;
  });

  /** A server that answers each connection with the uid it found for it. */
  async function uidServer(): Promise<number> {
    server = createServer((socket: Socket) => {
      void peerUid(socket).then((uid) => socket.end(`${uid ?? 'unknown'}\n`));
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    return (server.address() as { port: number }).port;
  }

  /** Connects as `uid` (a child process, so that the socket is that user's) and returns what the server answered. */
  const connectAs = (port: number, uid?: number) =>
    new Promise<string>((resolve, reject) => {
      const script = `const s=require('net').connect(${port},'127.0.0.1');let d='';s.on('data',b=>d+=b);s.on('end',()=>process.stdout.write(d.trim()))`;
      execFile(
        process.execPath,
        ['-e', script],
        { cwd: '/', env: { PATH: process.env.PATH }, ...(uid !== undefined && { uid, gid: uid }) },
        (e, out) => (e ? reject(e) : resolve(out)),
      );
    });

  it("names this process's user for a connection it opened", async () => {
    const port = await uidServer();
    expect(await connectAs(port)).toBe(String(process.getuid!()));
  });

  it.skipIf(process.getuid?.() !== 0)(
    "names another user's connection as theirs (as root: nobody, 65534)",
    async () => {
      const port = await uidServer();
      expect(await connectAs(port, 65534)).toBe('65534');
    },
  );
});
