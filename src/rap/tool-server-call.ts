/**
 * One invocation's side of a RAP tool server: the context its handler gets (result, subscription events, OAuth,
 * choices, views), checked so it only ever emits what Infinity's runtime can parse, and the callback poster that
 * retries 5xx and network failures but never a 4xx. A 410 Gone ends the call (its URL was revoked).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { newCapabilityKey } from './tool-server-auth';
import type { RapCallback, RapContentItem, RapDisplaySegment } from './wire';

export interface RapResult {
  text?: string;
  content?: RapContentItem[];
  displayAs?: RapDisplaySegment[];
}

export interface RapSubscription {
  /** One event; `associative` inlines it in the thread, otherwise the runtime gives it a child thread. */
  event(text: string, options?: { associative?: boolean; final?: boolean }): Promise<void>;
  readonly active: boolean;
}

export interface RapCallContext {
  threadId: string;
  toolCallId: string;
  callId: string | null;
  ancestors: string[];
  userId?: string;
  /** Aborts on `/cancel_tool_call` for this call, `/close_thread` for its thread, or a 410 from its callback URL. */
  signal: AbortSignal;
  /** The call's result; once. */
  result(result: string | RapResult): Promise<void>;
  /** An error result the model can read (`Error: …`). */
  error(message: string): Promise<void>;
  /** Confirms a subscription (the call's result) and returns the handle that sends its events. */
  subscribe(text: string): Promise<RapSubscription>;
  /** Asks the user to authorize; send the result yourself once the token arrives. */
  oauth(authUrl: string): Promise<void>;
  /** Asks the user to choose; resolves with the chosen index (the default on dismissal). */
  choose(prompt: string, choices: string[], defaultIndex?: number): Promise<number>;
  /** Updates a display-only view of the thread. */
  view(viewType: string, content: unknown): Promise<void>;
}

/** The runtime refused a callback for good (4xx), or it could not be delivered after retries. */
export class RapCallbackError extends Error {
  override readonly name = 'RapCallbackError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

const SEGMENTS = new Set(['text', 'diff', 'image']);

function checkOutgoing(r: RapResult): void {
  if (r.text === undefined && (r.content === undefined || r.content.length === 0))
    throw new TypeError('a result needs text or content');
  for (const s of r.displayAs ?? [])
    if (!SEGMENTS.has(s.type)) throw new TypeError(`display segment type '${s.type}' is not text, diff or image`);
  for (const c of r.content ?? [])
    if (c.type !== 'text' && c.type !== 'image')
      throw new TypeError(`content item type '${(c as { type: string }).type}' is not text or image`);
}

/** Posts callbacks: attempts on 5xx or network failure with exponential backoff, throws at once on a 4xx. */
export function callbackPoster(options: {
  callbackAttempts?: number;
  callbackBackoffMs?: number;
  callbackHeaders?: Record<string, string>;
}) {
  const attempts = options.callbackAttempts ?? 4;
  const backoff = options.callbackBackoffMs ?? 200;
  return async (url: string, body: RapCallback): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      let status: number | undefined;
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...options.callbackHeaders },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(10_000),
          // A redirect would carry the callback (and its headers) to a URL the allow-list never saw: not followed.
          redirect: 'error',
        });
        await res.body?.cancel();
        status = res.status;
        if (res.ok) return;
        if (status === 410)
          throw new RapCallbackError(
            'callback URL revoked (HTTP 410): the call was answered, its subscription ended or its thread closed',
            status,
          );
        if (status < 500) throw new RapCallbackError(`callback refused with HTTP ${status}`, status);
      } catch (e) {
        if (e instanceof RapCallbackError) throw e;
      }
      if (attempt >= attempts)
        throw new RapCallbackError(
          `callback failed after ${attempts} attempts${status ? ` (HTTP ${status})` : ''}`,
          status,
        );
      await sleep(backoff * 2 ** (attempt - 1));
    }
  };
}

/**
 * A choice waiting for its answer. Whoever answers is the user's client, which holds no token of the server: the
 * unguessable key in the choice's `response_url`, which only the thread's status shows, is what lets it answer.
 */
export interface OpenChoice {
  key: string;
  resolve(selected: number): void;
}

