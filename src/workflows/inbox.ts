/**
 * The thread's inbox as Temporal sees it: the `input` signal and, from release 0.5, one signal per kind of input
 * (decision 62), all into the same queue; the count and record of what was dropped (the `drops` query); and the
 * `transcript` query. Registering handlers and answering queries issue no commands, so histories recorded before any
 * of this replay unchanged; no recorded history holds a signal of the new names.
 */
import { metricMeter, setHandler, uuid4 } from '@temporalio/workflow';
import { METRICS } from '../core/metric-names';
import { KIND_SIGNAL_NAMES, type KindSignalName } from '../core/readable-input';
import type { DropReason, DroppedInputs, HistoryItem, InputMessage } from '../core/types';
import { inputLimitViolation, validateInputMessage, validateKindSignal, type Validation } from '../core/validate';
import { dropsQuery, HANDLER_DOCS, inputSignal, kindSignals, transcriptQuery } from './definitions';
import { v012, v013, v02, v06, v08 } from './patches';
import type { ThreadState } from './state';
import { inputLine, itemLine } from './ui-text';

/** Drops kept for the query and the current details; transcript lines kept in memory (this run only). */
const DROPS_KEPT = 10;
const TRANSCRIPT_KEPT = 40;

export interface Inbox {
  /** Counts a dropped input (for the status query and the metric) and records what it was. */
  drop(reason: DropReason, m?: InputMessage | { id?: unknown }, what?: string): void;
  /** Adds conversation lines to the `transcript` query. */
  note(items: readonly HistoryItem[], lines?: readonly string[]): void;
  /**
   * Takes a raw input exactly as the signal named `signal` does (`input` or a kind's: its checks, its drops; `via`
   * names it in a drop's record): the input a thread was started with (`ThreadWorkflowArgs.firstInput`, decision 72)
   * comes in here.
   */
  take(raw: unknown, signal: string, via: string): void;
}

