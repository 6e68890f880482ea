/** Reading what a scripted model was sent: which thread asked, a message's text, whether a seed was in the request. */
import { firstText } from '../src/model/projection';
import type { ModelMessage, ModelRequest } from '../src/model/provider';

/** The thread a request is for (the system prompt names it). */
export const selfOf = (req: ModelRequest) => /Your current thread ID is `([^`]+)`/.exec(req.system)?.[1] ?? '';

/** A message's text: a user's or assistant's text, a tool result's first text block; '' for anything else. */
export const textOf = (m: ModelMessage | undefined): string =>
  m === undefined
    ? ''
    : m.role === 'user' || m.role === 'assistant'
      ? m.text
      : m.role === 'tool_result'
        ? firstText(m.content)
        : '';

/** Whether a tool result in the request holds `seed` (a spawned or compaction thread's first input). */
export const seededWith = (req: ModelRequest, seed: string) =>
  req.messages.some((m) => m.role === 'tool_result' && textOf(m).includes(seed));