export interface CallSetup {
  /** The invocation's body (RAP §2.1). */
  body: Record<string, unknown>;
  id: string;
  groupId: string;
  callbackUrl: string;
  /** Aborted by `/cancel_tool_call`, `/close_thread` or a 410 from the callback URL. */
  abort: AbortController;
  post: ReturnType<typeof callbackPoster>;
  /** Open choices by call id, resolved by the server's `/user_choice_response` when the answer bears their key. */
  choices: Map<string, OpenChoice>;
  /** The server's `/user_choice_response` URL; each choice's `response_url` adds its key. */
  choiceResponseUrl: string;
  /** The call is over for the server (a subscription ended or was cancelled). */
  onEnded(): void;
}

/** The handler's context for one call, and whether the call has its result yet or became a subscription. */
export function callContext(setup: CallSetup): {
  ctx: RapCallContext;
  readonly answered: boolean;
  readonly subscribed: boolean;
} {
  const { body: b, id, groupId, callbackUrl, abort, post, choices } = setup;
  const callId = typeof b.call_id === 'string' ? b.call_id : null;
  const ids = { group_id: groupId, id, call_id: callId };
  let answered = false;
  let subscribed = false;
  // Nothing can arrive through a revoked URL again: end the call (its signal aborts, a subscription stops).
  const send = async (body: RapCallback) => {
    try {
      await post(callbackUrl, body);
    } catch (e) {
      if (e instanceof RapCallbackError && e.status === 410) abort.abort(e);
      throw e;
    }
  };
  const result = async (r: string | RapResult, subscription = false) => {
    if (answered) throw new Error(`call ${id} already has its result`);
    const res = typeof r === 'string' ? { text: r } : r;
    checkOutgoing(res);
    answered = true;
    await send({
      type: 'tool_result',
      ...ids,
      ...(res.text !== undefined && { text: res.text }),
      ...(res.content && { content: res.content }),
      ...(res.displayAs && { display_as: res.displayAs }),
      ...(subscription && { subscription: true }),
    });
  };
  const ctx: RapCallContext = {
    threadId: groupId,
    toolCallId: id,
    callId,
    ancestors: Array.isArray(b.thread_ancestors) ? (b.thread_ancestors as string[]) : [],
    ...(typeof b.user_id === 'string' && { userId: b.user_id }),
    signal: abort.signal,
    result: (r) => result(r),
    error: (m) => result(m.startsWith('Error: ') ? m : `Error: ${m}`),
    subscribe: async (text) => {
      await result(text, true);
      // Cancelled (or revoked) while the start result was on its way: a subscription born ended.
      let active = !abort.signal.aborted;
      subscribed = active; // the call stays cancellable after its handler returns, until the subscription ends
      abort.signal.addEventListener('abort', () => ((active = false), setup.onEnded()), { once: true });
      return {
        get active() {
          return active;
        },
        event: async (t, o = {}) => {
          if (!active) throw new Error(`subscription ${id} has ended`);
          if (o.final) {
            active = false;
            setup.onEnded();
          }
          await send({
            type: 'subscription_event',
            group_id: groupId,
            tool_call_id: id,
            text: t,
            ...(o.associative && { associative: true }),
            ...(o.final && { final: true }),
          });
        },
      };
    },
    oauth: (authUrl) => send({ type: 'oauth', ...ids, auth_url: authUrl }),
    choose: async (prompt, list, defaultIndex = 0) => {
      if (list.length === 0) throw new TypeError('choose needs at least one choice');
      if (!Number.isInteger(defaultIndex) || defaultIndex < 0 || defaultIndex >= list.length) {
        throw new TypeError(`choose: the default ${defaultIndex} is not one of 0..${list.length - 1}`);
      }
      // A choice is identified by its call (RAP §5.2): one open choice per call at a time.
      const key = newCapabilityKey();
      const chosen = new Promise<number>((resolve) => choices.set(id, { key, resolve }));
      await send({
        type: 'user_choice',
        group_id: groupId,
        id,
        call_id: callId,
        prompt,
        choices: list,
        default: defaultIndex,
        response_url: `${setup.choiceResponseUrl}?key=${key}`,
      });
      return chosen;
    },
    view: async (viewType, content) => {
      if (content === undefined) throw new TypeError(`view '${viewType}' needs content`);
      await send({ type: 'view_update', group_id: groupId, view_type: viewType, content });
    },
  };
  return {
    ctx,
    get answered() {
      return answered;
    },
    get subscribed() {
      return subscribed;
    },
  };
}
