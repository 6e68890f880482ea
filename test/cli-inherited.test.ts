/**
 * `history` and `tail` of forks and children as real processes (issue 42 §2): what a thread inherits comes first,
 * under a header naming the thread it comes from, then a line that marks where the thread's own items begin; `--json`
 * marks inherited items with `inheritedFrom`; `--own` shows the thread's own items alone; a thread without items is
 * no error. The threads run on an in-process worker (a scripted model that spawns children) on the suite's dev server;
 * the CLI reads its store.
 */
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { HistoryItem } from '../src/core/types';
import { ScriptedModel } from '../src/model/scripted';
import { cliRunner, jsonLines } from './cli-process';
import { treeScript, treeTools } from './fixtures/tree-script';
import { startTestSystem, type TestSystem, uid } from './helpers';

type Line = HistoryItem & { inheritedFrom?: string };

let sys: TestSystem;
const runner = cliRunner(
  () => ['--address', inject('temporalAddress'), '--task-queue', sys.taskQueue, '--store', sys.storePath],
  {},
);
const cli = runner.run;

beforeAll(async () => {
  sys = await startTestSystem({ model: new ScriptedModel(treeScript), tools: treeTools() });
});
afterAll(async () => {
  await sys?.shutdown();
});

it("a fresh fork shows its source's items, then where its own begin; --json marks them; --own has none (exit 0)", async () => {
  const source = uid('src');
  await (await sys.client.startThread({ threadId: source })).sendUserText('hello');
  await sys.client.thread(source).waitForIdle({ settled: true });
  const sourceItems = await sys.client.thread(source).history();
  expect(sourceItems).toEqual([
    { kind: 'user', text: 'hello' },
    { kind: 'assistant', text: 'ok: hello' },
  ]);
  const fork = uid('fork');
  expect((await cli('fork', source, '--at', 'now', '--as', fork)).code).toBe(0);

  expect(await cli('history', fork)).toEqual({
    code: 0,
    stdout: [
      `── inherited from ${source}: its first 2 items ──`,
      'user: hello',
      'assistant: ok: hello',
      `── ${fork}: its own items (forked from ${source} at item 2) ──`,
      '(none yet)',
      '',
    ].join('\n'),
    stderr: '',
  });
  const json = await cli('history', fork, '--json');
  expect(json.code).toBe(0);
  expect(jsonLines<Line>(json.stdout)).toEqual(sourceItems.map((item) => ({ ...item, inheritedFrom: source })));
  expect(await cli('history', fork, '--own', '--json')).toEqual({ code: 0, stdout: '', stderr: '' });
  expect(await cli('history', fork, '--own')).toEqual({ code: 0, stdout: '(no items of its own yet)\n', stderr: '' });
  // tail: the same prefix, before the fork's own items (none: it is idle, so --until-idle ends at once).
  const tail = await cli('tail', fork, '--until-idle', '--json');
  expect(tail.code).toBe(0);
  expect(jsonLines(tail.stdout)).toEqual(sourceItems.map((item) => ({ history: item, inheritedFrom: source })));

  // Once the fork has items of its own, they follow the inherited ones, unmarked.
  await sys.client.thread(fork).sendUserText('again');
  await sys.client.thread(fork).waitForIdle({ settled: true });
  const whole = jsonLines<Line>((await cli('history', fork, '--json')).stdout);
  const own = [
    { kind: 'user', text: 'again' },
    { kind: 'assistant', text: 'ok: again' },
  ];
  expect(whole).toEqual([...sourceItems.map((item) => ({ ...item, inheritedFrom: source })), ...own]);
  expect(jsonLines((await cli('history', fork, '--own', '--json')).stdout)).toEqual(own);
  // The API's inherited view holds the same items.
  expect(whole.map(({ inheritedFrom: _, ...item }) => item)).toEqual(
    await sys.client.thread(fork).history({ inherited: true }),
  );
  const human = await cli('tail', fork, '--until-idle');
  expect(human.code).toBe(0);
  expect(human.stdout).toBe(
    [
      `── inherited from ${source}: its first 2 items ──`,
      'user: hello',
      'assistant: ok: hello',
      `── ${fork}: its own items (forked from ${source} at item 2) ──`,
      'user: again',
      'assistant: ok: again',
      '',
    ].join('\n'),
  );
  // The source shows its own items, unmarked, as before.
  expect(await cli('history', source)).toEqual({
    code: 0,
    stdout: 'user: hello\nassistant: ok: hello\n',
    stderr: '',
  });
});

