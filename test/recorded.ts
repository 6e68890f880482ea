/**
 * The recorded history sets (`test/fixtures/histories/<release>/`: the window's releases, decision 85), for the replays
 * that check something besides the replay gate itself (the UI texts, the tracing interceptors). The UI-text replay
 * takes every history (one replay worker per release is fast); the tracing replay, in `npm test`, a sample of each
 * release's set — every fourth history, so every release and most scenarios are met — and in the soak tier
 * (`RECORDED_HISTORIES=all`) every history; the replay gate (`test/replay.test.ts`) always replays them all. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { workflowIdOfHistory } from '../src/cli/replay-history';

export const HISTORIES = join(__dirname, 'fixtures', 'histories');

export interface RecordedHistory {
  /** `<release>/<file>`. */
  name: string;
  history: unknown;
  workflowId: string;
}

/** Every recorded history, or (`sample`, unless `RECORDED_HISTORIES=all`) every fourth of each release's. */
export function recordedHistories(sample: boolean): RecordedHistory[] {
  const all = !sample || process.env.RECORDED_HISTORIES === 'all';
  return readdirSync(HISTORIES)
    .sort()
    .flatMap((release) =>
      readdirSync(join(HISTORIES, release))
        .filter((f) => f.endsWith('.json'))
        .sort()
        .filter((_, i) => all || i % 4 === 0)
        .map((f) => {
          const history: unknown = JSON.parse(readFileSync(join(HISTORIES, release, f), 'utf8'));
          return { name: `${release}/${f}`, history, workflowId: workflowIdOfHistory(history)! };
        }),
    );
}
