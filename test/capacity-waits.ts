/**
 * What waiting for provider capacity cost a thread, from its Temporal history (issue 41): its slice attempts (local
 * activity markers) and the failed ones, failed regular activities, its timers started and fired, and the `capacity`
 * signals that woke it (and when the last came).
 */
interface HistoryOf {
  workflow: { fetchHistory(): Promise<{ events?: readonly HistoryEvent[] | null }> };
}

interface HistoryEvent {
  eventType?: unknown;
  eventTime?: { seconds?: unknown; nanos?: number | null } | null;
  markerRecordedEventAttributes?: { markerName?: string | null; failure?: unknown } | null;
  timerStartedEventAttributes?: unknown;
  timerFiredEventAttributes?: unknown;
  activityTaskFailedEventAttributes?: unknown;
  workflowExecutionSignaledEventAttributes?: { signalName?: string | null } | null;
}

export interface CapacityWaits {
  slices: number;
  /** Local slice attempts that failed. */
  failed: number;
  /** Regular slice activities that failed (an attempt each). */
  failedActivities: number;
  timers: number;
  timersFired: number;
  wakes: number;
  /** When the last `capacity` signal reached the server (ms since the epoch): the thread's last grant. */
  lastWakeAt?: number;
}

export async function capacityWaits(thread: HistoryOf): Promise<CapacityWaits> {
  const events = (await thread.workflow.fetchHistory()).events ?? [];
  const slices = events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
  const wakes = events.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'capacity');
  const last = wakes.at(-1)?.eventTime;
  return {
    slices: slices.length,
    failed: slices.filter((e) => e.markerRecordedEventAttributes?.failure).length,
    failedActivities: events.filter((e) => e.activityTaskFailedEventAttributes).length,
    timers: events.filter((e) => e.timerStartedEventAttributes).length,
    timersFired: events.filter((e) => e.timerFiredEventAttributes).length,
    wakes: wakes.length,
    ...(last && { lastWakeAt: Number(String(last.seconds)) * 1000 + Math.floor((last.nanos ?? 0) / 1e6) }),
  };
}
