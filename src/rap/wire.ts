/**
 * The Reactive Agent Protocol on the wire (RAP, docs/rap-protocol.md): manifests, invocations and the
 * five callbacks, with the validation both sides need. Field names, null/absent handling and tags are exactly the
 * protocol's, so Infinity's Rust peers and ours read each other.
 */

export interface RapToolDef {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  displayScript?: string;
}

export interface RapManifest {
  name: string;
  description?: string;
  /** Absolute URL the runtime POSTs invocations to, verbatim. */
  endpoint: string;
  tools: RapToolDef[];
  needsMigration?: boolean;
}

export interface RapInvocation {
  operation: string;
  arguments: Record<string, unknown>;
  id: string;
  call_id: string | null;
  callback_url: string;
  group_id: string;
  user_id?: string;
  thread_ancestors: string[] | null;
}

export type RapContentItem = { type: 'text'; text: string } | { type: 'image'; data: string; mediaType: string };
export type RapDisplaySegment =
  | { type: 'text'; content: string }
  | { type: 'diff'; content: { path: string; patch: string } }
  | { type: 'image'; content: { data: string; mediaType: string } };

export interface RapToolResult {
  type: 'tool_result';
  group_id: string;
  id: string;
  call_id?: string | null;
  text?: string | null;
  content?: RapContentItem[] | null;
  display_as?: RapDisplaySegment[] | null;
  subscription?: boolean;
}
export interface RapSubscriptionEvent {
  type: 'subscription_event';
  group_id: string;
  tool_call_id: string;
  text: string;
  associative?: boolean;
  final?: boolean;
}
export interface RapOAuthRequest {
  type: 'oauth';
  group_id: string;
  id: string;
  call_id?: string | null;
  auth_url: string;
}
export interface RapUserChoiceRequest {
  type: 'user_choice';
  group_id: string;
  id: string;
  call_id?: string | null;
  prompt: string;
  choices: string[];
  default: number;
  response_url: string;
}
export interface RapViewUpdate {
  type: 'view_update';
  group_id: string;
  view_type: string;
  content: unknown;
}
export type RapCallback = RapToolResult | RapSubscriptionEvent | RapOAuthRequest | RapUserChoiceRequest | RapViewUpdate;

type Check<T> = { ok: true; value: T } | { ok: false; error: string };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isString = (v: unknown): v is string => typeof v === 'string';
const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
const optional = (v: unknown, test: (x: unknown) => boolean) => v === undefined || v === null || test(v);
const TOOL_NAME = /^[A-Za-z0-9_-]{1,128}$/;

function isUrl(v: unknown): boolean {
  if (!isString(v)) return false;
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

/** A manifest the runtime may load; anything wrong rejects the whole toolset, as RAP asks (decision 38). */
export function checkManifest(v: unknown): Check<RapManifest> {
  const fail = (error: string): Check<RapManifest> => ({ ok: false, error });
  if (!isObject(v)) return fail('manifest is not a JSON object');
  if (!nonEmpty(v.name) || v.name.length > 128) return fail('manifest name must be 1..128 characters');
  if (!isUrl(v.endpoint)) return fail(`manifest endpoint ${JSON.stringify(v.endpoint)} is not an http(s) URL`);
  if (!optional(v.description, isString)) return fail('manifest description must be a string');
  if (!Array.isArray(v.tools) || v.tools.length === 0) return fail('manifest has no tools');
  const seen = new Set<string>();
  for (const [i, t] of v.tools.entries()) {
    if (!isObject(t)) return fail(`tools[${i}] is not an object`);
    if (!isString(t.name) || !TOOL_NAME.test(t.name)) return fail(`tools[${i}].name must match [A-Za-z0-9_-]{1,128}`);
    if (seen.has(t.name)) return fail(`tool '${t.name}' appears twice`);
    seen.add(t.name);
    if (!isString(t.description)) return fail(`tool '${t.name}' has no description`);
    if (!isObject(t.inputSchema)) return fail(`tool '${t.name}' has no inputSchema object`);
  }
  return { ok: true, value: v as unknown as RapManifest };
}

function checkContent(v: unknown): string | undefined {
  if (!Array.isArray(v)) return 'content must be an array';
  for (const c of v) {
    if (!isObject(c)) return 'content items must be objects';
    if (
      c.type === 'text' ? !isString(c.text) : c.type === 'image' ? !isString(c.data) || !isString(c.mediaType) : true
    ) {
      return `content item of type ${JSON.stringify(c.type)} is not text{text} or image{data,mediaType}`;
    }
  }
  return undefined;
}

/**
 * A callback as the gateway receives it: strict on the `type` discriminator and required fields (an unknown type or a
 * missing field is a 400); unknown display segments are tolerated and dropped later (RAP asks runtimes to be lenient).
 */
export function checkCallback(v: unknown): Check<RapCallback> {
  const fail = (error: string): Check<RapCallback> => ({ ok: false, error });
  if (!isObject(v)) return fail('callback is not a JSON object');
  if (!nonEmpty(v.group_id)) return fail('group_id is required');
  const callId = () => optional(v.call_id, isString);
  switch (v.type) {
    case 'tool_result': {
      if (!nonEmpty(v.id)) return fail('id is required');
      if (!callId() || !optional(v.text, isString) || !optional(v.subscription, (x) => typeof x === 'boolean')) {
        return fail('tool_result has a field of the wrong type');
      }
      if (v.content !== undefined && v.content !== null) {
        const err = checkContent(v.content);
        if (err) return fail(err);
      }
      if (!optional(v.display_as, Array.isArray)) return fail('display_as must be an array');
      break;
    }
    case 'subscription_event':
      if (!nonEmpty(v.tool_call_id)) return fail('tool_call_id is required');
      if (!isString(v.text)) return fail('text is required');
      if (
        !optional(v.associative, (x) => typeof x === 'boolean') ||
        !optional(v.final, (x) => typeof x === 'boolean')
      ) {
        return fail('associative and final must be booleans');
      }
      break;
    case 'oauth':
      if (!nonEmpty(v.id) || !callId()) return fail('oauth needs id');
      if (!isUrl(v.auth_url)) return fail('auth_url must be an http(s) URL');
      break;
    case 'user_choice': {
      if (!nonEmpty(v.id) || !callId()) return fail('user_choice needs id');
      if (!isString(v.prompt)) return fail('prompt is required');
      if (!Array.isArray(v.choices) || v.choices.length === 0 || !v.choices.every(isString))
        return fail('choices must be a non-empty array of strings');
      const d = v.default ?? 0;
      if (!Number.isInteger(d) || (d as number) < 0 || (d as number) >= v.choices.length)
        return fail('default must index a choice');
      if (!isUrl(v.response_url)) return fail('response_url must be an http(s) URL');
      return { ok: true, value: { ...(v as unknown as RapUserChoiceRequest), default: d as number } };
    }
    case 'view_update':
      // A name, not a document: it keys what the gateway keeps and every event that announces the view.
      if (!nonEmpty(v.view_type) || v.view_type.length > 256) return fail('view_type must be 1..256 characters');
      if (!('content' in v)) return fail('content is required');
      break;
    default:
      return fail(`unknown callback type ${JSON.stringify(v.type)}`);
  }
  return { ok: true, value: v as unknown as RapCallback };
}

/** Base URLs are used without their trailing slashes (IMPL §1.1). */
export const trimBase = (base: string) => base.replace(/\/+$/, '');
