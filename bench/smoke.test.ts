/**
 * `npm run bench:smoke`: the whole benchmark harness on a tiny configuration, so it never rots. It checks that the
 * run finished and wrote well-formed results — never a timing.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';

it('runs every design and writes JSON, a markdown summary and a chart', () => {
  const out = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
  execFileSync(process.execPath, ['--import', 'tsx', join(__dirname, 'run.ts'), '--profile', 'smoke', '--out', out], {
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 540_000,
  });
  const files = readdirSync(out);
  const json = files.find((f) => f.endsWith('.json'))!;
  expect(files.filter((f) => f.startsWith(json.replace('.json', '')))).toHaveLength(3);
  const r = JSON.parse(readFileSync(join(out, json), 'utf8'));
  expect(Object.keys(r.designs).sort()).toEqual(['blocking', 'ceiling', 'ours']);
  for (const d of Object.values(r.designs) as { waves: { completions: number; completionsPerSecond: number; latencyMs: { n: number } }[]; errors: string[] }[]) {
    expect(d.errors).toEqual([]);
    expect(d.waves).toHaveLength(2);
    for (const w of d.waves) {
      // 3 agents × 2 turns × 2 completions each, and a latency for every tool result.
      expect(w.completions).toBe(12);
      expect(w.latencyMs.n).toBe(6);
      expect(Number.isFinite(w.completionsPerSecond)).toBe(true);
    }
  }
  expect(r.density.points.map((p: { agents: number }) => p.agents)).toEqual([0, 10, 20]);
  expect(r.density.wake).toMatchObject({ sample: 5, exact: 5 });
  expect(Number.isFinite(r.density.slopeBytesPerAgent)).toBe(true);
  expect(r.rssTimeline.length).toBeGreaterThan(0);
  expect(readFileSync(join(out, json.replace('.json', '.svg')), 'utf8')).toMatch(/^<svg[\s\S]*<\/svg>$/);
  expect(readFileSync(join(out, json.replace('.json', '.md')), 'utf8')).toContain('| ours |');
});
