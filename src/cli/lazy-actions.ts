/**
 * What the long-running commands, `replay`, `eval` and `experiment` do (actions/), loaded when the command runs, not
 * when the program starts (see lazy.ts for why, and why with `require`). Only commands/ import this module: the actions
 * import the CLI's helpers, so nothing they import may lead back here (test/unit/cli-cycles.test.ts).
 */
/* eslint-disable @typescript-eslint/no-require-imports */

/** `dev`, `worker`, `gateway` and `replay`, with everything they run on. */
export const devAction = () => require('./actions/dev') as typeof import('./actions/dev');
export const workerAction = () => require('./actions/worker') as typeof import('./actions/worker');
export const gatewayAction = () => require('./actions/gateway') as typeof import('./actions/gateway');
export const replayAction = () => require('./actions/replay') as typeof import('./actions/replay');
/** Replay-evals, exports and outcome scores (`eval`, `export`, `score`, `scores`): the model providers and ajv. */
export const evalAction = () => require('./actions/eval') as typeof import('./actions/eval');
/** Interleaving experiments (`experiment run`): the worker, a dev server, the model providers. */
export const experimentAction = () => require('./actions/experiment') as typeof import('./actions/experiment');
