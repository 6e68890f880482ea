/** Pure builders of input messages, usable from workflow code. */
import { messageIds } from './ids';
import type { InputMessage, SyntheticKind, ToolResultContent } from './types';

export function textContent(text: string): ToolResultContent[] {
  return [{ type: 'text', text }];
}

/** The result of `toolCallId`, with the dedup id a tool's own result gets unless `id` is given. */
export function resultInput(
  threadId: string,
  toolCallId: string,
  content: string | ToolResultContent[],
  id?: string,
): InputMessage {
  return {
    id: id ?? messageIds.toolResult(toolCallId),
    threadId,
    content: { type: 'tool_result', toolCallId, content: typeof content === 'string' ? textContent(content) : content },
  };
}

/** A runtime-generated input tied to `toolCallId` (a report, a parent message). */
export function syntheticInput(
  id: string,
  threadId: string,
  synthetic: SyntheticKind & { toolCallId: string },
  text: string,
): InputMessage {
  return {
    id,
    threadId,
    content: { type: 'tool_result', toolCallId: synthetic.toolCallId, content: textContent(text) },
    synthetic,
  };
}

/** Asks a thread to compact its history (docs/semantics.md §12); automatic or from `thread.compact()`. */
export function compactionInput(id: string, threadId: string): InputMessage {
  return { id, threadId, content: { type: 'text', text: '' }, synthetic: { type: 'compaction' } };
}

/** A compaction thread tells its parent that it finished (docs/semantics.md §12). */
export function compactionCompleteInput(id: string, threadId: string, text: string): InputMessage {
  return {
    id,
    threadId,
    content: { type: 'tool_result', toolCallId: '', content: textContent(text) },
    synthetic: { type: 'compaction_complete' },
  };
}

/** Rewinds a thread to its first `to` own items (issue 28 §2); from `thread.rewind()`. */
export function rewindInput(id: string, threadId: string, to: number): InputMessage {
  return { id, threadId, content: { type: 'text', text: '' }, synthetic: { type: 'rewind', to } };
}

/**
 * Asks a thread to continue as new onto the release its workers now run (issue 39): from `migrateThreads`. Carries no
 * text and never enters the conversation.
 */
export function migrateInput(id: string, threadId: string): InputMessage {
  return { id, threadId, content: { type: 'text', text: '' }, synthetic: { type: 'migrate' } };
}

/** Moves a thread to another agent (issue 40): from `AgentClient.setAgent`. Carries no text, never in the conversation. */
export function setAgentInput(id: string, threadId: string, agent: string): InputMessage {
  return { id, threadId, content: { type: 'text', text: '' }, synthetic: { type: 'set_agent', agent } };
}
