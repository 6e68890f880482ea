/**
 * The thread's current details in the Temporal UI (markdown; issue 17 §2): its status, the call it waits for, what a
 * pending choice asks with the exact command that answers it, what the last slice did, its last reply in full (up to
 * `LAST_REPLY_MAX_CHARS`), the inputs it dropped lately and why, and where the whole history is. Current details cost
 * no history event: the SDK answers them from memory (`__temporal_workflow_metadata`). Pure.
 */
import { CARRIED_MAX_BYTES, clipped } from '../core/state-bounds';
import type { AgentStatus, ForkPoint, PendingPrompt } from '../core/types';
import type { ThreadState } from './state';

/** Drops shown in the details (the `drops` query has more). */
const DROPS_SHOWN = 3;

/** Characters of one prompt field shown in the details. */
const FIELD_SHOWN = 300;

/**
 * A prompt's field as text, whatever it holds: the input checks see that it is a string, but the details are rendered
 * in every workflow task, so a value that slipped past them (state carried from a release without the checks) must
 * not fail one. Never calls a method of the value: an object's own `toString` key would throw.
 */
function field(v: unknown): string {
  const s =
    typeof v === 'string'
      ? v
      : typeof v === 'object' && v !== null
        ? `(${Array.isArray(v) ? 'an array' : 'an object'})`
        : String(v);
  return s.length > FIELD_SHOWN ? `${s.slice(0, FIELD_SHOWN - 1)}…` : s;
}

/** What a pending prompt asks, and how to answer it. */
function promptLine(threadId: string, p: PendingPrompt): string {
  if (p.kind === 'oauth') return `needs authorization: ${field(p.authUrl)}`;
  const choices: unknown[] = Array.isArray(p.choices) ? p.choices : [];
  const id = field(p.id);
  return (
    `asks the user: ${field(p.prompt)} [${choices.map(field).join(' / ')}] — choice \`${id}\`: answer with ` +
    `\`infinity-temporal answer ${threadId} ${id} <index>\` (${choices.map((c, i) => `${i} = ${field(c)}`).join(', ')}; ` +
    `without an index: ${field(p.default)}, the default)`
  );
}

export function currentDetails(threadId: string, st: ThreadState, status: AgentStatus, forkedFrom?: ForkPoint): string {
  const pending = st.prep.pendingCall;
  return [
    `**${status}** · ${st.length} items · ${st.slices} slices`,
    forkedFrom ? `forked from \`${forkedFrom.threadId}\` at item ${forkedFrom.at}` : '',
    // Release 0.13 (issue 40): only threads that name an agent show one.
    st.agent !== undefined ? `agent \`${st.agent}\`` : '',
    st.agentMissing
      ? `waiting for agent \`${st.agentMissing.agent}\`: ${st.agentMissing.reason !== undefined ? clipped(st.agentMissing.reason) : 'no worker defines it'} (move the thread: \`infinity-temporal agent set ${threadId} <agent>\`)`
      : '',
    pending ? `waiting for \`${pending.name}\` (call ${pending.id})` : '',
    ...st.prompts.map((p) => promptLine(threadId, p)),
    st.lastCalls && st.lastCalls.length > 0
      ? `slice ${st.slices} called ${st.lastCalls.map((c) => `\`${c}\``).join(', ')}`
      : '',
    st.lastText ? `last reply: ${clipped(st.lastText)}` : '',
    st.lastError ? `last error: ${clipped(st.lastError)}` : '',
    st.carryOverBytes !== undefined
      ? `state too large to continue as new: ${st.carryOverBytes} bytes, over ${CARRIED_MAX_BYTES}; this run goes on until its queue shrinks`
      : '',
    st.overBudget
      ? `over budget: ${st.overBudget.scope} \`${st.overBudget.key}\` ${st.overBudget.field} ${st.overBudget.spend} of ${st.overBudget.limit} (raise it: \`infinity-temporal budget set\`)`
      : '',
    st.throttled
      ? `waiting for provider capacity: \`${st.throttled.key}\` (${st.throttled.reason}), ${st.throttled.queued ? `woken when a grant is held for it, at most ${Math.ceil(st.throttled.retryAfterMs / 1000)} s` : `${Math.ceil(st.throttled.retryAfterMs / 1000)} s`}`
      : '',
    ...st.setAside
      .slice(-1)
      .map((b) => `set aside ${b.messageIds.length} inputs of ${b.sliceId}: ${clipped(b.reason)}`),
    st.recentDrops.length > 0
      ? `dropped lately (\`drops\` query): ${st.recentDrops
          .slice(-DROPS_SHOWN)
          .map((d) => `${d.what}${d.id ? ` (id ${d.id})` : ''}: ${d.reason}`)
          .join('; ')}`
      : '',
    `full history: \`infinity-temporal history ${threadId}\``,
  ]
    .filter(Boolean)
    .join('\n\n');
}
