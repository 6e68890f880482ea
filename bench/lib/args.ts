/** Command-line arguments of the probes: `--name value` flags and the positional arguments around them. */

/** The value after `--name`, or undefined when the flag is absent. */
export function flag(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** The arguments that are neither a flag nor a flag's value (a boolean flag such as `--cluster` must come last). */
export function positionals(): string[] {
  return process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !all[i - 1]?.startsWith('--'));
}
