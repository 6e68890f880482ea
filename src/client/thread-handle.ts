/**
 * `ThreadHandle`: one thread of an `AgentClient` (agent-client.ts): send it input, watch and inspect it.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { HistoryItem, InputMessage, ThreadEvent, ThreadStatus } from '../core/types';
import { compactionInput } from '../core/inputs';
import { statusQuery } from '../workflows/definitions';
import type { DeliveryResult } from '../inbox/deliver';
import { InvalidInputError, ThreadClosedError, ThreadNotFoundError } from '../inbox/errors';
import { AsyncQueue } from '../events/async-queue';
import { waitForIdle } from './wait-for-idle';
import { typedUnavailable } from '../inbox/unavailable';
import { type LiveEvent, mergedThreadEvents } from '../events/live-events';
import { statusOrFailed } from './stuck';
import { type AnswerChoiceOptions, choiceOriginsFromEnv, choiceUrlRefusal } from './choice-url';
import { committedSince, inheritedHistory, loadVisible } from '../store/chain';
import { type Followed, type FollowOptions, followThread } from './follow';
import type {
  AgentClient,
  AgentClientOptions,
  DeliverOptions,
  SendUserTextOptions,
  WaitForIdleOptions,
} from './agent-client';

/** Options of {@link ThreadHandle.events}. */
export interface ThreadEventsOptions {
  /** Resume right after this event's `eventId` (from an earlier live event of a worker's endpoint). */
  after?: string;
  /** Ends the stream when aborted. */
  signal?: AbortSignal;
  /** Called once the subscription is in place: every later event reaches this stream. */
  onSubscribed?: () => void;
}

/**
 * One thread of an {@link AgentClient} (from {@link AgentClient.thread} or {@link AgentClient.startThread}): send it
 * input, follow its live events, wait for it, read its history and status.
 *
 * @example
 * ```ts
 * const thread = client.thread('demo');
 * await thread.sendUserText('Is build 42 green yet?');
 * const status = await thread.waitForIdle({ settled: true }); // no slice running or queued, no tool call pending
 * console.log(status.status, (await thread.history()).map((item) => item.kind));
 * ```
 */
export class ThreadHandle {
  /** Made by {@link AgentClient.thread}; `options` are the client's. */
  constructor(
    private readonly agents: AgentClient,
    readonly threadId: string,
    private readonly options: AgentClientOptions,
  ) {}

  /** The underlying Temporal workflow handle. */
  get workflow() {
    return this.agents.temporal.workflow.getHandle(this.threadId);
  }

  /**
   * Sends user text, creating the thread when it does not exist; returns its message id (pass `id` to make a resend
   * idempotent). See {@link AgentClient.sendUserText}.
   *
   * @example
   * ```ts
   * const id = await thread.sendUserText('Is build 42 green yet?');
   * await thread.sendUserText('Is build 42 green yet?', { id }); // a resend: the thread takes it once
   * ```
   */
  sendUserText(text: string, idOrOptions?: string | SendUserTextOptions): Promise<string> {
    return this.agents.sendUserText(this.threadId, text, idOrOptions);
  }

  /** Moves this thread to another agent (issue 40); see {@link AgentClient.setAgent}. */
  setAgent(agent: string): Promise<void> {
    return this.agents.setAgent(this.threadId, agent);
  }

  /** Delivers an input to this thread; its `threadId` must name this thread. */
  deliver(message: InputMessage, options?: DeliverOptions): Promise<DeliveryResult> {
    return this.agents.deliver({ ...message, threadId: this.threadId }, options);
  }

  /**
   * The thread's state; {@link ThreadNotFoundError} when there is no such thread. A thread whose workflow task keeps
   * failing answers no query: its status is then `failed`, with `lastError` saying why (docs/upgrading.md).
   *
   * @example
   * ```ts
   * const { status, pendingCall, slices } = await thread.status();
   * if (status === 'waiting_tool') console.log(`waits on ${pendingCall?.name} after ${slices} slices`);
   * ```
   */
  async status(): Promise<ThreadStatus> {
    try {
      return await typedUnavailable(() =>
        statusOrFailed(this.agents.temporal, this.threadId, () => this.workflow.query(statusQuery), this.options.store),
      );
    } catch (e) {
      if (e instanceof WorkflowNotFoundError) throw new ThreadNotFoundError(this.threadId);
      throw e;
    }
  }

