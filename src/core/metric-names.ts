/**
 * The runtime's own Prometheus metrics (`infinity_*`), next to Temporal's: names, label keys and help texts, shared by
 * the workflow, the slice activities and the RAP gateway. Emitted through the Temporal SDK runtime's meter, so one
 * exporter (`installMetricsRuntime`, the CLI's `--metrics-port`) serves both. docs/operations.md lists them. Counters
 * carry Prometheus's `_total` in their names: the SDK's exporter (1.22) does not add it (decision 81).
 */
export const METRICS = {
  slicesStarted: {
    name: 'infinity_slices_started_total',
    help: 'Slice attempts started (label kind: the thread kind)',
  },
  slicesCommitted: {
    name: 'infinity_slices_committed_total',
    help: 'Slice attempts that committed a turn (label kind)',
  },
  slicesFailed: {
    name: 'infinity_slices_failed_total',
    help: 'Slice attempts that failed (labels kind, error: the failure type)',
  },
  sliceDuration: {
    name: 'infinity_slice_duration',
    help: 'Duration of committed slice attempts, milliseconds (label kind)',
  },
  tokens: { name: 'infinity_tokens_total', help: 'Model tokens of committed slices (label direction: in | out)' },
  toolCalls: {
    name: 'infinity_tool_calls_total',
    help: 'Tool calls committed (label kind: async | sync | builtin | unknown)',
  },
  historyEvents: {
    name: 'infinity_history_events_total',
    help: 'Subscription events and child reports appended to threads (label kind: event | report)',
  },
  compactions: {
    name: 'infinity_compactions_applied_total',
    help: "Compactions applied (a summary now stands in for a thread's first items)",
  },
  inputsAccepted: {
    name: 'infinity_inputs_accepted_total',
    help: 'Inputs a thread took into its inbox (signals and acknowledged deliveries)',
  },
  inputsDropped: {
    name: 'infinity_inputs_dropped_total',
    help: 'Inputs a thread dropped (label reason: malformed | duplicate | wrong_call | ...)',
  },
  budgetRefused: {
    name: 'infinity_budget_refused_total',
    help: 'Slices that did not start because a budget was reached (label scope: thread | tree | tenant)',
  },
  budgetCost: {
    name: 'infinity_budget_cost_microusd_total',
    help: "Cost of committed slices by the workers' price table, in millionths of a US dollar",
  },
  budgetUnpriced: {
    name: 'infinity_budget_unpriced_slices_total',
    help: 'Committed slices whose model the price table does not know (their tokens count, their cost does not)',
  },
  callbacksRejected: {
    name: 'infinity_callbacks_rejected_total',
    help: 'RAP callbacks the gateway refused (label status: the HTTP status)',
  },
} as const;
