/**
 * What every run of a thread recorded about one input's `deliver` updates (admitted, accepted, completed, and whether
 * the run was handed it in its carried state): printed when an acknowledged delivery answers what it should not, so a
 * failure on a CI machine says which run answered which update, and how.
 */
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';

type Payloads = temporal.api.common.v1.IPayloads | null | undefined;

const decode = (p: Payloads): string =>
  (p?.payloads ?? []).map((x) => (x.data ? Buffer.from(x.data).toString('utf8') : '')).join(' ');

/** One line per event of any run that names `inputId`, oldest run first. */
export async function updateTrail(client: Client, threadId: string, inputId: string): Promise<string> {
  const runs: { runId: string; start: number }[] = [];
  for await (const w of client.workflow.list({ query: `WorkflowId = '${threadId}'` }))
    runs.push({ runId: w.runId, start: w.startTime.getTime() });
  runs.sort((a, b) => a.start - b.start);
  const lines: string[] = [];
  for (const [n, { runId }] of runs.entries()) {
    const history = await client.workflow.getHandle(threadId, runId).fetchHistory();
    for (const e of history.events ?? []) {
      const at = `run ${n} (${runId.slice(0, 8)}) event ${String(e.eventId)} ${e.eventTime?.seconds ?? ''}.${e.eventTime?.nanos ?? ''}`;
      const started = e.workflowExecutionStartedEventAttributes;
      const admitted = e.workflowExecutionUpdateAdmittedEventAttributes;
      const accepted = e.workflowExecutionUpdateAcceptedEventAttributes;
      const completed = e.workflowExecutionUpdateCompletedEventAttributes;
      if (started) {
        const input = decode(started.input);
        const i = input.indexOf(inputId);
        if (i >= 0) lines.push(`${at} started, carrying: …${input.slice(Math.max(0, i - 120), i + 200)}…`);
      } else if (admitted && decode(admitted.request?.input?.args).includes(inputId))
        lines.push(`${at} update admitted ${admitted.request?.meta?.updateId} origin ${admitted.origin}`);
      else if (accepted && decode(accepted.acceptedRequest?.input?.args).includes(inputId))
        lines.push(
          `${at} update accepted ${accepted.acceptedRequest?.meta?.updateId} args ${decode(accepted.acceptedRequest?.input?.args).slice(0, 300)}`,
        );
      else if (completed) {
        const id = completed.meta?.updateId ?? '';
        if (lines.some((l) => l.includes(id)))
          lines.push(`${at} update completed ${id}: ${decode(completed.outcome?.success) || 'failure'}`);
      }
    }
  }
  return lines.join('\n');
}
