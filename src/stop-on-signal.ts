/**
 * One Ctrl-C stops an app built on `startLocalSystem` (issue 30 item 3). Temporal's runtime answers the first SIGINT
 * or SIGTERM by stopping its workers only, and its listener keeps Node from ending the process, so the process and
 * the dev server it started stayed up until a second signal. Here the first signal shuts the whole system down and
 * then ends the process with that signal, as a process without listeners would end, unless the app listens for it
 * itself: then the app decides what happens after the shutdown.
 */

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

type Listener = (...args: unknown[]) => void;

/**
 * Calls `shutdown` on the first SIGINT or SIGTERM, then re-raises that signal when nothing the app registered after
 * this call listens for it. Returns the function that removes the listeners (call it from `shutdown`).
 */
export function stopOnSignal(shutdown: () => Promise<void>): () => void {
  // Listeners present now are the runtime's own (Temporal's, signal-exit's) or the app's from before the system
  // existed; those registered later are the app's answer to this system's signals.
  const before = new Map(SIGNALS.map((s) => [s, new Set(process.listeners(s) as Listener[])]));
  const remove = () => {
    for (const s of SIGNALS) process.off(s, onSignal);
  };
  function onSignal(signal: NodeJS.Signals): void {
    remove();
    const known = before.get(signal as (typeof SIGNALS)[number]) ?? new Set<Listener>();
    const appListens = (process.listeners(signal) as Listener[]).some((l) => !known.has(l));
    void shutdown()
      .catch((e: unknown) => console.error('shutting the local system down:', e))
      .finally(() => {
        // Temporal's runtime removed its own listener on this signal; with no other, the default action ends us.
        if (!appListens) process.kill(process.pid, signal);
      });
  }
  for (const s of SIGNALS) process.on(s, onSignal);
  return remove;
}
