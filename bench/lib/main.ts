/** Runs a benchmark program's `main`: exit 0 when it resolves, print the error and exit 1 when it rejects. */
export function runMain(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
