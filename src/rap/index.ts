/**
 * `infinity-temporal/rap`: tools in other processes over the Reactive Agent Protocol (docs/tools.md). The callback
 * gateway and its signed tokens, the toolsets a worker loads from RAP servers, the SDK for writing a tool server, and
 * the protocol's wire types. The package root exports the same names; this subpath is their preferred home. The
 * gateway's `callbackState` check, `callbackStateOf`, asks the thread over Temporal and so lives with the client (root).
 *
 * @example
 * ```ts
 * import { CallbackTokens, createRapToolServer, loadRapToolsets, startRapGateway } from 'infinity-temporal/rap';
 * ```
 */
export * from './wire';
export { CallbackTokens, newCallbackKey, type CallbackKeys, type TokenClaims, type TokenCheck } from './tokens';
export { startRapGateway, type RapGateway, type RapGatewayOptions } from './gateway';
export type { ViewLimits } from './view-store';
export type { CallbackStateCheck } from './callback-guard';
export type { CallbackState } from '../core/callback-state';
export {
  loadRapToolsets,
  rapRefusedText,
  type RapServerConfig,
  type RapToolsets,
  type RapToolsetsOptions,
  type RapToolsetLoadError,
} from './toolsets';
export {
  createRapToolServer,
  RapCallbackError,
  type RapCallContext,
  type RapResult,
  type RapSubscription,
  type RapToolHandler,
  type RapToolServer,
  type RapToolServerOptions,
} from './tool-server';
