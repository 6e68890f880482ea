/**
 * Issue 38 §2 and §6, generated from the shapes: every field of the thread's start input (`ThreadWorkflowArgs`) and of
 * the state a run carries (`CarriedState`), listed by the TypeScript compiler from src/workflows/contract.ts (a field
 * added there is covered without editing this file), takes every hostile value below, at its bound and past it. The
 * run must restore without throwing, carry a state within its bound (or decline to continue, saying how large it
 * would be), and never take carried state or a foreign identity from a start that no continue-as-new made.
 */
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import {
  CARRIED_MAX_BYTES,
  ID_WINDOW_MAX_BYTES,
  jsonBytes,
  longIdError,
  MAX_ID_CHARS,
  newestWithin,
  STATUS_MAX_BYTES,
  utf8Bytes,
} from '../../src/core/state-bounds';
import type { ThreadStatus } from '../../src/core/types';
import { nextRunWithin } from '../../src/workflows/continue-as-new';
import type { CarriedState } from '../../src/workflows/contract';
import { carryState, DEDUP_WINDOW, restoreState, threadArgs } from '../../src/workflows/state';
import { withinStatusBound } from '../../src/workflows/status-view';

/** The property names of an interface of contract.ts, as the compiler sees them. */
function fieldsOf(name: string): string[] {
  const file = join(__dirname, '..', '..', 'src', 'workflows', 'contract.ts');
  const program = ts.createProgram([file], { strict: true, noEmit: true });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file)!;
  let found: string[] | undefined;
  ts.forEachChild(source, (node) => {
    if (ts.isInterfaceDeclaration(node) && node.name.text === name)
      found = checker.getPropertiesOfType(checker.getTypeAtLocation(node)).map((p) => p.name);
  });
  if (!found) throw new Error(`no interface ${name} in contract.ts`);
  return found;
}

const BIG = 'x'.repeat(70 * 1024);
const LONG_ID = (i: number) => `${i}-${'i'.repeat(60 * 1024)}`;
/** Wrong types, empty and junk shapes, and sizes at and past every bound. */
const HOSTILE: [string, unknown][] = [
  ['undefined', undefined],
  ['null', null],
  ['a number', 5],
  ['a negative number', -3],
  ['a string', 'x'],
  ['true', true],
  ['an empty object', {}],
  ['an empty array', []],
  ['an array of numbers', [1, 2]],
  ['an array of strings', ['a', 'b']],
  ['an array of pairs', [['a', 'b']]],
  ['an object of junk', { a: 1, toString: 2, id: 5, kind: {}, toolCallId: [] }],
  ['a 70 KiB string', BIG],
  ['40 strings of 70 KiB', Array.from({ length: 40 }, (_, i) => `${i}${BIG}`)],
  ['600 ids of 60 KiB', Array.from({ length: 600 }, (_, i) => LONG_ID(i))],
  [
    '40 objects with 70 KiB strings',
    Array.from({ length: 40 }, (_, i) => ({
      id: `${i}`,
      toolCallId: 'c',
      kind: 'oauth',
      authUrl: BIG,
      sliceId: 's',
      reason: BIG,
      messageIds: [BIG],
      answeredWithError: [],
      what: BIG,
    })),
  ],
];

/** A carried state with every optional part set, as a real run would carry it. */
function fullCarried(): CarriedState {
  const st = restoreState({ threadId: 't', kind: 'root' });
  st.prep.processedInputIds = new Set(['a', 'b']);
  st.prep.rewound = new Set(['r']);
  st.overBudget = { scope: 'thread', key: 't', field: 'tokens', limit: 1, spend: 2 } as never;
  st.budgetUpdates = [{ scope: 'thread', budget: null } as never];
  st.acks = [['a', '0000abcd']];
  st.lastText = 'hi';
  st.lastError = 'oops';
  return carryState(st, DEDUP_WINDOW);
}

const continued = { workflowId: 't', continued: true };

describe('every field of the carried state, every hostile value', () => {
  const fields = fieldsOf('CarriedState');
  it('lists the fields from the contract', () => {
    expect(fields).toEqual(expect.arrayContaining(['processedInputIds', 'prompts', 'setAside', 'acks', 'rewound']));
    // Every field the contract names is one a real run carries (or an optional one the template sets).
    expect(Object.keys(fullCarried()).sort()).toEqual([...fields].sort());
  });
  for (const field of fields) {
    it.each(HOSTILE)(`${field} as %s: restores, and carries within the bound or declines`, (_n, value) => {
      const carried = { ...fullCarried(), [field]: value };
      const { args } = threadArgs({ threadId: 't', kind: 'root', carried }, continued);
      const st = restoreState(args);
      const next = nextRunWithin(args, st);
      if ('overBytes' in next) expect(next.overBytes).toBeGreaterThan(CARRIED_MAX_BYTES);
      else expect(jsonBytes(next)).toBeLessThanOrEqual(CARRIED_MAX_BYTES);
      // The parts the run can shed are within their own bounds, whatever came in.
      const c = carryState(st, DEDUP_WINDOW);
      for (const ids of [c.processedInputIds, c.processedToolCalls, c.rewound ?? []])
        expect(jsonBytes(ids)).toBeLessThanOrEqual(ID_WINDOW_MAX_BYTES + ids.length + 2);
      expect((c.lastText ?? '').length).toBeLessThanOrEqual(2000);
      expect((c.lastError ?? '').length).toBeLessThanOrEqual(2000);
      for (const b of c.setAside ?? []) expect(b.messageIds.length).toBeLessThanOrEqual(100);
      // A thread waits on a limit only of the shape a raise can clear.
      if (st.overBudget) expect(typeof st.overBudget.key).toBe('string');
    });
  }
});

