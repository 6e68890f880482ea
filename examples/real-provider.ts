/**
 * `npm run example:provider`: one agent on a real model, chosen by `INFINITY_MODEL` (for example
 * `anthropic:claude-sonnet-4-5`, `openai:gpt-5`, `bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0`,
 * `openai-compatible:llama3.1` with `INFINITY_BASE_URL`). Without a model or its key it explains what to set.
 * The agent looks up a CI build through an async tool whose result arrives 2 s later through the input queue.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import {
  buildStatusDemoTool,
  MODEL_PROVIDERS,
  ModelConfigError,
  modelFromSpec,
  PROVIDER_ENV,
  startLocalSystem,
} from '../src';
import { show } from './show-events';

function explain(problem: string): void {
  console.log(
    `${problem}\n\nSet INFINITY_MODEL=<provider>:<model id>, where <provider> is one of: ${MODEL_PROVIDERS.join(', ')}.`,
  );
  for (const [provider, env] of Object.entries(PROVIDER_ENV)) {
    console.log(
      `  ${provider.padEnd(18)} needs ${env.key.join(' or ')}${env.optional.length ? `; optional: ${env.optional.join(', ')}` : ''}`,
    );
  }
  console.log('\nExample: INFINITY_MODEL=anthropic:claude-sonnet-4-5 ANTHROPIC_API_KEY=... npm run example:provider');
  console.log('Without a key, `npm start` runs the same kind of agent on the simulated model.');
}

async function main(): Promise<number> {
  const spec = process.env.INFINITY_MODEL;
  if (!spec || spec === 'simulated') {
    explain('INFINITY_MODEL is not set to a real model.');
    return 0;
  }
  let model;
  try {
    model = modelFromSpec(spec);
  } catch (e) {
    if (!(e instanceof ModelConfigError)) throw e;
    explain(e.message);
    return 2;
  }
  Runtime.install({ logger: new DefaultLogger('WARN') });
  console.log(`Model: ${model.id}${model.contextWindow ? ` (context window ${model.contextWindow} tokens)` : ''}`);
  const system = await startLocalSystem({ model, tools: [buildStatusDemoTool()] });
  try {
    const threadId = `provider-${Date.now()}`;
    const thread = await system.client.startThread({ threadId });
    console.log(`This thread in the Temporal UI: ${system.threadUrl(threadId)}`);
    const events = (async () => {
      for await (const e of thread.events()) show(e);
    })();
    await thread.sendUserText('Is build 42 green yet? Use the tool, then answer in one sentence.');
    const status = await thread.waitForIdle({ settled: true, timeoutMs: 5 * 60_000 });
    console.log(
      `\nDone: ${status.slices} slices, ${status.usage?.totalTokens ?? '?'} tokens, status ${status.status}.`,
    );
    void events;
    return status.lastError ? 1 : 0;
  } finally {
    await system.shutdown();
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
