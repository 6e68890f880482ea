/**
 * Connection failures as a typed, retryable error. The Temporal client retries an unreachable server for a while and
 * then throws a raw gRPC `ServiceError`; callers of this runtime should not have to know gRPC status codes to tell
 * "try again later" from "your input is wrong".
 */
import { isGrpcServiceError, ServiceError } from '@temporalio/client';
import { TemporalUnavailableError } from './errors';

/** gRPC UNAVAILABLE and DEADLINE_EXCEEDED: the server could not be reached or did not answer in time. */
const TRANSIENT_CODES = new Set([14, 4]);

export function isUnavailable(e: unknown): boolean {
  for (let err: unknown = e; err instanceof Error; err = err.cause) {
    if (isGrpcServiceError(err) && TRANSIENT_CODES.has(err.code)) return true;
    if (
      err instanceof ServiceError &&
      /UNAVAILABLE|DEADLINE_EXCEEDED|tcp connect error|Connection refused/i.test(err.message)
    )
      return true;
  }
  return false;
}

/** Runs `call`; a connection failure becomes {@link TemporalUnavailableError}. */
export async function typedUnavailable<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (e) {
    if (isUnavailable(e)) throw new TemporalUnavailableError(e);
    throw e;
  }
}

/** The server's FAILED_PRECONDITION for an update while the workflow task's last attempt failed or timed out. */
export function isWorkflowTaskFailing(e: unknown): boolean {
  for (let err: unknown = e; err instanceof Error; err = err.cause) {
    if (isGrpcServiceError(err) && err.code === 9 && /workflow task in failed state/i.test(err.details ?? err.message))
      return true;
    if (err instanceof ServiceError && /workflow task in failed state/i.test(err.message)) return true;
  }
  return false;
}

/**
 * The server's `RESOURCE_EXHAUSTED` answers that mean "not now" for an update: the workflow has as many updates in
 * flight as it allows (`limit.workflowExecution.maxInFlightUpdates`, 10 by default), or its run was closing
 * (continuing-as-new) while the update waited to be admitted, which the server aborts as retryable (temporalio/temporal
 * pull 6485) and the SDK re-sends only a few times. Transient: the next attempt may pass, on the next run.
 */
const BUSY = /in-flight updates|workflow is closing/i;

export function isUpdateLimit(e: unknown): boolean {
  for (let err: unknown = e; err instanceof Error; err = err.cause) {
    if (isGrpcServiceError(err) && err.code === 8 && BUSY.test(`${err.details} ${err.message}`)) return true;
    if (err instanceof ServiceError && BUSY.test(err.message)) return true;
  }
  return false;
}

/**
 * An update the server dropped before the workflow accepted it: the workflow task carrying it failed ("unexpected
 * workflow task failure", e.g. a continue-as-new refused since a signal landed during the task), or the server aborted
 * it (`UNAVAILABLE` "workflow update was aborted", when the task was lost under load, after the SDK's own few retries).
 * It may be sent again, and the next task (or run) answers it.
 */
export function isUpdateLostWithTask(e: unknown): boolean {
  for (let err: unknown = e; err instanceof Error; err = err.cause) {
    const details = isGrpcServiceError(err) ? err.details : '';
    if (/unexpected workflow task failure/i.test(`${err.message} ${details}`)) return true;
    if (isGrpcServiceError(err) && err.code === 14 && /update was aborted/i.test(`${err.message} ${details}`))
      return true;
  }
  return false;
}
