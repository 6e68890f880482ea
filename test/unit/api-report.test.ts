/**
 * The public API report (issue 42 §3): docs/api-report.md is what scripts/api-report.ts makes from the sources now, so
 * a change to any exported name or signature of the package root or its subpaths shows in review as a change to it.
 */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { apiReport, REPORT } from '../../scripts/api-report';

it('docs/api-report.md is up to date (npx tsx scripts/api-report.ts rewrites it)', () => {
  const now = apiReport();
  expect(now).toMatch(/## infinity-temporal \(\d+ names\)/);
  expect(now).toContain('class AgentClient');
  expect(readFileSync(REPORT, 'utf8')).toBe(now);
}, 60_000);
