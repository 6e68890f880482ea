/**
 * What the CLI writes to a terminal (issue 38, finding 8): control characters and escape sequences from threads are
 * shown, never run; the CLI's own colours still are; a JSON line keeps its data.
 */
/* eslint-disable no-control-regex -- the control characters are what these tests look for */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventPrinter, historyLine, statusLines } from '../../src/cli/format';
import { toTerminal, visibleControls } from '../../src/cli/terminal-text';
import type { ThreadStatus } from '../../src/core/types';

const HOSTILE = '\x1b]0;pwned\x07\x1b[2J\x1b]52;c;cHduZWQ=\x07\x1bP+q\x1b\\\r\b\x00\x7f\u009b31m\u009d0;x\u009c';
/** Any character a terminal would act on, or a bidi control. */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('visibleControls', () => {
  it('writes C0 (but tab and newline), DEL, C1, line separators and bidi controls as \\u escapes', () => {
    expect(visibleControls('\x1b]0;pwned\x07\x1b[2J')).toBe('\\u001b]0;pwned\\u0007\\u001b[2J');
    expect(visibleControls('a\tb\nc\r\n')).toBe('a\tb\nc\\u000d\n');
    expect(visibleControls('\x7f\u0085\u009b\u2028\u2029')).toBe('\\u007f\\u0085\\u009b\\u2028\\u2029');
    expect(visibleControls('\u202aa\u202bb\u202cc\u202dd\u202ee\u2066f\u2067g\u2068h\u2069')).toBe(
      '\\u202aa\\u202bb\\u202cc\\u202dd\\u202ee\\u2066f\\u2067g\\u2068h\\u2069',
    );
    expect(RAW.test(visibleControls(HOSTILE))).toBe(false);
  });

  it('leaves text alone: accents, right-to-left scripts and their implicit marks, emoji', () => {
    const text = 'Café — שלום עולם \u200fمرحبا\u200e 👍 «ok» \\u001b';
    expect(visibleControls(text)).toBe(text);
  });

  it('keeps a JSON line the same data', () => {
    const value = { text: `${HOSTILE}\u2028\u202e`, args: { q: '\u0085' } };
    const line = toTerminal(JSON.stringify(value));
    expect(RAW.test(line)).toBe(false);
    expect(JSON.parse(line)).toEqual(value);
  });
});

describe('CLI lines of hostile threads', () => {
  const env = { ...process.env };
  beforeEach(() => {
    delete process.env.NO_COLOR;
    process.env.FORCE_COLOR = '1';
  });
  afterEach(() => {
    process.env = { ...env };
  });

  /** The escape sequences in `s`: only the CLI's own colours may be there. */
  const sequences = (s: string) => s.match(/\x1b[^m]*m?/g) ?? [];
  const OWN = /^\x1b\[(0|1|2|31|32|33|35|36)m$/;

  it('history: every kind of item, coloured, with the texts shown', () => {
    const lines = [
      historyLine({ kind: 'user', text: HOSTILE }),
      historyLine({ kind: 'assistant', text: `\x1b[31m fake error ${HOSTILE}` }, true),
      historyLine({ kind: 'reasoning', text: HOSTILE }),
      historyLine({ kind: 'tool_call', id: `c\x1b[2J`, name: `t\x1b]0;x\x07`, args: { q: HOSTILE } }),
      historyLine({ kind: 'tool_result', id: 'c1', content: [{ type: 'text', text: HOSTILE }] }),
    ].map(toTerminal);
    for (const line of lines) {
      expect(RAW.test(line.replace(/\x1b\[\d+m/g, ''))).toBe(false);
      expect(sequences(line).length).toBeGreaterThan(0);
      expect(sequences(line).every((s) => OWN.test(s))).toBe(true);
    }
    expect(lines[0]).toBe(
      '\x1b[1muser\x1b[0m: \\u001b]0;pwned\\u0007\\u001b[2J\\u001b]52;c;cHduZWQ=\\u0007' +
        '\\u001bP+q\\u001b\\\\u000d\\u0008\\u0000\\u007f\\u009b31m\\u009d0;x\\u009c',
    );
    // A text's own SGR is shown, not obeyed, like any other sequence.
    expect(lines[1]).toContain('\\u001b[31m fake error');
  });

  it("a forged colour tag is shown: it lacks the process's random mark", () => {
    const forged = `\u0000${'0'.repeat(16)}:31mred?`;
    expect(toTerminal(historyLine({ kind: 'user', text: forged }))).toContain('\\u0000000000');
  });

  it('status: thread ids, calls, prompts and the last error', () => {
    const status: ThreadStatus = {
      threadId: `t\x1b]0;x\x07`,
      kind: 'root',
      status: 'waiting_tool',
      pendingCall: { id: 'c\x1b[2J', name: 'tool\u009b2J', passive: false },
      historyLength: 3,
      slices: 1,
      runs: 1,
      queued: 0,
      deferred: 0,
      dropped: { [`k\x1b[2J`]: 1 } as ThreadStatus['dropped'], // a reason of a newer worker
      subscriptions: { s1: `sub\x1b]52;c;eA==\x07` },
      children: [`child\x1b[H`],
      compaction: { completed: 0 },
      prompts: [
        {
          kind: 'user_choice',
          id: 'p1',
          prompt: HOSTILE,
          choices: [HOSTILE],
          default: 0,
          responseUrl: 'http://127.0.0.1/',
          toolCallId: 'c1',
        },
        { kind: 'oauth', authUrl: `https://example.com/\x1b]0;x\x07`, toolCallId: 'c2' },
      ],
      lastError: `model said ${HOSTILE}`,
    };
    const lines = statusLines(status).map(toTerminal);
    expect(lines.length).toBeGreaterThan(6);
    for (const line of lines) {
      expect(RAW.test(line.replace(/\x1b\[\d+m/g, ''))).toBe(false);
      expect(sequences(line).every((s) => OWN.test(s))).toBe(true);
    }
    expect(lines.join('\n')).toContain('last error: model said \\u001b]0;pwned');
  });

  it('tail: live text shown however the deltas cut a sequence', () => {
    const written: string[] = [];
    const printer = new EventPrinter((s) => written.push(toTerminal(s)));
    printer.print({ threadId: 't1', type: 'completion_started', sliceId: 's1' });
    for (const text of ['hi \x1b', ']0;pwned', '\x07\x1b', '[2J bye'])
      printer.print({ threadId: 't1', type: 'text_delta', text });
    printer.print({ threadId: 't1', type: 'tool_result', toolCallId: 'c1', text: HOSTILE });
    printer.print({ threadId: 't1', type: 'info', text: HOSTILE });
    const out = written.join('');
    expect(RAW.test(out.replace(/\x1b\[\d+m/g, '').replace(/\n/g, ''))).toBe(false);
    expect(out).toContain('hi \\u001b]0;pwned\\u0007\\u001b[2J bye');
  });
});
