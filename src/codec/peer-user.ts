/**
 * Which OS user opened the other end of a loopback TCP connection, from the kernel's socket table (Linux:
 * `/proc/net/tcp` and `/proc/net/tcp6` list every socket of the network namespace with the uid that created it). The
 * codec endpoint uses it to serve the Temporal UI of a local dev server, which can send no credential of its own, to
 * the browser of the user who runs it and to no other user (issue 38, finding 4).
 *
 * What it proves: the socket that connected was created by a process of that user (or by root, as that user). A socket
 * of another user never carries this uid; a process of the same user may relay another's connection (a proxy, an SSH
 * tunnel), which the kernel cannot tell apart.
 */
import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { isIPv4, isIPv6, type Socket } from 'node:net';
import { endianness } from 'node:os';

const TABLES = ['/proc/net/tcp', '/proc/net/tcp6'];

/** This process's uid, where the platform has one. */
const ownUid = (): number | undefined => (typeof process.getuid === 'function' ? process.getuid() : undefined);

/**
 * Whether {@link peerUid} can answer here: Linux with a readable socket table and uids. Elsewhere (macOS, Windows, a
 * `/proc` without `net/tcp`) a caller must authenticate another way.
 */
export function canCheckPeerUser(): boolean {
  if (process.platform !== 'linux' || ownUid() === undefined) return false;
  try {
    return readFileSync(TABLES[0]!, 'utf8').startsWith('  sl');
  } catch {
    return false;
  }
}

/** An address as its bytes (IPv4: 4, IPv6: 16; an IPv4-mapped IPv6 address as its 4 IPv4 bytes). */
export function addressBytes(address: string): number[] | undefined {
  if (isIPv4(address)) return address.split('.').map(Number);
  if (!isIPv6(address)) return undefined;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return addressBytes(mapped[1]!);
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const groups = (s: string | undefined) => (s ? s.split(':') : []);
  const h = groups(head);
  const t = groups(tail);
  const words = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return words.flatMap((w) => {
    const n = parseInt(w, 16);
    return [n >> 8, n & 0xff];
  });
}

/**
 * A socket table's address (`0100007F:1F90`: the address as 32-bit words in host byte order, then the port) as its
 * bytes and port; an IPv4-mapped IPv6 address as its IPv4 bytes.
 */
export function tableAddress(field: string, littleEndian = endianness() === 'LE'): { bytes: number[]; port: number } {
  const [hex, port] = field.split(':');
  const bytes: number[] = [];
  for (let i = 0; i < hex!.length; i += 8) {
    const word = parseInt(hex!.slice(i, i + 8), 16);
    const be = [word >>> 24, (word >>> 16) & 0xff, (word >>> 8) & 0xff, word & 0xff];
    bytes.push(...(littleEndian ? be.reverse() : be));
  }
  const isMapped =
    bytes.length === 16 && bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  return { bytes: isMapped ? bytes.slice(12) : bytes, port: parseInt(port!, 16) };
}

/** ESTABLISHED, FIN_WAIT1, FIN_WAIT2 (include/net/tcp_states.h). */
const LIVE_STATES = new Set(['01', '04', '05']);

const sameBytes = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * The uid of the socket at `local` connected to `remote`, in the socket tables' text (`/proc/net/tcp` lines); undefined
 * when no line has them.
 */
export function uidInTables(
  tables: readonly string[],
  local: { address: string; port: number },
  remote: { address: string; port: number },
  littleEndian = endianness() === 'LE',
): number | undefined {
  const localBytes = addressBytes(local.address);
  const remoteBytes = addressBytes(remote.address);
  if (!localBytes || !remoteBytes) return undefined;
  for (const table of tables) {
    for (const line of table.split('\n').slice(1)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
      const f = line.trim().split(/\s+/);
      // A connected socket only (established, or closing its own side): a TIME_WAIT line is the kernel's, uid 0.
      if (f.length < 8 || !LIVE_STATES.has(f[3]!)) continue;
      const l = tableAddress(f[1]!, littleEndian);
      if (l.port !== local.port || !sameBytes(l.bytes, localBytes)) continue;
      const r = tableAddress(f[2]!, littleEndian);
      if (r.port !== remote.port || !sameBytes(r.bytes, remoteBytes)) continue;
      return Number(f[7]);
    }
  }
  return undefined;
}

const known = new WeakMap<Socket, Promise<number | undefined>>();

/**
 * The uid of the process that opened the other end of `socket`, a connection accepted on this machine (looked up once
 * per connection); undefined when it cannot be known (another platform, a peer on another machine, a closed socket).
 */
export function peerUid(socket: Socket): Promise<number | undefined> {
  let uid = known.get(socket);
  if (!uid) {
    uid = lookUp(socket);
    known.set(socket, uid);
  }
  return uid;
}

async function lookUp(socket: Socket): Promise<number | undefined> {
  const { remoteAddress, remotePort, localAddress, localPort } = socket;
  if (!remoteAddress || !remotePort || !localAddress || !localPort) return undefined;
  const tables = await Promise.all(TABLES.map((t) => readFile(t, 'utf8').catch(() => '')));
  // The peer's socket: its local end is our remote one, and the other way round.
  return uidInTables(tables, { address: remoteAddress, port: remotePort }, { address: localAddress, port: localPort });
}

/** Whether the other end of `socket` is a process of this process's own user. */
export async function isOwnUserPeer(socket: Socket): Promise<boolean> {
  const own = ownUid();
  return own !== undefined && (await peerUid(socket)) === own;
}
