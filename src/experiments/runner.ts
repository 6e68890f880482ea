/**
 * Running an interleaving experiment (issue 29 §2, docs/experiments.md) on a real runtime: the base is recorded once
 * (or an existing thread named), each variant and repetition forks it (`forkThread`, a pending call kept for the
 * experiment to answer), runs the timeline with the variant's events at its slot, waits until the thread and its
 * children are at rest after every step, and reads the decision the thread ended with.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { AgentClient } from '../client/agent-client';
import type { HistoryItem, ThreadStatus } from '../core/types';
import { canonicalJson } from '../evals/compare';
import { subscriptionEvent, subscriptionStart, toolResult } from '../tools/messages';
import { classOf } from './classes';
import type { ExperimentFile, ExperimentStep } from './file';
import { type DecisionTable, tabulate } from './table';
import { type Variant, variantsOf } from './variants';

/** What a variant's thread ended with: its last model turn's tool call, or the class of its last text. */
export interface Decision {
  /** `call <tool> <args JSON>` or `text:<class>`: a column of the table. */
  label: string;
  tool?: string;
  args?: unknown;
  text?: string;
}

export interface VariantResult {
  variant: Variant;
  /** From 0. */
  repetition: number;
  threadId: string;
  decision: Decision;
  /** Steps the model's choices made impossible (no such call pending to answer, no subscription for the events). */
  notes: string[];
}

export interface ExperimentResult {
  experiment: string;
  /** The candidate agent, when the run named one. */
  agent?: string;
  baseThreadId: string;
  repeat: number;
  variants: VariantResult[];
  table: DecisionTable;
}

export interface ExperimentRunOptions {
  /** Runs of each variant. @default 1 */
  repeat?: number;
  /** Told each variant's result as it ends (progress). */
  onVariant?(result: VariantResult): void;
  /** How long one wait for rest may take. @default 60000 */
  timeoutMs?: number;
  /**
   * Variant runs at once. Each is a thread of its own, so the table does not depend on it; a real model sees this many
   * conversations in flight.
   * @default 4
   */
  concurrency?: number;
  /**
   * The candidate agent (issue 40): the base thread starts with it and every variant's fork runs it (its
   * instructions, models and tools, as the worker defines it: define it with the experiment's tools).
   * @default the base's agent (a recorded base: the worker's default agent)
   */
  agent?: string;
}

/**
 * The decision of a history: its last model item (a tool call, or a text classed by `classes`).
 * @throws ExperimentFileError when a class's pattern is not a regular expression or runs too long (classes.ts)
 */
export function decisionOf(items: readonly HistoryItem[], classes: Record<string, string> = {}): Decision {
  for (let i = items.length - 1; i >= 0; i--) {
    const it = items[i]!;
    if (it.kind === 'tool_call')
      return { label: `call ${it.name} ${canonicalJson(it.args)}`, tool: it.name, args: it.args };
    if (it.kind === 'assistant') {
      return { label: `text:${classOf(it.text, classes)}`, text: it.text };
    }
  }
  return { label: 'none' };
}

/**
 * Runs every variant `repeat` times on `client`'s worker (which must offer `experimentTools(exp)`); the table counts
 * decisions per factor level.
 * @example
 * ```ts
 * const exp = parseExperiment(JSON.parse(readFileSync(file, 'utf8')), file);
 * const system = await startLocalSystem({ model, tools: experimentTools(exp) });
 * const result = await runExperiment(system.client, exp, { repeat: 5 });
 * console.log(experimentMarkdown(result, model.id));
 * ```
 */
export async function runExperiment(
  client: AgentClient,
  exp: ExperimentFile,
  options: ExperimentRunOptions = {},
): Promise<ExperimentResult> {
  const repeat = options.repeat ?? 1;
  const run = new Run(client, exp, options.timeoutMs ?? 60_000, options.agent);
  const baseThreadId = await run.base();
  const variants = variantsOf(exp);
  const runs = Array.from({ length: repeat }, (_, r) => variants.map((variant, i) => ({ variant, i, r }))).flat();
  // In run order whatever order they finish in: repetition by repetition, variants in file order.
  const results = new Array<VariantResult>(runs.length);
  let next = 0;
  const worker = async () => {
    for (let k = next++; k < runs.length; k = next++) {
      const { variant, i, r } = runs[k]!;
      const result = await run.variant(baseThreadId, variant, i, r);
      results[k] = result;
      options.onVariant?.(result);
    }
  };
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 4));
  await Promise.all(Array.from({ length: Math.min(concurrency, runs.length) }, worker));
  return {
    experiment: exp.name,
    ...(options.agent !== undefined && { agent: options.agent }),
    baseThreadId,
    repeat,
    variants: results,
    table: tabulate(results),
  };
}

class Run {
  constructor(
    private readonly client: AgentClient,
    private readonly exp: ExperimentFile,
    private readonly timeoutMs: number,
    private readonly agent: string | undefined,
  ) {}

  async base(): Promise<string> {
    const { base } = this.exp;
    if ('thread' in base) return base.thread;
    const threadId = `${this.exp.name}-base-${randomUUID().slice(0, 8)}`;
    if (this.agent !== undefined) await this.client.startThread({ threadId, agent: this.agent });
    const state = { subscriptions: new Map<string, string>(), answeredChildren: new Set<string>(), notes: [] };
    for (const step of base.steps) await this.step(threadId, step, state);
    return threadId;
  }