  /**
   * Answers a tool's pending choice (RAP `user_choice`): POSTs `{id, selected}` to the tool's `response_url`.
   * Without `selected`, the choice is dismissed and the tool gets its default (RAP §5.2). The tool then sends the
   * call's result. The URL came with the prompt, so it must be http(s), carry no credentials and be on an allowed
   * origin ({@link AnswerChoiceOptions.allowedOrigins}: loopback unless told otherwise). Throws
   * {@link InvalidInputError} when the thread has no such pending choice, the index is out of range or the URL is
   * refused, and an `Error` when the tool refuses the answer.
   */
  async answerChoice(choiceId: string, selected?: number, options: AnswerChoiceOptions = {}): Promise<number> {
    const choice = (await this.status()).prompts.find((p) => p.kind === 'user_choice' && p.id === choiceId);
    if (!choice || choice.kind !== 'user_choice')
      throw new InvalidInputError(`thread ${this.threadId} has no pending choice '${choiceId}'`);
    const index = selected ?? choice.default;
    if (!Number.isInteger(index) || index < 0 || index >= choice.choices.length) {
      throw new InvalidInputError(`choice ${index} is not one of 0..${choice.choices.length - 1}`);
    }
    const allowed = options.allowedOrigins ?? choiceOriginsFromEnv(process.env.INFINITY_CHOICE_ORIGINS);
    const refused = choiceUrlRefusal(choice.responseUrl, allowed);
    if (refused) throw new InvalidInputError(refused);
    const res = await fetch(choice.responseUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: choice.id, selected: index }),
      signal: AbortSignal.timeout(10_000),
      // A redirect would take the answer to a URL the check above never saw.
      redirect: 'error',
    });
    await res.body?.cancel();
    if (!res.ok) throw new Error(`the tool refused the answer: HTTP ${res.status}`);
    return index;
  }

  /**
   * Compacts the history now (docs/semantics.md §12): a compaction thread summarizes it, and later completions see the
   * summary instead of what it covers. Ignored while a compaction is already running. Throws
   * {@link ThreadNotFoundError} or {@link ThreadClosedError} when the thread cannot take it.
   */
  async compact(id: string = randomUUID()): Promise<void> {
    const r = await this.agents.deliver(compactionInput(id, this.threadId));
    if (!r.delivered) throw new ThreadClosedError(this.threadId);
  }

  /**
   * Resolves with the thread's status when nothing is running or queued (the thread may still await a tool unless
   * `settled`); {@link ThreadTimeoutError} after `timeoutMs` (60 s unless told).
   *
   * @example
   * ```ts
   * await thread.sendUserText('Is build 42 green yet?');
   * await thread.waitForIdle(); // the model has answered, or called a tool and waits for it
   * await thread.waitForIdle({ settled: true, timeoutMs: 120_000 }); // and no tool call is pending
   * ```
   */
  async waitForIdle(options: WaitForIdleOptions = {}): Promise<ThreadStatus> {
    return waitForIdle(this.agents.temporal, {
      threadId: this.threadId,
      settled: options.settled ?? false,
      timeoutMs: options.timeoutMs ?? 60_000,
      finalStatus: () => this.status(),
    });
  }

  /**
   * The committed history, read from the conversation store (needs the client's `store`), without the items rewinds
   * archived (a `rewind` item marks where each took effect). `inherited`: a fork's or a child's history from its
   * source's (its root's) first item, as it was inherited. `branch`: the items the thread's `branch`-th rewind archived
   * (1 for the first; {@link AgentClient.rewindThread}).
   *
   * @example
   * ```ts
   * for (const item of await thread.history()) console.log(item.kind); // 'user', 'assistant', 'tool_call', ...
   * ```
   */
  async history(options: { inherited?: boolean; branch?: number } = {}): Promise<HistoryItem[]> {
    const store = this.options.store;
    if (!store) throw new Error('history() needs the conversation store: pass `store` to AgentClient');
    // `inherited`: a fork's history from its source's first item (a child's from its root's), as it was forked.
    if (options.inherited) return (await inheritedHistory(store, this.threadId)).map((s) => s.item);
    const record = await store.getThread(this.threadId);
    if (options.branch !== undefined) {
      const range = record?.archived?.[options.branch - 1];
      if (!Number.isSafeInteger(options.branch) || !range)
        throw new InvalidInputError(
          `thread ${this.threadId} has no archived branch ${options.branch} (it has ${record?.archived?.length ?? 0})`,
        );
      return (await store.load(this.threadId, range[0], range[1])).map((s) => s.item);
    }
    // Without the ranges rewinds archived (a thread the store has no record of has none).
    return (record ? await loadVisible(store, record) : await store.load(this.threadId)).map((s) => s.item);
  }

  /**
   * Live events of this thread, as they happen: from the worker's hub in this process, or from a worker's events
   * endpoint (`eventsUrl`). A subscriber that attaches mid-slice first gets that slice so far, from its
   * `status: running`; `after` resumes right after an earlier event's `eventId` (endpoints only). Ends when the
   * consumer stops iterating or `signal` aborts. Needs the client's `events` or `eventsUrl`. To see the committed
   * history and then what follows, without a gap or a repeat between them, use {@link follow}.
   *
   * @example
   * ```ts
   * for await (const event of thread.events()) {
   *   if (event.type === 'text_delta') process.stdout.write(event.text);
   *   if (event.type === 'tool_call') console.log(`→ ${event.name} ${JSON.stringify(event.args)}`);
   *   if (event.type === 'completion_finished') break;
   * }
   * ```
   */
  async *events(options: ThreadEventsOptions = {}): AsyncGenerator<LiveEvent> {
    const hub = this.options.events;
    if (!hub) {
      if (!this.options.eventsUrl || this.options.eventsUrl.length === 0)
        throw new Error('events() needs a worker: pass its `events` hub or its `eventsUrl` to AgentClient');
      const urls = typeof this.options.eventsUrl === 'string' ? [this.options.eventsUrl] : this.options.eventsUrl;
      yield* mergedThreadEvents(urls, this.threadId, {
        ...(options.after && { after: options.after }),
        ...(this.options.eventsToken && { token: this.options.eventsToken }),
        ...(options.signal && { signal: options.signal }),
        ...(options.onSubscribed && { onOpen: options.onSubscribed }),
      });
      return;
    }
    const queue = new AsyncQueue<ThreadEvent>();
    const unsubscribe = hub.subscribe(this.threadId, (e) => queue.push(e), { replay: true });
    options.onSubscribed?.();
    const close = () => queue.close();
    if (options.signal?.aborted) close();
    options.signal?.addEventListener('abort', close, { once: true });
    try {
      yield* queue;
    } finally {
      options.signal?.removeEventListener('abort', close);
      unsubscribe();
    }
  }

  /**
   * The thread's committed history (`{ history: item }`, as {@link history} shows it), then its live events, joined
   * so that nothing committed is missed or shown twice, however a slice's commit races the subscription. A slice
   * already in the history read is not replayed; items committed without live events (a rewind, a slice the worker's
   * buffer lost) come from the store as `{ history }` too. Needs the conversation store and live events (`events` or
   * `eventsUrl`); a refused endpoint throws {@link EventStreamError}. Ends when the consumer stops iterating.
   *
   * @example
   * ```ts
   * for await (const step of thread.follow()) {
   *   if ('history' in step) console.log(step.history.kind);
   *   else if (step.type === 'text_delta') process.stdout.write(step.text);
   *   else if (step.type === 'status' && step.status === 'idle') break;
   * }
   * ```
   */
  follow(options: FollowOptions = {}): AsyncGenerator<Followed> {
    const store = this.options.store;
    if (!store) throw new Error('follow() needs the conversation store: pass `store` to AgentClient');
    const threadId = this.threadId;
    return followThread(
      {
        events: (onSubscribed, signal) => this.events({ onSubscribed, signal }),
        committed: (from, to) => committedSince(store, threadId, from, to),
      },
      options,
    );
  }
}
