/**
 * Which update failures the acknowledged client sends again: the errors as the SDK raises them (a `ServiceError`
 * caused by the gRPC error the server returned), with the texts the server sends.
 */
import { ServiceError } from '@temporalio/client';
import { expect, it } from 'vitest';
import { isUpdateLimit, isUpdateLostWithTask } from '../../src/inbox/unavailable';

/** What `updateWorkflowExecution` throws once the SDK's own retries of the server's answer ran out. */
function failed(code: number, name: string, details: string): ServiceError {
  const grpc = Object.assign(new Error(`${code} ${name}: ${details}`), { code, details, metadata: {} });
  return new ServiceError('Workflow Update failed', { cause: grpc });
}
const exhausted = (details: string) => failed(8, 'RESOURCE_EXHAUSTED', details);

it('sends again when too many updates are in flight, or the run was closing while the update waited', () => {
  expect(isUpdateLimit(exhausted('limit on number of concurrent in-flight updates has been reached (10)'))).toBe(true);
  // Seen on a flooded thread: the server aborts an admitted update of a run that continues-as-new as retryable.
  expect(isUpdateLimit(exhausted('workflow operation can not be applied because workflow is closing'))).toBe(true);
});

it('does not send again for other exhaustion, or for the same texts under another code', () => {
  expect(isUpdateLimit(exhausted('namespace rate limit exceeded'))).toBe(false);
  const notFound = Object.assign(new Error('5 NOT_FOUND: workflow is closing'), {
    code: 5,
    details: 'workflow is closing',
    metadata: {},
  });
  expect(isUpdateLimit(new ServiceError('Workflow Update failed', { cause: notFound }))).toBe(false);
});

it('sends again an update the server aborted before the workflow took it, not a server that is down', () => {
  // Seen on a flooded thread whose workflow tasks were lost under load (the SDK's five retries gave up).
  expect(isUpdateLostWithTask(failed(14, 'UNAVAILABLE', 'workflow update was aborted'))).toBe(true);
  expect(isUpdateLostWithTask(failed(14, 'UNAVAILABLE', 'No connection established'))).toBe(false);
});
