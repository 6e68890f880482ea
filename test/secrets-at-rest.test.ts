/**
 * With payload encryption on, no user text reaches Temporal in plaintext (security item 6). Search attributes are not
 * encoded by a payload codec, so threads must not write the `Title` search attribute then, even when asked to
 * (`titleSearchAttribute`, as `startLocalSystem` does on its own server). A real dev server (which registers `Title`),
 * an encrypting client and worker; then everything Temporal holds for the threads — the raw description (search
 * attributes, memo, user metadata), the whole event history, and the UI's metadata query — read through a client
 * WITHOUT the codec, as bytes: the secret is nowhere in them.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AgentClient } from '../src/client/agent-client';
import { EncryptionCodec } from '../src/codec/encryption-codec';
import { ScriptedModel } from '../src/model/scripted';
import type { ThreadWorkflowArgs } from '../src/workflows/contract';
import { treeScript } from './fixtures/tree-script';
import { eventually, startTestSystem, type TestSystem, uid } from './helpers';

// One word, so a Text search attribute would index it as is (`Title = 'swordfish…'`).
const SECRET = `swordfish${randomUUID().replace(/-/g, '').slice(0, 10)}`;
const codec = new EncryptionCodec({ current: 'k1', keys: { k1: randomBytes(32) } });
let sys: TestSystem;

beforeAll(async () => {
  sys = await startTestSystem({
    model: new ScriptedModel(treeScript),
    tools: [],
    payloadCodec: codec,
    // What startLocalSystem turns on for a server of its own: the client must not let it through with a codec.
    threadOptions: { titleSearchAttribute: true },
  });
});
afterAll(async () => {
  await sys?.shutdown();
});

/** Everything Temporal keeps about one thread, as it stores it, read without the codec. */
async function rawRecords(workflowId: string): Promise<{ what: string; bytes: Buffer }[]> {
  const service = sys.temporal.workflowService;
  const namespace = sys.temporal.options.namespace;
  const execution = { workflowId };
  const described = await service.describeWorkflowExecution({ namespace, execution });
  const history = await sys.temporal.workflow.getHandle(workflowId).fetchHistory();
  const metadata = await service.queryWorkflow({
    namespace,
    execution,
    query: { queryType: '__temporal_workflow_metadata' },
  });
  return [
    {
      what: 'description',
      bytes: Buffer.from(temporal.api.workflowservice.v1.DescribeWorkflowExecutionResponse.encode(described).finish()),
    },
    { what: 'history', bytes: Buffer.from(temporal.api.history.v1.History.encode(history).finish()) },
    {
      what: 'metadata query',
      bytes: Buffer.from(temporal.api.workflowservice.v1.QueryWorkflowResponse.encode(metadata).finish()),
    },
  ];
}

const titleAttribute = async (workflowId: string) =>
  (
    await sys.temporal.workflowService.describeWorkflowExecution({
      namespace: sys.temporal.options.namespace,
      execution: { workflowId },
    })
  ).workflowExecutionInfo?.searchAttributes?.indexedFields?.Title;

it('keeps the text of titled threads, their children and first user texts out of plaintext', async () => {
  // A thread titled at start, whose first text spawns a child (titled by its instructions).
  const titled = await sys.client.startThread({ threadId: uid('sealed-title'), title: `about ${SECRET}` });
  await titled.sendUserText(`spawn report:${SECRET} done`);
  // A thread created by its first user text, which titles it.
  const untitled = sys.client.thread(uid('sealed-text'));
  await untitled.sendUserText(`the password is ${SECRET}`);

  const first = await titled.waitForIdle({ settled: true });
  expect(first.children).toHaveLength(1);
  const child = first.children[0]!;
  // Polled: the child reports and closes, and a wait in flight as its workflow ends can go unanswered.
  await eventually(async () => (await sys.client.thread(child).status()).status === 'closed', 60_000, 'child closed');
  await untitled.waitForIdle({ settled: true });
  // The texts did reach the threads (in the store, which is ours to protect, not Temporal's).
  expect(JSON.stringify(await untitled.history())).toContain(SECRET);
  expect(JSON.stringify(await sys.client.thread(child).history())).toContain(SECRET);

  // The client told its threads not to write it (the option travels in the start args, and on to children).
  for (const id of [titled.threadId, child]) {
    const started = (await sys.temporal.workflow.getHandle(id).fetchHistory()).events?.[0];
    const [encoded] = (started?.workflowExecutionStartedEventAttributes?.input?.payloads ?? []) as Payload[];
    const [decoded] = await codec.decode([encoded!]);
    expect(defaultPayloadConverter.fromPayload<ThreadWorkflowArgs>(decoded!).options).toMatchObject({
      titleSearchAttribute: false,
    });
  }
  for (const id of [titled.threadId, child, untitled.threadId]) {
    expect(await titleAttribute(id), `Title of ${id}`).toBeUndefined();
    const records = await rawRecords(id);
    // The records are what they claim to be: the plaintext parts (ids, types) are there to be found.
    for (const r of records.slice(0, 2)) expect(r.bytes.toString('latin1')).toContain(id);
    for (const { what, bytes } of records) {
      expect(bytes.toString('latin1').includes(SECRET), `${what} of ${id} holds the secret in plaintext`).toBe(false);
    }
  }
});

it("keeps an eagerly started thread's first text, carried in the start's input, out of plaintext", async () => {
  // As startLocalSystem's client with a codec: on the worker's connection, eager start on (decision 72).
  const eager = new AgentClient({
    client: new Client({ connection: sys.connection, dataConverter: { payloadCodecs: [codec] } }),
    taskQueue: sys.taskQueue,
    store: sys.store,
    eagerStart: true,
    signalNames: 'by-kind',
    threadOptions: { titleSearchAttribute: true },
  });
  const id = uid('eager-secret');
  await eager.sendUserText(id, `the password is ${SECRET}`);
  await eager.thread(id).waitForIdle();
  const history = await sys.temporal.workflow.getHandle(id).fetchHistory();
  // The text came in the start, not by a signal, and the thread took it.
  expect(history.events?.some((e) => e.workflowExecutionSignaledEventAttributes)).toBe(false);
  expect((await eager.thread(id).history()).filter((i) => i.kind === 'user')).toHaveLength(1);
  expect(await titleAttribute(id)).toBeUndefined();
  for (const { what, bytes } of await rawRecords(id)) {
    expect(bytes.toString('latin1').includes(SECRET), `${what} of ${id} holds the secret in plaintext`).toBe(false);
  }
});