it("a child shows its parent's items up to its spawn, then its own; a fork of the child shows both parts", async () => {
  const root = uid('root');
  await (await sys.client.startThread({ threadId: root })).sendUserText('spawn wait:W');
  const [child] = (await sys.client.thread(root).waitForIdle({ settled: true })).children;
  expect(child).toBeDefined();
  await sys.client.thread(child!).waitForIdle(); // waiting for child_wait
  const ownOfChild = await sys.client.thread(child!).history();
  const all = await sys.client.thread(child!).history({ inherited: true });
  const spawnedAt = all.length - ownOfChild.length;
  expect(spawnedAt).toBeGreaterThan(0);
  expect(all.slice(0, spawnedAt)).toEqual((await sys.client.thread(root).history()).slice(0, spawnedAt));

  const json = await cli('history', child!, '--json');
  expect(json.code).toBe(0);
  expect(jsonLines<Line>(json.stdout)).toEqual([
    ...all.slice(0, spawnedAt).map((item) => ({ ...item, inheritedFrom: root })),
    ...ownOfChild,
  ]);
  const human = await cli('history', child!);
  expect(human.code).toBe(0);
  const lines = human.stdout.split('\n');
  expect(lines[0]).toBe(`── inherited from ${root}: its first ${spawnedAt} items ──`);
  expect(lines[spawnedAt + 1]).toBe(`── ${child}: its own items (a child of ${root}, spawned at item ${spawnedAt}) ──`);
  expect(lines.filter((l) => l.startsWith('──'))).toHaveLength(2);

  // A fork of the child inherits from both, each part marked with its thread.
  const fork = uid('fork-of-child');
  expect((await cli('fork', child!, '--at', String(ownOfChild.length), '--as', fork)).code).toBe(0);
  const forkLines = jsonLines<Line>((await cli('history', fork, '--json')).stdout);
  // (Its own items, the interrupted child_wait and what follows, may be there already: they carry no mark.)
  expect(forkLines.filter((l) => l.inheritedFrom !== undefined).map((l) => l.inheritedFrom)).toEqual([
    ...Array<string>(spawnedAt).fill(root),
    ...Array<string>(ownOfChild.length).fill(child!),
  ]);
  const forkHuman = (await cli('history', fork)).stdout.split('\n');
  expect(forkHuman.filter((l) => l.startsWith('──'))).toEqual([
    `── inherited from ${root}: its first ${spawnedAt} items ──`,
    `── inherited from ${child}: its first ${ownOfChild.length} items ──`,
    `── ${fork}: its own items (forked from ${child} at item ${ownOfChild.length}) ──`,
  ]);
});

it('tail without live events follows a fork in JSON: inherited items, then its own as they commit', async () => {
  const source = uid('src');
  await (await sys.client.startThread({ threadId: source })).sendUserText('hello');
  await sys.client.thread(source).waitForIdle({ settled: true });
  const fork = uid('fork');
  expect((await cli('fork', source, '--at', 'now', '--as', fork, '--send', 'call wait_for_ci {}')).code).toBe(0);
  const waiting = await sys.client.thread(fork).waitForIdle(); // waiting for wait_for_ci
  expect(waiting.pendingCall?.name).toBe('wait_for_ci');
  // Not settled, and no events endpoint: tail follows the committed history until the thread is idle.
  const tail = runner.run('tail', fork, '--until-idle', '--json', '--poll-ms', '100');
  await new Promise((r) => setTimeout(r, 1000));
  expect((await cli('deliver', fork, '--call', waiting.pendingCall!.id, '--text', 'green')).code).toBe(0);
  const done = await tail;
  expect(done.code).toBe(0);
  expect(done.stderr).toContain('following committed history instead');
  const own = await sys.client.thread(fork).history();
  expect(own.at(-1)).toEqual({ kind: 'assistant', text: 'ok: green' });
  expect(jsonLines(done.stdout)).toEqual([
    { history: { kind: 'user', text: 'hello' }, inheritedFrom: source },
    { history: { kind: 'assistant', text: 'ok: hello' }, inheritedFrom: source },
    ...own.map((item) => ({ history: item })),
  ]);
});

it('a thread with no items and nothing inherited prints "no committed items yet" (exit 0); an unknown one exits 2', async () => {
  const empty = uid('empty');
  await sys.client.startThread({ threadId: empty });
  expect(await cli('history', empty)).toEqual({ code: 0, stdout: '(no committed items yet)\n', stderr: '' });
  expect(await cli('history', empty, '--json')).toEqual({ code: 0, stdout: '', stderr: '' });
  expect(await cli('tail', empty, '--until-idle', '--json')).toEqual({ code: 0, stdout: '', stderr: '' });

  const unknown = await cli('history', uid('nobody'));
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain('has no committed history in');
  expect(unknown.stderr).toContain('and no workflow of that id');
});
