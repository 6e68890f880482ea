/**
 * User tools. An async tool (the default) starts its work and returns at once; its result comes back later through
 * the thread's input queue (`ctx.send(toolResult(ctx, ...))`). A sync tool returns its result inline and the model
 * is invoked again in the same slice; keep sync tools fast and idempotent, since a retried slice runs them again.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import type { InputMessage, ToolResultContent } from '../core/types';
import type { ToolSpec } from '../model/provider';

/** What a tool gets besides its arguments. */
export interface ToolContext {
  threadId: string;
  rootThreadId: string;
  /** Ancestor thread ids, root first, parent last (empty for a root). */
  ancestors: string[];
  /** The end user of the thread tree, when the root's metadata names one (`user_id`). */
  userId?: string;
  toolCallId: string;
  toolName: string;
  /**
   * Delivers a message into a thread's input queue (a Temporal signal; content over 128 KiB is staged in the store and
   * the signal carries a reference). Rejects with `ThreadNotFoundError`, never for size: a result over the limit
   * (32 MiB) arrives as an error result that tells the model its size and how it began.
   */
  send(message: InputMessage): Promise<void>;
}

/**
 * Lifecycle notices for tools that run elsewhere (RAP servers): a pending call was interrupted or a subscription
 * cancelled, or a thread closed. Best effort: called without waiting, failures ignored.
 */
export interface ToolLifecycle {
  callCancelled?(threadId: string, toolCallId: string): Promise<void> | void;
  threadClosed?(threadId: string): Promise<void> | void;
}

export type JsonSchemaObject = Record<string, unknown> & { type: 'object' };

interface ToolDefinitionBase {
  /** What the model calls it: `[a-zA-Z0-9_-]{1,64}`, unique among a worker's tools. */
  name: string;
  /** What it does, for the model. */
  description: string;
  /** JSON Schema for the arguments; arguments are validated against it before `execute`. */
  parameters: JsonSchemaObject;
}

export interface AsyncToolDefinition<A> extends ToolDefinitionBase {
  /** @default false (async: the result comes later, through `ctx.send`) */
  sync?: false;
  /** Represents waiting rather than work: a pending passive call never defers events. @default false */
  passive?: boolean;
  /** Starts the work and returns; must not wait for the result. Idempotent per `ctx.toolCallId`. */
  execute(args: A, ctx: ToolContext): void | Promise<void>;
}

export interface SyncToolDefinition<A> extends ToolDefinitionBase {
  sync: true;
  execute(args: A, ctx: ToolContext): string | ToolResultContent[] | Promise<string | ToolResultContent[]>;
}

export type ToolDefinition<A> = AsyncToolDefinition<A> | SyncToolDefinition<A>;

/**
 * Tools whose set changes while workers run (RAP toolsets: servers that come up late, or change what they offer).
 * Asked at every slice with the thread's root: a new agent tree gets what its servers offer when it starts, and a
 * tree keeps that set for its life, so its model never sees a tool vanish mid-conversation.
 */
export interface ToolSource {
  /** The tools of the tree rooted at `rootThreadId`; resolves without throwing (a server that is down offers nothing new). */
  toolsFor(rootThreadId: string): Promise<readonly Tool[]>;
}

/** A validated, ready-to-dispatch tool. Create with {@link defineTool}. */
export interface Tool {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchemaObject;
  readonly sync: boolean;
  readonly passive: boolean;
  /** An error message the model can read, or undefined when the arguments are valid. */
  validate(args: unknown): string | undefined;
  execute(args: unknown, ctx: ToolContext): Promise<void | string | ToolResultContent[]>;
}

const ajv = new Ajv({ allErrors: true, strict: false });

/**
 * Defines a tool. Its arguments are checked against `parameters` (JSON Schema) before `execute`, and invalid ones
 * become an error result the model reads. The schema is compiled once, so a bad schema (or name) throws here rather
 * than on the first call. An async tool (the default) starts its work, returns at once and sends its result later
 * with `ctx.send(toolResult(ctx, ...))`: the thread holds no process while it waits. A `sync: true` tool returns its
 * result and the model goes on in the same slice; keep it fast and idempotent (a retried slice runs it again).
 *
 * @example
 * ```ts
 * import { defineTool, toolResult } from 'infinity-temporal';
 *
 * const getBuildStatus = defineTool<{ build_id: string }>({
 *   name: 'get_build_status',
 *   description: 'Look up a CI build',
 *   parameters: { type: 'object', properties: { build_id: { type: 'string' } }, required: ['build_id'] },
 *   execute(args, ctx) {
 *     // starts the work and returns at once; the result enters the thread later, as a signal
 *     void ci.status(args.build_id).then((s) => ctx.send(toolResult(ctx, `Build ${args.build_id}: ${s}`)));
 *   },
 * });
 *
 * const now = defineTool({
 *   name: 'current_time',
 *   description: 'The current time, ISO 8601',
 *   parameters: { type: 'object', properties: {} },
 *   sync: true,
 *   execute: () => new Date().toISOString(),
 * });
 * ```
 */
export function defineTool<A = Record<string, unknown>>(def: ToolDefinition<A>): Tool {
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(def.name)) {
    throw new TypeError(`tool name ${JSON.stringify(def.name)} must match [a-zA-Z0-9_-]{1,64}`);
  }
  let check: ValidateFunction;
  try {
    check = ajv.compile(def.parameters);
  } catch (e) {
    throw new TypeError(`tool '${def.name}': invalid parameters schema: ${(e as Error).message}`);
  }
  return {
    name: def.name,
    description: def.description,
    parameters: def.parameters,
    sync: def.sync === true,
    passive: def.sync !== true && def.passive === true,
    validate(args: unknown) {
      if (check(args)) return undefined;
      return ajv.errorsText(check.errors, { dataVar: 'arguments' });
    },
    async execute(args: unknown, ctx: ToolContext) {
      return def.execute(args as A, ctx);
    },
  };
}

export function toolSpec(tool: Tool): ToolSpec {
  return { name: tool.name, description: tool.description, parameters: tool.parameters };
}
