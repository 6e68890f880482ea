/**
 * How the CLI prints events and history: coloured on a terminal, plain when piped, JSON lines with `--json`. The lines
 * quote threads as they are; `buildProgram` writes each through `toTerminal` (terminal-text.ts), which shows control
 * characters and escape sequences instead of letting the terminal act on them, and turns `colour.*` into colours.
 */
import type { HistoryItem, ThreadEvent, ThreadStatus } from '../core/types';
import { firstText } from '../model/projection';
import { styled } from './terminal-text';

/**
 * Where a command writes its output, one line at a time (standard output, or a test's collector). The `out` a command
 * is given makes each line safe for a terminal (`toTerminal`): write every line through it.
 */
export type Out = (line: string) => void;

const useColour = (): boolean =>
  process.env.NO_COLOR === undefined && (process.env.FORCE_COLOR !== undefined || process.stdout.isTTY === true);

/** Marked for `toTerminal`, which writes the colour (only there: a text's own escape sequences are shown, not run). */
const paint = (code: number) => (s: string) => (useColour() ? styled(code, s) : s);
export const colour = {
  dim: paint(2),
  bold: paint(1),
  red: paint(31),
  green: paint(32),
  yellow: paint(33),
  cyan: paint(36),
  magenta: paint(35),
};

const short = (v: unknown, n = 160) => {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
};

/** One history item as one line (long texts shortened unless `full`). */
export function historyLine(item: HistoryItem, full = false): string {
  const cut = (s: string) => (full ? s : short(s, 400));
  switch (item.kind) {
    case 'user':
      return `${colour.bold('user')}: ${cut(item.text)}`;
    case 'assistant':
      return `${colour.cyan('assistant')}: ${cut(item.text)}`;
    case 'reasoning':
      return colour.dim(`reasoning: ${cut(item.text)}`);
    case 'tool_call':
      return `${colour.magenta('call')} ${item.name} ${short(item.args)} ${colour.dim(`(${item.id})`)}`;
    case 'tool_result':
      return `${colour.green('result')} ${colour.dim(`(${item.id})`)}: ${cut(firstText(item.content))}`;
    case 'subscription_event':
      return `${colour.yellow('event')} ${colour.dim(`(for ${item.toolCallId})`)}: ${cut(firstText(item.result.content))}`;
    case 'rewind':
      return colour.dim(`rewound to item ${item.to} (what came after it: history --branch ${item.branch})`);
  }
}

/**
 * Renders live events as a transcript: text deltas run on, everything else gets its own line. Keeps the state of
 * the line it is on.
 */
export class EventPrinter {
  private midLine = false;

  constructor(private readonly write: (s: string) => void) {}

  private line(s: string): void {
    this.write(`${this.midLine ? '\n' : ''}${s}\n`);
    this.midLine = false;
  }

  print(e: ThreadEvent): void {
    switch (e.type) {
      case 'text_delta':
      case 'thinking_delta':
        this.write(e.type === 'text_delta' ? e.text : colour.dim(e.text));
        this.midLine = true;
        return;
      case 'user_input':
        return this.line(`${colour.bold('user')}: ${e.text}`);
      case 'completion_started':
        this.write(`${this.midLine ? '\n' : ''}${colour.cyan('assistant')}: `);
        this.midLine = true;
        return;
      case 'thinking_started':
      case 'thinking_ended':
        return;
      case 'tool_call':
        return this.line(`${colour.magenta('→')} ${e.name} ${short(e.args)}`);
      case 'tool_result':
        return this.line(`${colour.green('←')} ${short(e.text, 400)}`);
      case 'event':
        return this.line(
          `${colour.green('⇐')} ${e.childThreadId ? `report from ${e.childThreadId}` : `event of ${e.toolName ?? e.toolCallId}`}: ${short(e.text, 400)}`,
        );
      case 'compaction_applied':
        return this.line(colour.dim(`(compacted: the first ${e.upTo} items are summarized by ${e.sourceThreadId})`));
      case 'completion_finished':
        if (this.midLine) this.line('');
        return;
      case 'info':
        return this.line(colour.yellow(e.text));
      case 'status':
        return this.line(colour.dim(`(${e.status})`));
      case 'replay_gap':
        return this.line(colour.yellow('(some live events were missed; `history` has everything committed)'));
      case 'prompt':
        return this.line(
          colour.yellow(
            e.prompt.kind === 'oauth'
              ? `authorization needed: open ${e.prompt.authUrl}`
              : `the tool asks: ${e.prompt.prompt} ${e.prompt.choices.map((c, i) => `[${i}] ${c}`).join('  ')} (default ${e.prompt.default})`,
          ),
        );
      case 'view_update':
        return this.line(colour.dim(`(view ${e.viewType} updated)`));
    }
  }
}

export function statusLines(s: ThreadStatus): string[] {
  const lines = [
    `${colour.bold(s.threadId)} ${s.kind} ${colour.cyan(s.status)}`,
    `items ${s.historyLength} · slices ${s.slices} · runs ${s.runs} · queued ${s.queued} · deferred ${s.deferred}`,
  ];
  if (s.agent) lines.push(`agent ${s.agent}`);
  if (s.agentUnavailable)
    lines.push(
      colour.yellow(
        `waiting for agent ${s.agentUnavailable.agent}: ${s.agentUnavailable.reason ?? 'no worker defines it'} (${s.agentUnavailable.checks} checks;` +
          ` known: ${s.agentUnavailable.known?.join(', ') || 'none'}); move it with \`agent set\``,
      ),
    );
  if (s.parentThreadId) lines.push(`parent ${s.parentThreadId}`);
  if (s.forkedFrom) lines.push(`forked from ${s.forkedFrom.threadId} at item ${s.forkedFrom.at}`);
  // A closed thread's last call (close_thread) is pending for good: it waits for nothing.
  if (s.pendingCall && s.status !== 'closed') lines.push(`waiting for ${s.pendingCall.name} (${s.pendingCall.id})`);
  if (s.children.length) lines.push(`children ${s.children.join(', ')}`);
  const subs = Object.entries(s.subscriptions);
  if (subs.length) lines.push(`subscriptions ${subs.map(([id, name]) => `${name} (${id})`).join(', ')}`);
  if (s.usage) lines.push(`tokens ${s.usage.inputTokens ?? '?'} in · ${s.usage.outputTokens ?? '?'} out`);
  if (s.compaction.completed || s.compaction.running) {
    lines.push(
      `compactions ${s.compaction.completed}${s.compaction.running ? ` (running: ${s.compaction.running})` : ''}`,
    );
  }
  const dropped = Object.entries(s.dropped);
  if (dropped.length) lines.push(`dropped ${dropped.map(([k, v]) => `${k} ${v}`).join(', ')}`);
  for (const p of s.prompts) {
    lines.push(
      colour.yellow(
        p.kind === 'oauth'
          ? `needs authorization: ${p.authUrl}`
          : `asks (choice ${p.id}): ${p.prompt} ${p.choices.map((c, i) => `[${i}] ${c}`).join('  ')}`,
      ),
    );
  }
  if (s.lastError) lines.push(colour.red(`last error: ${s.lastError}`));
  return lines;
}
