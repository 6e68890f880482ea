/** What a turn costs in Temporal history, read from agents' histories. */
import type { Client } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { median } from './stats';

/** A history event's type as a short name: `EVENT_TYPE_MARKER_RECORDED` (or its number) → `marker_recorded`. */
export const eventTypeName = (t: unknown): string =>
  ((typeof t === 'number' ? proto.api.enums.v1.EventType[t] : undefined) ?? String(t))
    .replace(/^EVENT_TYPE_/, '')
    .toLowerCase();

export interface HistoryCost {
  eventsPerTurn: number;
  workflowTasksPerTurn: number;
  /** Per event type, the median over the agents of its events per turn. */
  eventsByType: Record<string, number>;
}

/** History events (in all and by type) and workflow tasks per turn: medians over the agents `ids`. */
export async function historyCost(client: Client, ids: string[], turns: number): Promise<HistoryCost> {
  const per: { events: number; workflowTasks: number; byType: Record<string, number> }[] = [];
  for (const id of ids) {
    const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
    const counts: Record<string, number> = {};
    for (const e of events) counts[eventTypeName(e.eventType)] = (counts[eventTypeName(e.eventType)] ?? 0) + 1;
    const byType = Object.fromEntries(Object.entries(counts).map(([k, n]) => [k, n / turns]));
    per.push({ events: events.length / turns, workflowTasks: byType.workflow_task_completed ?? 0, byType });
  }
  return {
    eventsPerTurn: median(per.map((p) => p.events)),
    workflowTasksPerTurn: median(per.map((p) => p.workflowTasks)),
    eventsByType: medianByKey(per.map((p) => p.byType)),
  };
}

/** Per key, the median over the records (a record without the key counts 0), keys by descending median. */
export function medianByKey(records: readonly Record<string, number>[]): Record<string, number> {
  const keys = new Set(records.flatMap((r) => Object.keys(r)));
  const out = [...keys].map((k) => [k, median(records.map((r) => r[k] ?? 0))] as const);
  return Object.fromEntries(out.sort((a, b) => b[1] - a[1]));
}
