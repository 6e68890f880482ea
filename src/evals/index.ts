/** Replay-evals and outcome scores (issue 29 §1, docs/evals.md): what the package exports of src/evals. */
export {
  evaluateThreads,
  type ChangedAgent,
  type Divergence,
  type DivergenceAction,
  type EvalOptions,
  type EvalReport,
  type EvalTotals,
  type RoundEval,
  type SliceAgentEval,
  type SliceEval,
  type ThreadEval,
} from './evaluate';
export { evalMarkdown } from './report';
export {
  exactToolMatch,
  jsonSchemaCheck,
  type JsonSchemaCheckOptions,
  type RoundView,
  type Scorer,
  type ScoreValue,
} from './scorers';
export type { CandidateTurn } from './candidate';
export type { ToolChoice } from './recorded';
export { recordScore, scores, type ScoreInput } from './scores';
export {
  EXPORT_FORMAT,
  exportThread,
  importThreadExports,
  parseThreadExport,
  type ExportedThread,
  type ThreadExport,
} from './export-file';
export { EvalOptionError, MalformedExportError, UnknownSliceError, UnknownThreadError } from './errors';
export {
  InvalidScoreError,
  type EvalRecords,
  type NewScore,
  type OutcomeScore,
  type RecordedSlice,
  type ScoreQuery,
} from '../store/eval-records';