export function installInbox(
  threadId: string,
  st: ThreadState,
  enqueue: (m: InputMessage) => void,
  toolName: (callId: string) => string | undefined,
  /** Shows a drop in the current details at once (issues no command). */
  dropped: () => void,
  /** A `migrate` input arrived (0.12): the run continues as new at its next pause between slices. */
  migrate: () => void,
  /** A `set_agent` input arrived (0.13): the thread's next slice runs that agent. */
  setAgent: (agent: string) => void,
): Inbox {
  // Metrics issue no commands, and the SDK skips them while replaying: every input is counted once.
  const counter = metricMeter.createCounter(METRICS.inputsDropped.name, undefined, METRICS.inputsDropped.help);
  const transcript: string[] = [];

  const drop: Inbox['drop'] = (reason, m, what) => {
    st.dropped[reason] = (st.dropped[reason] ?? 0) + 1;
    counter.add(1, { reason });
    const id = typeof m?.id === 'string' ? m.id.slice(0, 100) : undefined;
    const described = what ?? (m !== undefined && 'content' in m ? inputLine(m, toolName) : 'an input');
    st.recentDrops = [
      ...st.recentDrops,
      { ...(id !== undefined && { id }), reason, what: described.slice(0, 200) },
    ].slice(-DROPS_KEPT);
    dropped();
  };

  /**
   * 0.12 (issue 39): a `migrate` input is taken here and never queued: the run continues as new at its next pause
   * between slices (thread.ts). Release 0.11's checks refused its synthetic type at the signal; a history where a
   * signal brought one replays with it dropped, as it ran. Asked before any other patch question of the signal, and
   * only for a migrate input. Returns whether `m` was one.
   */
  const tookMigrate = (m: InputMessage, raw: unknown, via: string): boolean => {
    if (m.synthetic?.type !== 'migrate') return false;
    if (!v012()) drop('malformed', asIdOnly(raw), `${via}: a migrate input, which release 0.11 does not take`);
    else if (st.prep.closed) drop('closed', m, `${via}: a migrate input`);
    else migrate();
    return true;
  };

  /**
   * 0.13 (issue 40): a `set_agent` input is taken here and never queued, like a migrate: the thread's next slice runs
   * the named agent. Release 0.12's checks refused its synthetic type; a history where a signal brought one replays
   * with it dropped, as it ran. Asked only for such an input. Returns whether `m` was one.
   */
  const tookSetAgent = (m: InputMessage, raw: unknown, via: string): boolean => {
    if (m.synthetic?.type !== 'set_agent') return false;
    if (!v013()) drop('malformed', asIdOnly(raw), `${via}: a set_agent input, which release 0.12 does not take`);
    else if (st.prep.closed) drop('closed', m, `${via}: a set_agent input`);
    else setAgent(m.synthetic.agent);
    return true;
  };

  /**
   * The checks every signal's input ends with, then the queue. An input that passed every check but the complete ones
   * of 0.6 (issue 26; read with the lenient ones to get this far) is dropped: 0.6's patch is asked last, and only for
   * such an input, where 0.6 asked it. So is 0.8's for a `rewind` control input (issue 28 §2), which is taken.
   */
  const admit = (v: Validation<InputMessage>, m: InputMessage, raw: unknown, via: string): void => {
    if (!v.ok) {
      v06();
      drop('malformed', asIdOnly(raw), `${via}: ${v.error}`);
      return;
    }
    if (m.synthetic?.type === 'rewind') v08();
    enqueue(m);
  };

  const takeInput = (raw: unknown, via = 'input signal'): void => {
    const v = validateInputMessage(raw);
    const m = v.ok ? v.value : v.lenient;
    if (m === undefined || m.threadId !== threadId) {
      drop('malformed', asIdOnly(raw), `${via}: ${m === undefined ? errorOf(v) : namesThread(m)}`);
      return;
    }
    if (v.ok && (tookMigrate(m, raw, via) || tookSetAgent(m, raw, via))) return;
    // 0.2: raw signals bypass the client's checks, and one poison input would fail every slice that carries it.
    // Its patch is asked only here, after the checks above, as before: for most runs this is where 0.11's is asked,
    // and a patch asked at another point would meet its marker at another point of the history.
    v02();
    const limit = inputLimitViolation(raw);
    if (limit !== undefined) {
      drop('malformed', asIdOnly(raw), `${via}: ${limit}`);
      return;
    }
    admit(v, m, raw, via);
  };
  setHandler(inputSignal, (raw: unknown) => takeInput(raw), { description: HANDLER_DOCS.input });
  /**
   * 0.6 (issue 30): a signal by kind may leave out `threadId` (this thread) and `id` (a new one, from the workflow's
   * deterministic uuid4), so a hand-written `temporal workflow signal --name user_text --input '{"text": "hi"}'` works.
   * 0.6's patch is asked only for a payload that leaves one out, as 0.6 asked it.
   */
  const withDefaults = (raw: unknown): unknown => {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return raw;
    const r = raw as Record<string, unknown>;
    // An own `__proto__` key is refused by the checks, and a copy here could lose it: such a payload stays as sent.
    if ((r.threadId !== undefined && r.id !== undefined) || Object.prototype.hasOwnProperty.call(r, '__proto__'))
      return raw;
    v06();
    return { ...r, ...(r.threadId === undefined && { threadId }), ...(r.id === undefined && { id: uuid4() }) };
  };
  const takeKind = (name: KindSignalName, given: unknown, via = `${name} signal`): void => {
    const raw = withDefaults(given);
    const v = validateKindSignal(name, raw);
    const m = v.ok ? v.value : v.lenient;
    if (m === undefined || m.threadId !== threadId) {
      drop('malformed', asIdOnly(raw), `${via}: ${m === undefined ? errorOf(v) : namesThread(m)}`);
      return;
    }
    if (v.ok && (tookMigrate(m, raw, via) || tookSetAgent(m, raw, via))) return;
    admit(v, m, raw, via);
  };
  for (const name of KIND_SIGNAL_NAMES) {
    setHandler(kindSignals[name], (given: unknown) => takeKind(name, given), { description: HANDLER_DOCS[name] });
  }
  setHandler(dropsQuery, (): DroppedInputs => ({ counts: { ...st.dropped }, recent: [...st.recentDrops] }), {
    description: HANDLER_DOCS.drops,
  });
  setHandler(transcriptQuery, () => [...transcript], { description: HANDLER_DOCS.transcript });

  return {
    drop,
    take(raw, signal, via) {
      if (signal === 'input') takeInput(raw, via);
      else if ((KIND_SIGNAL_NAMES as readonly string[]).includes(signal)) takeKind(signal as KindSignalName, raw, via);
      // Named only when it is a string: a hostile object (`{"toString": 1}`) would throw in `String()`.
      else drop('malformed', asIdOnly(raw), `${via}: no signal is named ${nameOf(signal)}`);
    },
    note(items, lines = []) {
      transcript.push(...items.map((i) => itemLine(i, toolName)), ...lines);
      if (transcript.length > TRANSCRIPT_KEPT) transcript.splice(0, transcript.length - TRANSCRIPT_KEPT);
    },
  };
}

const nameOf = (x: unknown): string =>
  typeof x === 'string' ? `'${x.slice(0, 40)}'` : `by a value of type ${typeof x}`;
const errorOf = (v: Validation<InputMessage>): string => (v.ok ? '' : v.error);
const namesThread = (m: InputMessage): string => `names thread '${m.threadId}'`;

/** The id of a raw payload, read without walking it (it may be anything, nested arbitrarily deep). */
function asIdOnly(raw: unknown): { id?: unknown } | undefined {
  return typeof raw === 'object' && raw !== null && !Array.isArray(raw)
    ? { id: (raw as { id?: unknown }).id }
    : undefined;
}
