/**
 * An experiment's `classes` (docs/experiments.md): names for final texts, each the first whose pattern (a
 * case-insensitive regular expression) matches. The patterns come with the file, which may be someone else's (issue 38,
 * finding 9c): they are bounded and compiled when the file is read, with a clear error, and each runs over a text
 * under a time limit, so that a pattern that backtracks catastrophically (`(a+)+$`) stops the run with a clear error
 * instead of hanging it.
 */
import { createContext, Script } from 'node:vm';
import { ExperimentFileError } from './errors';

/** At most this many classes. */
export const MAX_CLASSES = 64;
/** Characters of a pattern, at most. */
export const MAX_CLASS_PATTERN_LENGTH = 1000;
/**
 * How long one pattern may run over one text. A pattern that is not pathological takes microseconds on texts of a
 * model's size; one that backtracks catastrophically takes ages on a few dozen characters: no bound on the texts'
 * length would keep it short, a time limit does.
 */
export const CLASS_MATCH_TIMEOUT_MS = 1000;

/** Checks a file's `classes`: a map of names to patterns that compile, within the bounds above. */
export function checkClasses(
  classes: unknown,
  bad: (why: string) => ExperimentFileError,
  maxNameLength: number,
): asserts classes is Record<string, string> {
  const isMap = typeof classes === 'object' && classes !== null && !Array.isArray(classes);
  if (!isMap || !Object.values(classes).every((p) => typeof p === 'string'))
    throw bad('classes maps a class name to a pattern');
  const entries = Object.entries(classes as Record<string, string>);
  if (entries.length > MAX_CLASSES) throw bad(`classes: at most ${MAX_CLASSES} classes, got ${entries.length}`);
  for (const [name, p] of entries) {
    if (name === '' || name.length > maxNameLength)
      throw bad(`classes: a class name is 1 to ${maxNameLength} characters`);
    if (p.length > MAX_CLASS_PATTERN_LENGTH)
      throw bad(
        `classes.${name}: a pattern of ${p.length} characters; patterns take up to ${MAX_CLASS_PATTERN_LENGTH}`,
      );
    try {
      new RegExp(p, 'i');
    } catch (e) {
      throw bad(`classes.${name}: not a regular expression (${e instanceof Error ? e.message : String(e)})`);
    }
  }
}

// A context of its own, holding only the pattern and the text: V8 interrupts a script (a regular expression's match
// included) that outlives its `timeout`, which code in this context cannot do to itself.
const matcher = new Script('new RegExp(pattern, "i").test(text)');
const sandbox = createContext({ pattern: '', text: '' });

/**
 * The class of `text`: the first name whose pattern matches it, else `other`.
 * @throws ExperimentFileError when a pattern does not compile, or runs longer than {@link CLASS_MATCH_TIMEOUT_MS}
 */
export function classOf(text: string, classes: Record<string, string>): string {
  for (const [name, pattern] of Object.entries(classes)) {
    sandbox.pattern = pattern;
    sandbox.text = text;
    let matched: unknown;
    try {
      matched = matcher.runInContext(sandbox, { timeout: CLASS_MATCH_TIMEOUT_MS });
    } catch (e) {
      const timedOut = (e as { code?: unknown }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT';
      throw new ExperimentFileError(
        timedOut
          ? `classes.${name}: the pattern ran over ${CLASS_MATCH_TIMEOUT_MS} ms on a text of ${text.length} characters ` +
              '(catastrophic backtracking? nested quantifiers such as (a+)+ are the usual cause)'
          : `classes.${name}: not a regular expression (${e instanceof Error ? e.message : String(e)})`,
      );
    } finally {
      sandbox.text = '';
    }
    if (matched === true) return name;
  }
  return 'other';
}
