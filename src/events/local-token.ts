/**
 * The events token of the workers on this machine when none is configured: kept in a file of the data directory
 * (owner-only, beside the conversation store it protects as much), created by the first `dev` or `worker` and reused
 * by the others and by the CLI's `tail`, so that live events need no configuration on one machine and are still closed
 * to other users and to web pages.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateEventsToken } from './events-auth';

/** The token file's name in a data directory. */
export const EVENTS_TOKEN_FILE = 'events-token';

/** The path of the token file of `dataDir`. */
export const eventsTokenFile = (dataDir: string) => join(dataDir, EVENTS_TOKEN_FILE);

/** The token kept in `dataDir`, if there is one. */
export function readLocalEventsToken(dataDir: string): string | undefined {
  const file = eventsTokenFile(dataDir);
  if (!existsSync(file)) return undefined;
  const token = readFileSync(file, 'utf8').trim();
  return token === '' ? undefined : token;
}

/**
 * The token kept in `dataDir`, created (mode 0600) when there is none yet. Written whole to a temporary file, then
 * linked into place, which fails if the file exists: two workers starting at once end up with the same token, and
 * none ever reads a half-written one.
 */
export function localEventsToken(dataDir: string): { token: string; file: string } {
  const file = eventsTokenFile(dataDir);
  const existing = readLocalEventsToken(dataDir);
  if (existing !== undefined) return { token: existing, file };
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const token = generateEventsToken();
  const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(temp, `${token}\n`, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(temp, file);
    return { token, file };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    // Another process got there between our read and our link: its token is the one.
    const theirs = readLocalEventsToken(dataDir);
    if (theirs === undefined) throw new Error(`${file} holds no token: remove it, or write one in it`);
    return { token: theirs, file };
  } finally {
    rmSync(temp, { force: true });
  }
}
