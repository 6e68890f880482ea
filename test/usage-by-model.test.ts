/**
 * Usage per model (issue 40: "which model served each slice is recorded; `usage` can group by model") on the real dev
 * server, with a SQLite store and a PostgreSQL one: one worker hosts two agents on two models of the shipped price
 * table; threads of both under one tenant. `usage --tenant --by-model` shows each model's tokens, cost and slices under
 * the tenant's line (`--json`: its `byModel` list), a thread only its own model; the client's `budgetsByModel` agrees.
 * (A slice routed between two models splits its spend: test/model-routing.test.ts; the ledger: the store contract.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent } from '../src/activities/agents';
import type { ModelProvider, ModelRequest } from '../src/model/provider';
import { ScriptedModel } from '../src/model/scripted';
import type { ConversationStore } from '../src/store/conversation-store';
import { PostgresConversationStore } from '../src/store/postgres';
import { cliRunner } from './cli-process';
import { startTestSystem, type TestSystem, uid } from './helpers';
import { createTestDatabase } from './postgres';

const lastText = (req: ModelRequest) => {
  const m = req.messages[req.messages.length - 1];
  return m?.role === 'user' ? m.text : '';
};

/** A scripted model under a priced id, every slice reporting the same usage. */
function priced(id: string, usage: { inputTokens: number; outputTokens: number }): ScriptedModel & ModelProvider {
  const m = new ScriptedModel((req) => ({
    text: `${id}: ${lastText(req)}`,
    usage: { ...usage, totalTokens: usage.inputTokens + usage.outputTokens },
  }));
  Object.defineProperty(m, 'id', { value: id });
  return m;
}

/** gpt-4o: $2.50 / $10 per million tokens; claude-haiku-4-5: $1 / $5 (src/model/prices.ts). */
const DEEP = 'gpt-4o-2024-08-06';
const FAST = 'claude-haiku-4-5';
const deep = defineAgent({
  name: 'deep',
  instructions: 'You think.',
  model: priced(DEEP, { inputTokens: 100, outputTokens: 20 }),
});
const fast = defineAgent({
  name: 'fast',
  instructions: 'You answer.',
  model: priced(FAST, { inputTokens: 40, outputTokens: 8 }),
});
const deepUsd = (100 * 2.5 + 20 * 10) / 1e6;
const fastUsd = (40 * 1 + 8 * 5) / 1e6;

const makers: [string, () => Promise<{ store?: ConversationStore; storePath?: string }>][] = [
  ['SQLite', async () => ({})],
  [
    'PostgreSQL',
    async () => {
      const url = await createTestDatabase('usage_by_model');
      return { store: new PostgresConversationStore({ connectionString: url }), storePath: url };
    },
  ],
];

describe.each(makers)('usage by model, %s store', (_name, makeStore) => {
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await startTestSystem({
      model: priced('model-default', { inputTokens: 1, outputTokens: 1 }),
      agents: [deep, fast],
      ...(await makeStore()),
    });
  });
  afterAll(async () => {
    await sys?.shutdown();
  });

  it('usage --by-model: each model its own tokens, cost and slices under the tenant; a thread its own model', async () => {
    const tenant = uid('acme');
    const [d, f1, f2] = [uid('deep'), uid('fast'), uid('fast')];
    await sys.client.startThread({ threadId: d, tenant, agent: 'deep' });
    await sys.client.startThread({ threadId: f1, tenant, agent: 'fast' });
    await sys.client.startThread({ threadId: f2, tenant, agent: 'fast' });
    for (const id of [d, f1, f2]) {
      await sys.client.sendUserText(id, 'hello');
      await sys.client.thread(id).waitForIdle();
    }

    const cli = cliRunner(() => ['--store', sys.storePath], { TEMPORAL_ADDRESS: '' });
    const usage = await cli.run('usage', '--tenant', tenant, '--thread', d, '--by-model');
    expect(usage.stderr).toBe('');
    expect(usage.code).toBe(0);
    const tokens = 100 + 20 + 2 * (40 + 8);
    expect(usage.stdout.trim().split('\n')).toEqual([
      `thread ${d}: limit none · spent 120 tokens (100 in, 20 out), $${deepUsd.toFixed(4)}, 1 slices`,
      `  ${DEEP}: 120 tokens (100 in, 20 out), $${deepUsd.toFixed(4)}, 1 slices`,
      `tenant ${tenant}: limit none · spent ${tokens} tokens (180 in, 36 out), $${(deepUsd + 2 * fastUsd).toFixed(4)}, 3 slices`,
      `  ${FAST}: 96 tokens (80 in, 16 out), $${(2 * fastUsd).toFixed(4)}, 2 slices`,
      `  ${DEEP}: 120 tokens (100 in, 20 out), $${deepUsd.toFixed(4)}, 1 slices`,
    ]);
    // Without the flag, as before: one line per scope.
    expect((await cli.run('usage', '--tenant', tenant)).stdout.trim().split('\n')).toHaveLength(1);
    // `budget show` takes it too: the same lines.
    const shown = await cli.run('budget', 'show', '--tenant', tenant, '--thread', d, '--by-model');
    expect(shown.stdout).toBe(usage.stdout);

    const json = await cli.run('usage', '--tenant', tenant, '--by-model', '--json');
    const [state] = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(state).toMatchObject({
      ref: { scope: 'tenant', key: tenant },
      spend: { totalTokens: tokens, slices: 3 },
      byModel: [
        { model: FAST, inputTokens: 80, outputTokens: 16, totalTokens: 96, slices: 2, unpricedSlices: 0 },
        { model: DEEP, inputTokens: 100, outputTokens: 20, totalTokens: 120, slices: 1, unpricedSlices: 0 },
      ],
    });

    const [viaClient] = await sys.client.budgetsByModel({ tenant });
    expect(viaClient!.byModel!.map((m) => [m.model, m.totalTokens])).toEqual([
      [FAST, 96],
      [DEEP, 120],
    ]);
    expect(viaClient!.byModel![0]!.usd).toBeCloseTo(2 * fastUsd, 12);
    expect((await sys.client.budgetsByModel({ tree: f1 }))[0]!.byModel).toEqual([
      {
        model: FAST,
        inputTokens: 40,
        outputTokens: 8,
        totalTokens: 48,
        usd: expect.closeTo(fastUsd, 12) as number,
        slices: 1,
        unpricedSlices: 0,
      },
    ]);
  });
});
