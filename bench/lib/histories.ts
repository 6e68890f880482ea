/**
 * The Temporal histories a finished benchmark run left in its dev server's database, for the probes that read where
 * time went (latency-breakdown.ts, turn-breakdown.ts): a dev server over that file, each workflow's events by prefix.
 */
import { Client, Connection } from '@temporalio/client';
import { startDevServer } from '../../src/devserver/server';

export type HistoryEvent = { eventType?: unknown; eventTime?: { seconds?: unknown; nanos?: number | null } | null };

/** The event's time in ms. */
export const ms = (e: HistoryEvent) => Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;

/** Whether the event is of the type `name` (`EVENT_TYPE_<name>`, or its number as the JSON export writes it). */
export const is = (e: HistoryEvent, name: string, code: number) =>
  String(e.eventType) === String(code) || String(e.eventType) === `EVENT_TYPE_${name}`;

/** Calls `each` with the events of every workflow whose id starts with `prefix`, for each prefix in turn. */
export async function forEachHistory(
  dbFilename: string,
  prefixes: readonly string[],
  each: (prefix: string, events: HistoryEvent[]) => void,
  done: (prefix: string) => void,
): Promise<void> {
  const server = await startDevServer({ ui: false, dbFilename });
  try {
    const client = new Client({ connection: await Connection.connect({ address: server.address }) });
    for (const prefix of prefixes) {
      for await (const wf of client.workflow.list({ query: `WorkflowId STARTS_WITH "${prefix}"` })) {
        each(
          prefix,
          ((await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory()).events ?? []) as HistoryEvent[],
        );
      }
      done(prefix);
    }
  } finally {
    await server.stop();
  }
}