  async variant(baseThreadId: string, variant: Variant, index: number, repetition: number): Promise<VariantResult> {
    const base = this.exp.base;
    const fork = await this.client.forkThread(baseThreadId, {
      at: 'thread' in base ? (base.at ?? 'now') : 'now',
      pendingCall: 'keep',
      threadId: `${this.exp.name}-v${index}-r${repetition}-${randomUUID().slice(0, 8)}`,
      ...(this.agent !== undefined && { agent: this.agent }),
    });
    const state: VariantState = { subscriptions: new Map(), answeredChildren: new Set(), notes: [] };
    for (const step of this.exp.timeline) {
      if ('slot' in step) {
        if (step.slot === variant.timing) await this.events(fork.threadId, variant, state);
      } else await this.step(fork.threadId, step, state);
    }
    const decision = decisionOf(await fork.history(), this.exp.classes);
    return { variant, repetition, threadId: fork.threadId, decision, notes: state.notes };
  }

  private async step(threadId: string, step: ExperimentStep, state: VariantState): Promise<void> {
    const thread = this.client.thread(threadId);
    if ('send' in step) await thread.sendUserText(step.send);
    else if ('answer' in step) {
      const pending = (await thread.status()).pendingCall;
      if (pending?.name !== step.answer) {
        state.notes.push(`no pending ${step.answer} call to answer (pending: ${pending?.name ?? 'none'})`);
        return;
      }
      const call = { threadId, toolCallId: pending.id };
      await thread.deliver(step.subscription ? subscriptionStart(call, step.text) : toolResult(call, step.text));
      if (step.subscription) state.subscriptions.set(step.answer, pending.id);
    }
    await this.settle(threadId);
  }

  /** The variant's events, in its order, the first `count`, each followed by a wait for rest. */
  private async events(threadId: string, variant: Variant, state: VariantState): Promise<void> {
    const { events } = this.exp;
    const byLabel = new Map(events.items.map((e) => [e.label, e]));
    for (const label of variant.order.slice(0, variant.count)) {
      const event = byLabel.get(label)!;
      if (events.kind === 'subscription') {
        const callId = state.subscriptions.get(events.on);
        if (!callId) {
          state.notes.push(`no ${events.on} subscription for event ${label}`);
          continue;
        }
        const call = { threadId, toolCallId: callId };
        await this.client.deliver(subscriptionEvent(call, event.text, { associative: variant.mode === 'associative' }));
      } else {
        const child = await this.childWaitingOn(threadId, events.on, state.answeredChildren);
        if (!child) {
          state.notes.push(`no child waiting on ${events.on} for event ${label}`);
          continue;
        }
        state.answeredChildren.add(child.threadId);
        await this.client.deliver(
          toolResult({ threadId: child.threadId, toolCallId: child.pendingCall!.id }, event.text),
        );
      }
      await this.settle(threadId);
    }
  }

  /** The first child of `threadId` (in spawn order) waiting on a call of `tool` that no event answered yet. */
  private async childWaitingOn(
    threadId: string,
    tool: string,
    answered: Set<string>,
  ): Promise<ThreadStatus | undefined> {
    for (const id of (await this.client.thread(threadId).status()).children) {
      if (answered.has(id)) continue;
      const s = await this.client.thread(id).status();
      if (s.pendingCall?.name === tool) return s;
    }
    return undefined;
  }

  /**
   * Waits until the thread and every thread below it are at rest (no slice running or queued) and a second look finds
   * nothing new: an event child's report, or a child's, starts another slice of its parent after the first look.
   */
  private async settle(threadId: string): Promise<void> {
    let last = '';
    for (let pass = 0; pass < 100; pass++) {
      const seen = await this.rest(threadId);
      if (seen === last) return;
      last = seen;
      // A report a child sent as it came to rest reaches its parent a moment later: give it that moment.
      await sleep(25);
    }
    throw new Error(`thread ${threadId} and its children did not come to rest`);
  }

  /**
   * `waitForIdle`, asked again when the workflow ended between its describe and its update (an event child closing):
   * the next ask finds it ended and answers its final status.
   */
  private async idle(threadId: string): Promise<ThreadStatus> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.client.thread(threadId).waitForIdle({ timeoutMs: this.timeoutMs });
      } catch (e) {
        if (attempt >= 3 || !(e instanceof WorkflowNotFoundError)) throw e;
      }
    }
  }

  /** Waits for `threadId` and its descendants to idle; a fingerprint of their slice counts and queues. */
  private async rest(threadId: string): Promise<string> {
    const s = await this.idle(threadId);
    const below: string[] = [];
    for (const child of s.children) below.push(await this.rest(child));
    return `${threadId}:${s.slices}:${s.queued}:${s.deferred}[${below.join(',')}]`;
  }
}

interface VariantState {
  /** Tool name → the call id of the subscription it started. */
  subscriptions: Map<string, string>;
  /** Children whose pending call an event answered. */
  answeredChildren: Set<string>;
  notes: string[];
}
