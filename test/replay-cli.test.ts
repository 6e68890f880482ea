/**
 * `infinity-temporal replay`: the replay gate run on exported production histories, as an operator runs it before a
 * deploy — the real CLI as a process, histories as `temporal workflow show --output json` writes them.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { cliRunner } from './cli-process';

const cli = cliRunner(() => [], {});
const recorded = (name: string) => join(__dirname, 'fixtures', 'histories', 'v0.12', `${name}.json`);

it('passes histories that replay and names those that do not, exiting 2', async () => {
  const ok = await cli.run('replay', recorded('sync-tool'), recorded('tree-child-report-close'));
  expect(ok.stderr).toBe('');
  expect(ok.code).toBe(0);
  expect(ok.stdout).toContain('2 histories replay');

  // The same thread as if its code had run another activity for its slice (a local one: its marker names it): the
  // nondeterminism a bad deploy meets.
  const tampered = join(mkdtempSync(join(tmpdir(), 'replay-cli-')), 'tampered.json');
  const history = JSON.parse(readFileSync(recorded('sync-tool'), 'utf8')) as {
    events: {
      markerRecordedEventAttributes?: { markerName: string; details: { data: { payloads: { data: string }[] } } };
    }[];
  };
  const slice = history.events.find((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')!;
  const payload = slice.markerRecordedEventAttributes!.details.data.payloads[0]!;
  const data = JSON.parse(Buffer.from(payload.data, 'base64').toString('utf8')) as { activity_type: string };
  expect(data.activity_type).toBe('runSliceLocal');
  payload.data = Buffer.from(JSON.stringify({ ...data, activity_type: 'someOtherActivity' })).toString('base64');
  writeFileSync(tampered, JSON.stringify(history));
  const bad = await cli.run('replay', recorded('sync-tool'), tampered);
  expect(bad.code).toBe(2);
  expect(bad.stdout).toMatch(/ok +.*sync-tool\.json/);
  expect(bad.stdout).toMatch(/FAILED +.*tampered\.json: DeterminismViolationError/);
  expect(bad.stderr).toContain('1 of 2 histories do not replay');
}, 120_000);
