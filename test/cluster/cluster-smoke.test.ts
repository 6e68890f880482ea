/**
 * The runtime on a real multi-shard Temporal cluster (server built from Go, PostgreSQL persistence and visibility):
 * twenty threads through a tool round trip, exact histories, listed by their search attributes from the PostgreSQL
 * visibility store, and their executions spread over more than one history shard, read from the server's own
 * `executions` table.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { firstText } from '../../src/model/projection';
import type { ModelRequest } from '../../src/model/provider';
import { ScriptedModel, type ScriptedReply } from '../../src/model/scripted';
import { toolResult } from '../../src/tools/messages';
import { defineTool } from '../../src/tools/tool';
import { eventually, render, startTestSystem, type TestSystem, uid } from '../helpers';

/** `call <tool> <json args>` calls the tool; after its result, the model answers with it. */
function script(req: ModelRequest): ScriptedReply {
  const last = req.messages[req.messages.length - 1]!;
  if (last.role === 'tool_result') return { text: `Answer: ${firstText(last.content)}` };
  const m = last.role === 'user' ? /^call (\S+) (.*)$/.exec(last.text) : null;
  return m ? { text: 'Let me check.', toolCall: { name: m[1]!, args: JSON.parse(m[2]!) } } : { text: 'ok' };
}

/** An async tool: it returns at once and its result comes back later as a signal, as a CI status would. */
const getBuildStatus = defineTool<{ build_id: string }>({
  name: 'get_build_status',
  description: 'Look up a CI build',
  parameters: { type: 'object', properties: { build_id: { type: 'string' } }, required: ['build_id'] },
  execute(args, ctx) {
    setTimeout(() => void ctx.send(toolResult(ctx, `Build ${args.build_id}: green`)), 50);
  },
});

/** Rows of a query on the cluster's `temporal` database, fields split on `|`. */
function sql(query: string): string[][] {
  const out = execFileSync('psql', [inject('clusterDatabaseUrl'), '-v', 'ON_ERROR_STOP=1', '-qAtc', query], {
    encoding: 'utf8',
  });
  return out
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('|'));
}

let sys: TestSystem;

beforeAll(async () => {
  sys = await startTestSystem({ model: new ScriptedModel(script), tools: [getBuildStatus] });
});
afterAll(async () => {
  await sys?.shutdown();
});

describe('local cluster', () => {
  it('runs twenty threads through a tool round trip, spread over the history shards', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => uid(`smoke-${i}`));
    await Promise.all(
      ids.map(async (id, i) => {
        const thread = await sys.client.startThread({ threadId: id });
        await thread.sendUserText(`call get_build_status {"build_id":"${i}"}`);
      }),
    );
    for (const [i, id] of ids.entries()) {
      const thread = sys.client.thread(id);
      const status = await thread.waitForIdle({ settled: true });
      expect(render(await thread.history())).toEqual([
        `user: call get_build_status {"build_id":"${i}"}`,
        'assistant: Let me check.',
        `call #1 get_build_status {"build_id":"${i}"}`,
        `result #1: Build ${i}: green`,
        `assistant: Answer: Build ${i}: green`,
      ]);
      expect(status).toMatchObject({ status: 'idle', slices: 2, historyLength: 5, pendingCall: null });
    }

    // Search attributes reach the PostgreSQL visibility store (asynchronously: the history service's visibility queue).
    await eventually(
      async () => {
        const idle = new Set<string>();
        for await (const t of sys.client.listThreads({ status: 'idle' })) idle.add(t.threadId);
        return ids.every((id) => idle.has(id));
      },
      30_000,
      'all twenty threads listed as idle',
    );

    // One execution row per thread (no continue-as-new here), on shards 1..N, more than one of them used: with 20
    // random workflow ids over 4 shards, all on one shard has a chance of 4^-19.
    const rows = sql(
      `SELECT shard_id, count(*) FROM executions WHERE workflow_id IN (${ids.map((id) => `'${id}'`).join(',')}) GROUP BY shard_id ORDER BY shard_id`,
    );
    const perShard = new Map(rows.map(([shard, n]) => [Number(shard), Number(n)]));
    expect([...perShard.values()].reduce((a, b) => a + b, 0)).toBe(ids.length);
    const shards = Array.from({ length: inject('clusterShards') }, (_, i) => i + 1);
    expect(shards).toEqual(expect.arrayContaining([...perShard.keys()]));
    expect(perShard.size).toBeGreaterThan(1);
    // The server created exactly the configured number of shards.
    expect(Number(sql('SELECT count(*) FROM shards')[0]![0])).toBe(inject('clusterShards'));
    console.log(`threads per history shard: ${[...perShard].map(([s, n]) => `${s}:${n}`).join(' ')}`);
  });
});
