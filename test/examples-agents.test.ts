/**
 * examples/agents.ts as a user runs it (`npx tsx examples/agents.ts`): two agents on one worker, a thread of the coder
 * spawning a reviewer child, whose report comes back to the coder (issue 40 §6). Its own dev server; scripted models.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPORT } from '../examples/agents';

const ROOT = join(__dirname, '..');

/** Runs the example to its end (killed after 80 s, under the test's 90): its exit code and output. */
async function runExample(): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(join(ROOT, 'node_modules', '.bin', 'tsx'), ['examples/agents.ts'], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1', DEMO_KEEP_RUNNING: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const deadline = setTimeout(() => child.kill('SIGKILL'), 80_000);
  const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
  clearTimeout(deadline);
  return { code, stdout, stderr };
}

describe('examples/agents.ts', () => {
  it('runs a coder thread whose reviewer child, of the other agent, reports back', async () => {
    const { code, stdout, stderr } = await runExample();
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const lines = stdout.split('\n');
    const at = (prefix: string) => {
      const i = lines.findIndex((l) => l.startsWith(prefix));
      expect(i, `a line starting "${prefix}" in:\n${stdout}`).toBeGreaterThanOrEqual(0);
      return i;
    };
    // The coder spawns a child of the reviewer agent; the reviewer uses its own tool and reports.
    at('[coder] → spawn_thread {"agent":"reviewer"');
    at('[reviewer] → read_diff {"file":"parse.ts"}');
    at(`[reviewer] → report_to_parent {"report":"${REPORT}"}`);
    // The report arrives in the coder's thread, and the coder answers it.
    const report = at(`[coder] ← Report from child thread: ${REPORT}`);
    expect(lines[report + 1]).toBe('[coder] says: The reviewer approved.');
    // Each thread with its own agent: a root of the coder, its child of the reviewer.
    const parent = /^parent (\S+): agent coder, root, idle$/m.exec(stdout)?.[1];
    expect(parent).toMatch(/^coder-\d+$/);
    expect(stdout).toMatch(new RegExp(`^child {2}\\S+: agent reviewer, child of ${parent}, idle$`, 'm'));
    expect(stdout).toMatch(
      /^Temporal UI, threads by agent: http:\/\/127\.0\.0\.1:\d+\/namespaces\/default\/workflows\?query=AgentName/m,
    );
    expect(stdout).toContain(`/namespaces/default/workflows/${parent}`);
  });
});
