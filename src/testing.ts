/**
 * `infinity-temporal/testing`: what a test or a demo of an agent runs on instead of a provider and a database. The
 * deterministic `ScriptedModel` (a function answers each request; every request is recorded), the `SimulatedModel`
 * (streams ~1.2 KB completions that call a tool: benchmarks, demos) and the in-memory conversation store. The package
 * root exports the same names; this subpath is their preferred home.
 *
 * @example
 * ```ts
 * import { InMemoryConversationStore, ScriptedModel } from 'infinity-temporal/testing';
 *
 * // the first request calls a tool, every later one answers
 * const model = new ScriptedModel((request, call) =>
 *   call === 0 ? { toolCall: { name: 'get_build_status', args: { build_id: '42' } } } : { text: 'It is green.' },
 * );
 * const worker = await createAgentWorker({ connection, taskQueue, store: new InMemoryConversationStore(), model });
 * // ... send a thread a text and wait for it, then check what the model was shown:
 * expect(model.requests[1]!.messages.at(-1)!.role).toBe('tool_result');
 * ```
 */
export { ScriptedModel, turnToParts, type ScriptedTurn, type ScriptedReply, type ScriptFn } from './model/scripted';
export { SimulatedModel, type SimulatedModelOptions } from './model/simulated';
export { InMemoryConversationStore } from './store/memory';
