/**
 * The CLI's heavy modules, loaded by the commands that use them when they run, not when the program starts: `--help`,
 * a usage error and the thread commands start without the Temporal worker, the model providers, MCP, RAP or
 * OpenTelemetry, and no command loads the Temporal client before it connects. Each of these costs 100-350 ms.
 *
 * `require`, not `import()`: the package compiles to CommonJS, and in a checkout bin/ runs the sources through tsx's
 * CommonJS hook (`tsx/cjs`), which teaches `require` TypeScript but leaves `import()` to Node's own ESM loader, which
 * finds no `./x.js` (nor `./x`) next to `./x.ts`. The types are the modules' own (`typeof import`).
 *
 * Libraries only, outside the CLI: every part of the CLI may load them. What the long-running commands do (actions/)
 * is loaded by lazy-actions.ts, which only commands import: an action uses the CLI's helpers, and a helper that could
 * load an action would make a circle (issue 42 §2).
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

/** A thread's chain of records in a store: what a fork or a child inherits (`history`, `tail`). */
export const storeChain = () => require('../store/chain') as typeof import('../store/chain');

/** The SQLite conversation store (`backup`). */
export const sqliteStore = () => require('../store/sqlite') as typeof import('../store/sqlite');

/** OpenTelemetry, for a process whose environment turns tracing on. */
export const tracingInstall = () => require('../tracing/install') as typeof import('../tracing/install');
export const tracingInterceptors = () => require('../tracing/interceptors') as typeof import('../tracing/interceptors');

/** The model providers (AI SDK). */
export const modelRegistry = () => require('../model/registry') as typeof import('../model/registry');
