/**
 * What `worker` does (its flags and help: commands/worker.ts): connect to the cluster, open the store, serve threads
 * until a signal. Loaded only when the command runs (see lazy-actions.ts).
 */
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { Command } from 'commander';
import { callbackStateOf } from '../../client/callback-check';
import { deliverInput } from '../../inbox/deliver';
import { describeStore, openConversationStore } from '../../store/open';
import { PostgresConversationStore } from '../../store/postgres';
import { tracingFor } from '../../tracing/install';
import { tracingClientInterceptors } from '../../tracing/interceptors';
import { createAgentWorker } from '../../worker/create-worker';
import { DEFAULT_MEMORY_TARGET } from '../../worker/resource-targets';
import { deploymentOf, type DeploymentFlags } from '../deployment';
import { eventsEndpointOf, eventsTokenNote } from '../events-endpoint';
import { colour, type Out } from '../format';
import { loadAgents, loadTools } from '../load-tools';
import { quietRuntime, until } from '../runtime';
import { limitsLine, limitsOf, modelOf, resourceTargetsOf, type ServeOptions } from '../serve-flags';
import { CliError } from '../errors';
import { dataDirOf, resolveTarget, type TargetFlags } from '../target';
import { remoteTools } from '../tool-servers';

export async function runWorker(opts: ServeOptions & DeploymentFlags, cmd: Command, out: Out): Promise<void> {
  const flags = cmd.optsWithGlobals<TargetFlags>();
  const deployment = deploymentOf(opts);
  const targets = { ...resourceTargetsOf(opts), ...limitsOf(opts) };
  quietRuntime(opts.verbose, { port: opts.metricsPort, host: opts.metricsHost }, out);
  const target = await resolveTarget(flags);
  // Before anything connects: a network bind without a token is a usage error.
  const events = eventsEndpointOf(opts, dataDirOf(flags));
  const storePath = target.store ?? join(dataDirOf(flags), 'conversations.sqlite');
  const connection = await NativeConnection.connect({
    address: target.address,
    ...(target.tls !== undefined && { tls: target.tls }),
  });
  const store = openConversationStore(storePath);
  // A database's schema migrates now rather than in the first slice: a wrong URL or role fails the start-up.
  if (store instanceof PostgresConversationStore) {
    await store.migrate().catch(async (e: unknown) => {
      await store.close();
      throw new CliError(
        `cannot use the conversation store ${describeStore(storePath)}: ${e instanceof Error ? e.message : String(e)}`,
      );
    });
  }
  const model = modelOf(opts);
  // Traced when the OTEL_* variables say so (the worker reads them too): the gateway's deliveries continue traces.
  const tracing = tracingFor();
  const temporal = new Client({
    connection,
    namespace: target.namespace,
    ...(tracing && { interceptors: tracingClientInterceptors() }),
  });
  const agents = loadAgents(opts.tools);
  const remote = await remoteTools(opts, (m) => deliverInput(temporal, m, { store }), out, callbackStateOf(temporal));
  const worker = await createAgentWorker({
    connection,
    namespace: target.namespace,
    taskQueue: target.taskQueue,
    store,
    model,
    tools: [...(loadTools(opts.tools) ?? []), ...(remote?.tools ?? [])],
    ...(agents && { agents }),
    ...(events && { eventsEndpoint: events.options }),
    ...(remote && { toolLifecycle: remote.lifecycle, toolSources: remote.toolSources }),
    ...(deployment && { deployment }),
    ...targets,
  });
  const running = worker.run();
  // Machine-readable first lines: tests and scripts wait for them.
  out(`worker ready · task queue ${target.taskQueue} · ${target.address} · model ${model.id}`);
  if (agents) out(`agents default, ${agents.map((a) => a.name).join(', ')}`);
  if (worker.eventsUrl) out(`events ${worker.eventsUrl}`);
  if (worker.eventsUrl && events) out(colour.dim(eventsTokenNote(events)));
  out(`store ${describeStore(storePath)}`);
  const t = targets.resourceTargets;
  if (t) out(`resource targets · cpu ${t.cpu} · memory ${t.memory ?? DEFAULT_MEMORY_TARGET}`);
  if (targets.limits) out(limitsLine(targets.limits, model.id));
  if (deployment) {
    out(`deployment ${deployment.name} · build ${deployment.buildId} · ${deployment.defaultVersioningBehavior}`);
    // A versioned worker gets no task until its build is current (or ramping, or pinned to).
    out(
      colour.dim(
        `make it current: temporal worker deployment set-current-version --deployment-name ${deployment.name} --build-id ${deployment.buildId}`,
      ),
    );
  }
  await Promise.race([until(['SIGINT', 'SIGTERM']), running]);
  await worker.shutdown();
  await remote?.close();
  await store.close();
  await connection.close();
}
