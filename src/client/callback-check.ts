/**
 * The RAP gateway's question to a thread, over Temporal: is this call's callback URL still good? One query per
 * callback, bounded in time; what cannot be answered in time is delivered anyway (see {@link CallbackStateCheck}).
 */
import { type Client, QueryRejectedError, WorkflowClient } from '@temporalio/client';
import type { CallbackState } from '../core/callback-state';
import type { CallbackStateCheck } from '../core/callback-state';
import { callbackStateQuery } from '../workflows/definitions';

export interface CallbackCheckOptions {
  /**
   * How long to wait for the thread's answer. A query needs a worker; with none running it would wait for one, and
   * the callback (whose tool may time out) is delivered instead.
   * @default 5000 (5 s)
   */
  timeoutMs?: number;
}

/** `startRapGateway({ ..., callbackState: callbackStateOf(client.temporal) })`. */
export function callbackStateOf(temporal: Client, options: CallbackCheckOptions = {}): CallbackStateCheck {
  const timeoutMs = options.timeoutMs ?? 5_000;
  // Same connection, namespace, converter (payload codecs) and interceptors; only closed executions differ: the
  // server refuses to query them at once, instead of a worker replaying a finished thread's history to say 'closed'.
  const workflows = new WorkflowClient({
    connection: temporal.connection,
    namespace: temporal.options.namespace,
    dataConverter: temporal.options.dataConverter,
    interceptors: temporal.options.interceptors.workflow ?? [],
    queryRejectCondition: 'NOT_OPEN',
  });
  return async (threadId: string, callId: string): Promise<CallbackState | undefined> => {
    try {
      return await workflows.withDeadline(Date.now() + timeoutMs, () =>
        workflows.getHandle(threadId).query(callbackStateQuery, callId),
      );
    } catch (e) {
      // Completed, terminated, failed, timed out: the thread takes no input any more.
      if (e instanceof QueryRejectedError) return 'closed';
      // No answer in time, a worker without this query (older release), an unknown thread: delivery decides.
      return undefined;
    }
  };
}
