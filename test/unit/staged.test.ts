/**
 * Staged inputs without a server: the staged forms and their validation, the error result that replaces an output over
 * the limit, and the slice's resolution against a real SQLite store (interrupt prefixes, events, lost or altered blobs).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveStaged } from '../../src/activities/staged-inputs';
import { OVERSIZE_HEAD_CHARS, oversizeInput, PREVIEW_CHARS, stagedForm, stagedPayload } from '../../src/core/staged';
import { INTERRUPT_PREFIX } from '../../src/core/texts';
import type { InputMessage, StagedRef, StoredItem, ToolResultContent } from '../../src/core/types';
import { validateInputMessage } from '../../src/core/validate';
import { SqliteConversationStore } from '../../src/store/sqlite';

const file = join(mkdtempSync(join(tmpdir(), 'staged-')), 'store.sqlite');
const store = new SqliteConversationStore(file);
afterAll(() => store.close());

const text = `a${'🚀'.repeat(100)}${'ünïcødé '.repeat(40_000)}`; // a surrogate pair straddles character 200
const preview = `a${'🚀'.repeat(99)}`; // never half of it
const image = { type: 'image', data: 'iVBORw0KGgo'.repeat(20_000), mediaType: 'image/png' } as const;
const result: InputMessage = {
  id: 'r1',
  threadId: 't',
  content: { type: 'tool_result', toolCallId: 'c1', content: [{ type: 'text', text }, image] },
  displayAs: [{ type: 'diff', content: { path: 'a.ts', patch: '+x' } }],
};

/** Stages `input` as a client would and returns the staged form. */
async function stage(input: InputMessage): Promise<InputMessage> {
  return stagedForm(input, await store.stageInput(Buffer.from(stagedPayload(input))));
}

describe('staged forms', () => {
  it('keep a preview and a reference, and the workflow accepts them', async () => {
    const user = await stage({ id: 'u1', threadId: 't', content: { type: 'text', text } });
    expect(user.content).toEqual({
      type: 'text',
      text: preview,
      staged: expect.objectContaining({ bytes: Buffer.byteLength(text) }),
    });
    expect(preview.length).toBe(PREVIEW_CHARS - 1);
    const staged = await stage(result);
    expect(staged).not.toHaveProperty('displayAs');
    expect(JSON.stringify(staged).length).toBeLessThan(600);
    expect(validateInputMessage(user).ok && validateInputMessage(staged).ok).toBe(true);
  });

  it('are refused when the reference is not one', () => {
    const bad = (staged: unknown) =>
      validateInputMessage({
        id: 'x',
        threadId: 't',
        content: { type: 'tool_result', toolCallId: 'c', content: [{ type: 'text', text: '', staged }] },
      });
    expect(bad({ id: 'a', sha256: 'A'.repeat(64), bytes: 1 })).toEqual({
      ok: false,
      error: 'input.content.content[0].staged sha256 must be 64 lowercase hex digits',
    });
    expect(bad({ id: '', sha256: 'a'.repeat(64), bytes: 1 })).toMatchObject({ ok: false });
    expect(bad({ id: 'a', sha256: 'a'.repeat(64), bytes: -1 })).toMatchObject({ ok: false });
    expect(bad('ref')).toMatchObject({ ok: false });
  });
});

describe('an output over the limit', () => {
  it('becomes an error result for the same call: size, limit, and how it began', () => {
    const answer = oversizeInput({ ...result, subscription: true }, 40_000_000, 33_554_432)!;
    expect(answer).toMatchObject({
      id: 'r1',
      threadId: 't',
      subscription: true,
      content: { type: 'tool_result', toolCallId: 'c1' },
    });
    expect(answer).not.toHaveProperty('displayAs');
    const said = (answer.content as { content: ToolResultContent[] }).content;
    expect(said).toHaveLength(1);
    const head = text.slice(0, OVERSIZE_HEAD_CHARS);
    expect(said[0]).toEqual({
      type: 'text',
      text: `Error: the tool's output was not delivered: it is 40000000 bytes (38.1 MiB), over the limit of 33554432 bytes (32.0 MiB) for one input. Its first ${head.length} characters:\n\n${head}`,
    });
    expect(oversizeInput({ id: 'u', threadId: 't', content: { type: 'text', text } }, 40_000_000, 1)).toBeUndefined(); // user text throws instead
  });
});

describe('resolution in the slice', () => {
  it('restores user text behind what the workflow prefixed, and tool results with their display segments', async () => {
    const user = await stage({ id: 'u1', threadId: 't', content: { type: 'text', text } });
    const staged = await stage(result);
    const event = await stage({ ...result, id: 'e1' });
    const c = user.content as { text: string; staged: StagedRef };
    const items: StoredItem[] = [
      { messageId: 'u1', item: { kind: 'user', text: `${INTERRUPT_PREFIX}${c.text}`, staged: c.staged } },
      {
        messageId: 'r1',
        item: { kind: 'tool_result', id: 'c1', content: (staged.content as { content: ToolResultContent[] }).content },
      },
      {
        messageId: 'e1',
        item: {
          kind: 'subscription_event',
          toolCallId: 'c1',
          invocation: { id: 'i', name: 'receive_event__injected', args: {} },
          result: { id: 'i', content: (event.content as { content: ToolResultContent[] }).content },
        },
      },
    ];
    const out = await resolveStaged(store, items);
    expect(out.unavailable).toEqual([]);
    expect(out.consumed).toHaveLength(3);
    expect(out.items.map((s) => s.item)).toEqual([
      { kind: 'user', text: `${INTERRUPT_PREFIX}${text}` },
      { kind: 'tool_result', id: 'c1', content: [{ type: 'text', text }, image], displayAs: result.displayAs },
      { ...items[2]!.item, result: { id: 'i', content: [{ type: 'text', text }, image] } },
    ]);
  });

  it('commits an explanation instead of a lost or altered blob, so the thread goes on', async () => {
    const lost = await stage(result);
    const altered = await stage({ ...result, id: 'r2' });
    const ref = (m: InputMessage) => (m.content as { content: ToolResultContent[] }).content;
    await store.discardStaged([(ref(lost)[0] as { staged: { id: string } }).staged.id]);
    const db = new Database(file);
    db.prepare('UPDATE staged_inputs SET data = CAST(\'{"content":[]}\' AS BLOB) WHERE id = ?').run(
      (ref(altered)[0] as { staged: { id: string } }).staged.id,
    );
    db.close();
    const out = await resolveStaged(store, [
      { messageId: 'r1', item: { kind: 'tool_result', id: 'c1', content: ref(lost) } },
      { messageId: 'r2', item: { kind: 'tool_result', id: 'c2', content: ref(altered) } },
    ]);
    expect(out.consumed).toEqual([]);
    expect(out.unavailable).toEqual([
      expect.stringMatching(/is not in the conversation store$/),
      expect.stringMatching(/does not match its reference/),
    ]);
    const texts = out.items.map((s) => (s.item as { content: ToolResultContent[] }).content[0]);
    expect(texts[0]).toEqual({
      type: 'text',
      text: `Error: ${out.unavailable[0]}, so only the start of this input arrived:\n\n${preview}`,
    });
    expect(texts[1]).toMatchObject({ type: 'text', text: expect.stringContaining('does not match its reference') });
  });
});
