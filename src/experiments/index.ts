/** Interleaving experiments (issue 29 §2, docs/experiments.md): what the package exports of src/experiments. */
export {
  ExperimentFileError,
  experimentTools,
  parseExperiment,
  type ExperimentEvent,
  type ExperimentFile,
  type ExperimentStep,
} from './file';
export {
  decisionOf,
  runExperiment,
  type Decision,
  type ExperimentResult,
  type ExperimentRunOptions,
  type VariantResult,
} from './runner';
export { experimentMarkdown, tabulate, type DecisionTable } from './table';
export { permutations, sampledOrders, variantsOf, type Variant } from './variants';
