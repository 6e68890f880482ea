/** The worker's logger drops only the slice queue's expected warning; everything else reaches stderr as before. */
import { afterEach, expect, it, vi } from 'vitest';
import { workerLogger } from '../../src/worker/logger';

afterEach(() => vi.restoreAllMocks());

it("drops the activity-only slice queue's 'no workflows' warning and nothing else", () => {
  const written: string[] = [];
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
  const logger = workerLogger('WARN');
  const message = 'No workflows registered, not polling for workflow tasks';
  logger.warn(message, { sdkComponent: 'worker', taskQueue: 'agents/slices/host-1-abcd' });
  logger.log('WARN', message, { taskQueue: 'agents/slices/host-1-abcd' });
  expect(written).toEqual([]);
  // The same warning for a queue that should have had workflows is a real misconfiguration: it stays.
  logger.warn(message, { taskQueue: 'agents' });
  logger.warn('Workflow task failed', { taskQueue: 'agents/slices/host-1-abcd' });
  logger.info('below the level');
  logger.error('boom');
  expect(written).toHaveLength(3);
  expect(written[0]).toContain(message);
  expect(written[1]).toContain('Workflow task failed');
  expect(written[2]).toContain('[ERROR] boom');
});
