/**
 * The CLI's heavy modules, loaded by the commands that use them when they run, not when the program starts: `--help`,
 * a usage error and the thread commands start without the Temporal worker, the model providers, MCP, RAP or
 * OpenTelemetry, and no command loads the Temporal client before it connects. Each of these costs 100-350 ms.
 *
 * `require`, not `import()`: the package compiles to CommonJS, and in a checkout bin/ runs the sources through tsx's
 * CommonJS hook (`tsx/cjs`), which teaches `require` TypeScript but leaves `import()` to Node's own ESM loader, which
 * finds no `./x.js` (nor `./x`) next to `./x.ts`. The types are the modules' own (`typeof import`).
 */
/* eslint-disable @typescript-eslint/no-require-imports */

/** `@temporalio/client`: connections and the workflow client. */
export const temporalClient = () => require('@temporalio/client') as typeof import('@temporalio/client');

/** The agent client the thread commands talk through. */
export const agentClient = () => require('../client/agent-client') as typeof import('../client/agent-client');

/** Budgets' limits and spend in a store (`usage`, `budget show`). */
export const budgetsClient = () => require('../client/budgets') as typeof import('../client/budgets');

/** Opening a conversation store (SQLite or PostgreSQL). */
export const storeOpen = () => require('../store/open') as typeof import('../store/open');

/** The SQLite conversation store (`backup`). */
export const sqliteStore = () => require('../store/sqlite') as typeof import('../store/sqlite');

/** OpenTelemetry, for a process whose environment turns tracing on. */
export const tracingInstall = () => require('../tracing/install') as typeof import('../tracing/install');
export const tracingInterceptors = () => require('../tracing/interceptors') as typeof import('../tracing/interceptors');

/** The model providers (AI SDK). */
export const modelRegistry = () => require('../model/registry') as typeof import('../model/registry');

/** What the long-running commands and `replay` do, with everything they run on (see actions/). */
export const devAction = () => require('./actions/dev') as typeof import('./actions/dev');
export const workerAction = () => require('./actions/worker') as typeof import('./actions/worker');
export const gatewayAction = () => require('./actions/gateway') as typeof import('./actions/gateway');
export const replayAction = () => require('./actions/replay') as typeof import('./actions/replay');
/** Replay-evals, exports and outcome scores (`eval`, `export`, `score`, `scores`): the model providers and ajv. */
export const evalAction = () => require('./actions/eval') as typeof import('./actions/eval');
/** Interleaving experiments (`experiment run`): the worker, a dev server, the model providers. */
export const experimentAction = () => require('./actions/experiment') as typeof import('./actions/experiment');
