/**
 * The thread's current details in the Temporal UI (markdown; issue 17 §2): its status, the call it waits for, what a
 * pending choice asks with the exact command that answers it, what the last slice did, its last reply in full (up to
 * `LAST_REPLY_MAX_CHARS`), the inputs it dropped lately and why, and where the whole history is. Current details cost
 * no history event: the SDK answers them from memory (`__temporal_workflow_metadata`). Pure.
 */
import type { AgentStatus } from '../core/types';
import type { ThreadState } from './state';

/** Drops shown in the details (the `drops` query has more). */
const DROPS_SHOWN = 3;

export function currentDetails(threadId: string, st: ThreadState, status: AgentStatus): string {
  const pending = st.prep.pendingCall;
  return [
    `**${status}** · ${st.length} items · ${st.slices} slices`,
    pending ? `waiting for \`${pending.name}\` (call ${pending.id})` : '',
    ...st.prompts.map((p) =>
      p.kind === 'oauth'
        ? `needs authorization: ${p.authUrl}`
        : `asks the user: ${p.prompt} [${p.choices.join(' / ')}] — choice \`${p.id}\`: answer with ` +
          `\`infinity-temporal answer ${threadId} ${p.id} <index>\` (${p.choices.map((c, i) => `${i} = ${c}`).join(', ')}; ` +
          `without an index: ${p.default}, the default)`,
    ),
    st.lastCalls && st.lastCalls.length > 0
      ? `slice ${st.slices} called ${st.lastCalls.map((c) => `\`${c}\``).join(', ')}`
      : '',
    st.lastText ? `last reply: ${st.lastText}` : '',
    st.lastError ? `last error: ${st.lastError}` : '',
    ...st.setAside.slice(-1).map((b) => `set aside ${b.messageIds.length} inputs of ${b.sliceId}: ${b.reason}`),
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
