/**
 * What the Temporal UI shows of a thread: one-line activity summaries that read like the conversation, a title, and
 * the lines of the `transcript` and `drops` queries. Pure and deterministic (workflow code).
 */
import { shortLine, titleOf } from '../core/title';
import type { HistoryItem, InputMessage, StoredItem, ToolResultContent } from '../core/types';

export { titleOf };

/** What a summary knows of the conversation so far. */
export interface SummaryContext {
  /** The tool a call id belongs to. */
  toolName(callId: string): string | undefined;
  /** `name {args}` of a call the previous slice made, when it is known. */
  callLine(callId: string): string | undefined;
  /** The previous slice's reply, when it ended the turn without a call. */
  replyBefore?: string;
  /** The thread's agent, when it names one (issue 40): the UI's event history says which agent ran each slice. */
  agent?: string;
}

/**
 * {@link shortLine} of only the start of `s`: a result or a user text may be megabytes, and these run in the workflow
 * on every slice (whitespace collapses within the start only; past it, the ellipsis says there is more).
 */
const short = (v: unknown, n: number) => {
  const s = asText(v);
  return shortLine(s.length > 4 * n ? `${s.slice(0, 4 * n)}…` : s, n);
};
const quoted = (s: unknown, n: number) => `"${short(s, n)}"`;

/**
 * Any value as text: a string as is, anything else by its kind. The input checks see that these are strings, but these
 * lines are made in workflow tasks, where a throw fails the task again on every retry: a value that slipped past the
 * checks must not. Never a method of the value (an object's own `toString` key would throw in a template).
 */
export function asText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'object' && v !== null) return Array.isArray(v) ? '(an array)' : '(an object)';
  return String(v);
}

/** The first text block's text, or ''. */
const firstText = (content: readonly ToolResultContent[]): string => {
  if (!Array.isArray(content)) return '';
  const block: unknown = content.find(
    (c: unknown) => typeof c === 'object' && c !== null && (c as { type?: unknown }).type === 'text',
  );
  const text = (block as { text?: unknown } | undefined)?.text;
  return text === undefined ? '' : asText(text);
};
/** The first line of a text, shortened: a child's static summary, the reply in a summary. */
export const firstLine = (text: string, n = 80): string => short(asText(text).trim().split('\n')[0] ?? '', n);

/**
 * `slice 3: user "is 42 green?"`, `slice 4: get_build_status {"build_id":"42"} → "green"` (the call the previous slice
 * made, answered), `slice 9: report from 1b2c… "done"`, `… — after reply "Build 42 is green."` when the previous
 * slice ended its turn with a reply. The summary is fixed when the slice is scheduled, before its own outcome exists:
 * what a slice did shows in the next one's summary, in its result, and in the thread's current details.
 */
export function sliceSummary(n: number, append: readonly StoredItem[], ctx: SummaryContext, retry: boolean): string {
  const parts = append.map(({ item }) => {
    switch (item.kind) {
      case 'user':
        return `user ${quoted(titleOf(asText(item.text).slice(0, 400)), 60)}`;
      case 'tool_result': {
        const call = ctx.callLine(item.id) ?? `result of ${ctx.toolName(item.id) ?? asText(item.id)}`;
        return `${short(call, 90)} → ${quoted(firstText(item.content), 50)}`;
      }
      case 'subscription_event': {
        const text = quoted(firstText(item.result.content), 50);
        return item.childThreadId
          ? `report from ${asText(item.childThreadId).slice(0, 8)}… ${text}`
          : `event of ${ctx.toolName(item.toolCallId) ?? asText(item.toolCallId)} ${text}`;
      }
      case 'tool_call':
        return `call ${asText(item.name)}`;
      default:
        return item.kind;
    }
  });
  const what = parts.join(', ') || 'continue';
  const after =
    ctx.replyBefore !== undefined && append[0]?.item.kind === 'user'
      ? ` — after reply ${quoted(firstLine(ctx.replyBefore), 50)}`
      : '';
  const agent = ctx.agent !== undefined ? ` (${ctx.agent})` : '';
  return short(`slice ${n}${agent}: ${retry ? 'retry of ' : ''}${what}${after}`, 200);
}

/** One line of the `transcript` query for an item the thread handed to a slice. */
export function itemLine(item: HistoryItem, toolName: (callId: string) => string | undefined): string {
  switch (item.kind) {
    case 'user':
      return short(`user: ${asText(item.text)}`, 300);
    case 'tool_result':
      return short(`result of ${toolName(item.id) ?? asText(item.id)}: ${firstText(item.content)}`, 300);
    case 'subscription_event':
      return short(
        `${item.childThreadId ? `report from ${asText(item.childThreadId)}` : `event of ${toolName(item.toolCallId) ?? asText(item.toolCallId)}`}: ${firstText(item.result.content)}`,
        300,
      );
    case 'tool_call':
      return short(`call ${asText(item.name)}`, 300);
    case 'rewind':
      return `rewound to item ${item.to} (branch ${item.branch} archived)`;
    default:
      return short(`${item.kind}: ${asText(item.text)}`, 300);
  }
}

/** What a dropped input was, in a few words: `user "hello"`, `result of get_build_status (call 1a2b…)`. */
export function inputLine(m: InputMessage, toolName: (callId: string) => string | undefined): string {
  const c = m.content;
  const syn = m.synthetic;
  if (syn?.type === 'thread_report') return `report from ${asText(syn.childThreadId)}`;
  if (syn?.type === 'parent_message') return 'message from the parent thread';
  if (syn?.type === 'subscription_event')
    return `event of ${toolName(syn.toolCallId) ?? `call ${asText(syn.toolCallId)}`}`;
  if (syn !== undefined) return asText(syn.type);
  if (c.type === 'text') return `user ${quoted(c.text, 60)}`;
  return `result of ${toolName(c.toolCallId) ?? 'a call'} (call ${asText(c.toolCallId)})`;
}
