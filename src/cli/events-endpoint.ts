/**
 * The live events endpoint of `dev` and `worker`: its options from the flags, and its token. Events carry the
 * conversation, so the endpoint always has a token: `INFINITY_EVENTS_TOKEN` when set (the same for every worker and
 * client of a deployment), else the one kept in the data directory (made by the first process that needs it, read by
 * the others and by `tail` on this machine). Beyond loopback, only an explicit token will do: a remote client could
 * not read the file.
 */
import { isLoopbackHost, weakTokenError } from '../http/listener';
import type { EventServerOptions } from '../events/event-server';
import { localEventsToken } from '../events/local-token';
import { CliError } from './errors';

/** The flags of `dev` and `worker` that shape the endpoint. */
export interface EventsFlags {
  events?: boolean;
  eventsPort?: string;
  eventsHost?: string;
}

/** What the command starts the endpoint with, and what it tells the user about the token. */
export interface EventsEndpointPlan {
  options: EventServerOptions;
  /** Where the token was taken from, for the command's output: the file, or the variable. Never the token. */
  tokenSource: string;
}

/** The endpoint's options, or undefined with `--no-events`; a usage error for a network bind without a token. */
export function eventsEndpointOf(
  flags: EventsFlags,
  dataDir: string,
  env: NodeJS.ProcessEnv = process.env,
): EventsEndpointPlan | undefined {
  if (flags.events === false) return undefined;
  const host = flags.eventsHost ?? '127.0.0.1';
  const port = Number(flags.eventsPort ?? 0);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new CliError(`--events-port must be a port number (0-65535), got '${flags.eventsPort}'`);
  const base = { port, ...(flags.eventsHost && { host: flags.eventsHost }) };
  const configured = env.INFINITY_EVENTS_TOKEN;
  if (configured !== undefined && configured !== '') {
    const weak = weakTokenError(`--events-host ${host}`, host, configured);
    if (weak) throw new CliError(weak.replace('needs a token', 'needs an INFINITY_EVENTS_TOKEN'));
    return { options: { ...base, token: configured }, tokenSource: 'INFINITY_EVENTS_TOKEN' };
  }
  if (!isLoopbackHost(host)) {
    throw new CliError(
      `--events-host ${host} serves conversations beyond this machine: set INFINITY_EVENTS_TOKEN (a long random ` +
        'secret, the same for every worker and client), or leave --events-host at 127.0.0.1',
    );
  }
  let kept: { token: string; file: string };
  try {
    kept = localEventsToken(dataDir);
  } catch (e) {
    throw new CliError(
      `cannot keep the live events token in ${dataDir}: ${e instanceof Error ? e.message : String(e)}; ` +
        'set INFINITY_EVENTS_TOKEN, or run with --no-events',
    );
  }
  return { options: { ...base, token: kept.token }, tokenSource: kept.file };
}

/** The line that says where the token is (and how a client elsewhere gets it), below the endpoint's URL. */
export function eventsTokenNote(plan: EventsEndpointPlan): string {
  return plan.tokenSource === 'INFINITY_EVENTS_TOKEN'
    ? 'events token: INFINITY_EVENTS_TOKEN (clients send the same)'
    : `events token in ${plan.tokenSource} (tail on this machine reads it; elsewhere: INFINITY_EVENTS_TOKEN=$(cat ${plan.tokenSource}))`;
}