describe('every field of the start input, every hostile value, on a start no continue-as-new made', () => {
  const fields = fieldsOf('ThreadWorkflowArgs');
  it('lists the fields from the contract', () => {
    expect(fields).toEqual(expect.arrayContaining(['threadId', 'kind', 'spawn', 'carried', 'seed', 'firstInput']));
  });
  for (const field of fields) {
    it.each(HOSTILE)(`${field} as %s: the thread is its workflow, with no carried state`, (_n, value) => {
      const { args, refused } = threadArgs({ [field]: value }, { workflowId: 'w', continued: false });
      expect(args.threadId).toBe('w');
      expect(args.carried).toBeUndefined();
      expect(['root', 'child', 'event', 'compaction']).toContain(args.kind);
      // No parent: nothing can make it a child.
      expect(args.kind).toBe('root');
      expect(args.spawn).toBeUndefined();
      const st = restoreState(args);
      expect(st.length).toBe(0);
      expect(() => nextRunWithin(args, st)).not.toThrow();
      if (field === 'threadId' && value !== undefined && value !== 'w' && value !== '') expect(refused).not.toEqual([]);
      if (field === 'carried' && value !== null && typeof value === 'object' && !Array.isArray(value))
        expect(refused.join()).toMatch(/carried/);
    });
  }

  it("a child's spawn is kept only under the Temporal parent it names", () => {
    const spawn = { parentThreadId: 'p', toolCallId: 'c', order: 3 };
    expect(
      threadArgs({ kind: 'child', spawn }, { workflowId: 'w', parentWorkflowId: 'p', continued: false }).args,
    ).toMatchObject({ kind: 'child', spawn });
    const other = threadArgs({ kind: 'child', spawn }, { workflowId: 'w', parentWorkflowId: 'q', continued: true });
    expect(other.args.kind).toBe('root');
    expect(other.args.spawn).toBeUndefined();
    expect(other.refused.join()).toMatch(/parent q/);
  });
});

describe('the bounds themselves', () => {
  it('counts UTF-8 bytes as Buffer does', () => {
    // Lone surrogates are encoded as U+FFFD (3 bytes), as Buffer does.
    for (const s of ['', 'abc', 'é', '漢字', '😀', 'a\ud800b', '\udc00'])
      expect(utf8Bytes(s)).toBe(Buffer.byteLength(s));
  });

  it('keeps the newest that fit, in order', () => {
    expect(newestWithin(['a', 'b', 'c'], 2, 100)).toEqual(['b', 'c']);
    expect(newestWithin(['aaaa', 'b', 'c'], 10, 9)).toEqual(['b', 'c']);
    expect(newestWithin([], 10, 10)).toEqual([]);
  });

  it('refuses ids past the entry bound, and only those', () => {
    const m = (id: string) => ({ id, threadId: 't', content: { type: 'text' } });
    expect(longIdError(m('x'.repeat(MAX_ID_CHARS)))).toBeUndefined();
    expect(longIdError(m('x'.repeat(MAX_ID_CHARS + 1)))).toMatch(/^id has 1001 characters/);
    expect(
      longIdError({ id: 'a', threadId: 't', content: { type: 'tool_result', toolCallId: 'c'.repeat(5000) } }),
    ).toMatch(/content.toolCallId/);
  });

  it('a status answer stays within its bound, naming what it left out', () => {
    const prompt = { kind: 'oauth' as const, authUrl: BIG, toolCallId: 'c' };
    const s: ThreadStatus = {
      threadId: 't',
      kind: 'root',
      status: 'idle',
      pendingCall: null,
      historyLength: 0,
      slices: 0,
      runs: 1,
      queued: 0,
      deferred: 0,
      dropped: {},
      subscriptions: {},
      children: Array.from({ length: 20_000 }, (_, i) => `child-${i}-${'c'.repeat(30)}`),
      compaction: { completed: 0 },
      prompts: Array.from({ length: 20 }, () => prompt),
    };
    const bounded = withinStatusBound(s);
    expect(jsonBytes(bounded)).toBeLessThanOrEqual(STATUS_MAX_BYTES);
    expect(bounded.truncated).toEqual(expect.arrayContaining(['prompts']));
    expect(bounded.children.at(-1)).toBe(s.children.at(-1));
    const small = { ...s, children: [], prompts: [] };
    expect(withinStatusBound(small)).toBe(small);
  });
});
