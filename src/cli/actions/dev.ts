/**
 * What `dev` does (its flags and help: commands/dev.ts): a Temporal dev server, a worker and the live events endpoint in
 * this process, until a signal. Loaded only when the command runs (see lazy-actions.ts).
 */
import type { Command } from 'commander';
import { callbackStateOf } from '../../client/callback-check';
import type { InputMessage } from '../../core/types';
import type { DeliveryResult } from '../../inbox/deliver';
import { startLocalSystem } from '../../local-system';
import type { CallbackStateCheck } from '../../rap/callback-guard';
import { buildStatusDemoTool } from '../../tools/demo';
import { eventsEndpointOf, eventsTokenNote } from '../events-endpoint';
import { colour, type Out } from '../format';
import { loadAgents, loadTools, toolNames } from '../load-tools';
import { quietRuntime, until } from '../runtime';
import { limitsLine, limitsOf, modelOf, portOf, resourceTargetsOf, type ServeOptions } from '../serve-flags';
import { CliError } from '../errors';
import { dataDirOf, DEFAULT_TASK_QUEUE, type TargetFlags, writeDevState } from '../target';
import { remoteTools } from '../tool-servers';

export type DevOptions = ServeOptions & { port?: string; uiPort?: string; ui?: boolean; answerByHand?: boolean };

export async function runDev(opts: DevOptions, cmd: Command, out: Out): Promise<void> {
  const port = portOf('--port', opts.port);
  const uiPort = portOf('--ui-port', opts.uiPort);
  if (opts.ui === false && uiPort !== undefined) throw new CliError('--no-ui and --ui-port do not go together');
  const targets = { ...resourceTargetsOf(opts), ...limitsOf(opts) };
  const flags = cmd.optsWithGlobals<TargetFlags>();
  quietRuntime(opts.verbose, { port: opts.metricsPort, host: opts.metricsHost }, out);
  const model = modelOf(opts);
  // The gateway starts before the system it delivers to: tools need its callback URLs.
  const ref: { deliver?: (m: InputMessage) => Promise<DeliveryResult>; check?: CallbackStateCheck } = {};
  const remote = await remoteTools(
    opts,
    (m) => ref.deliver!(m),
    out,
    async (t, c) => ref.check?.(t, c),
  );
  const own = loadTools(opts.tools);
  const agents = loadAgents(opts.tools);
  // The demo tool answers by itself 2 s later, unless the user wants to answer its calls (issue 30 item 4).
  const tools = [...(own ?? [buildStatusDemoTool(2000, { answers: !opts.answerByHand })]), ...(remote?.tools ?? [])];
  // Live events always need a token: INFINITY_EVENTS_TOKEN, or the one kept in the data directory.
  const events = eventsEndpointOf(opts, dataDirOf(flags));
  const system = await startLocalSystem({
    model,
    tools,
    ...(agents && { agents }),
    // This command handles the signals itself (below), in its own order: state file, system, remote tools.
    stopOnSignal: false,
    dataDir: dataDirOf(flags),
    ...((port !== undefined || uiPort !== undefined || opts.ui === false) && {
      devServer: {
        ...(port !== undefined && { port }),
        ...(uiPort !== undefined && { uiPort }),
        ...(opts.ui === false && { ui: false }),
      },
    }),
    taskQueue: flags.taskQueue ?? DEFAULT_TASK_QUEUE,
    ...(events && { eventsEndpoint: events.options }),
    ...(remote && { toolLifecycle: remote.lifecycle, toolSources: remote.toolSources }),
    ...targets,
  });
  ref.deliver = (m) => system.client.deliver(m);
  ref.check = callbackStateOf(system.client.temporal);
  const removeState = writeDevState(flags, {
    address: system.devServer.address,
    namespace: system.devServer.namespace,
    taskQueue: flags.taskQueue ?? DEFAULT_TASK_QUEUE,
    store: system.storePath ?? '',
    ...(system.eventsUrl && { eventsUrl: system.eventsUrl }),
    ...(system.devServer.uiUrl && { uiUrl: system.devServer.uiUrl }),
    pid: process.pid,
    // As startLocalSystem's own client: one build on its own server (by kind, titles in `Title`). With a payload
    // codec this must be false, as startLocalSystem's is: a search attribute bypasses the codec (security 6).
    signalNames: 'by-kind',
    titleSearchAttribute: true,
  });
  out(`${colour.bold('infinity-temporal dev')} · model ${model.id}`);
  out(`Temporal UI      ${system.devServer.uiUrl ?? '(disabled)'}`);
  out(`Temporal address ${system.devServer.address}`);
  if (system.eventsUrl) out(`Live events      ${system.eventsUrl}`);
  if (system.eventsUrl && events) out(colour.dim(`                 (${eventsTokenNote(events)})`));
  out(`Store            ${system.storePath}`);
  out(`Task queue       ${flags.taskQueue ?? DEFAULT_TASK_QUEUE}`);
  out(`Tools            ${toolNames(tools)}`);
  if (agents) out(`Agents           default, ${agents.map((a) => a.name).join(', ')}`);
  if (targets.limits)
    out(`Provider limits  ${limitsLine(targets.limits, model.id).replace(/^provider limits · /, '')}`);
  if (!own)
    out(
      colour.dim(
        opts.answerByHand
          ? '                 (demo: get_build_status leaves its calls pending; answer with `infinity-temporal deliver`)'
          : '                 (demo: get_build_status answers by itself after 2 s; --answer-by-hand leaves calls to you)',
      ),
    );
  // For the `temporal` CLI and other clients in other shells (README "From the Temporal CLI").
  out(colour.dim(`export TEMPORAL_ADDRESS=${system.devServer.address}`));
  out(colour.dim(`Try: infinity-temporal send demo "Is build 42 green?" && infinity-temporal tail demo --until-idle`));
  out(colour.dim('Ctrl-C stops everything.'));
  await until(['SIGINT', 'SIGTERM']);
  removeState();
  await system.shutdown();
  await remote?.close();
}
