/** Projects committed history onto the provider-neutral messages a model sees (docs/semantics.md §17). */
import { IMAGE_OMITTED, INJECTED_TOOL_NAME } from '../core/texts';
import type { HistoryItem, ToolResultContent } from '../core/types';
import type { ModelMessage } from './provider';

const withoutImages = (content: readonly ToolResultContent[]): ToolResultContent[] =>
  content.map((c) => (c.type === 'image' ? { type: 'text', text: IMAGE_OMITTED } : c));

/**
 * The messages a model sees. History keeps images; a model without image input gets the reference's placeholder
 * text instead, at request time only.
 */
export function projectHistory(items: readonly HistoryItem[], options: { images?: boolean } = {}): ModelMessage[] {
  const images = options.images ?? true;
  const shown = (content: readonly ToolResultContent[]) => (images ? [...content] : withoutImages(content));
  const callNames = new Map<string, string>();
  const out: ModelMessage[] = [];
  for (const item of items) {
    switch (item.kind) {
      case 'user':
        out.push({ role: 'user', text: item.text });
        break;
      case 'assistant':
        out.push({ role: 'assistant', text: item.text });
        break;
      case 'reasoning':
        out.push({ role: 'reasoning', text: item.text, providerMetadata: item.providerMetadata });
        break;
      case 'tool_call':
        callNames.set(item.id, item.name);
        out.push({ role: 'tool_call', id: item.id, name: item.name, args: item.args });
        break;
      case 'tool_result':
        out.push({
          role: 'tool_result',
          id: item.id,
          name: callNames.get(item.id) ?? 'unknown',
          content: shown(item.content),
        });
        break;
      case 'subscription_event':
        // Self-contained: the synthetic call and its result, so the model sees a well-formed pair.
        out.push({ role: 'tool_call', id: item.invocation.id, name: INJECTED_TOOL_NAME, args: item.invocation.args });
        out.push({
          role: 'tool_result',
          id: item.result.id,
          name: INJECTED_TOOL_NAME,
          content: shown(item.result.content),
        });
        break;
      case 'rewind':
        // A note for readers of the history: for the model, what the rewind archived never happened.
        break;
    }
  }
  return out;
}

/** The first text block of a tool result, or '' (what events and summaries show). */
export function firstText(content: readonly { type: string; text?: string }[]): string {
  for (const c of content) if (c.type === 'text' && typeof c.text === 'string') return c.text;
  return '';
}
