/**
 * What the fleet probes start from: a scratch folder, an empty SQLite store file, a throwaway dev server and the
 * thread workflow's bundle, and the benchmark's fleet options on them.
 */
import { join } from 'node:path';
import { runScratch } from '../../infra/scratch';
import { type DevServer, startDevServer } from '../../src/devserver/server';
import { SqliteConversationStore } from '../../src/store/sqlite';
import { writeThreadBundle } from './bundle';
import type { Design, FleetOptions } from './fleet';

export interface ProbeBase {
  work: string;
  server: DevServer;
  /** The SQLite store file. */
  storeFile: string;
  bundlePath: string;
  /** The benchmark's fleet on this server and store: 100 cached workflows, 50 activity slots. */
  fleetOptions(design?: Design): FleetOptions;
}

export async function probeBase(name: string): Promise<ProbeBase> {
  // Gone at exit (infra/scratch.ts): a probe's servers and stores.
  const work = runScratch(`infinity-${name}-`).dir;
  const storeFile = join(work, 'conversations.sqlite');
  await new SqliteConversationStore(storeFile).close(); // creates the store's file and schema
  const server = await startDevServer({ ui: false, dbFilename: join(work, 'temporal.sqlite') });
  const bundlePath = await writeThreadBundle(work);
  return {
    work,
    server,
    storeFile,
    bundlePath,
    fleetOptions: (design = 'ours') => ({
      design,
      address: server.address,
      store: storeFile,
      bundlePath,
      maxCachedWorkflows: 100,
      activitySlots: 50,
    }),
  };
}
