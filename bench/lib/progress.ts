/** The benchmark's progress line on stderr: the phase, what it is doing and the total RSS of the measured processes. */
import { type RssSampler, total } from './proc';
import { fmtBytes } from './stats';

/** Prints one line, rewritten in place on a TTY (every 0.5 s) or repeated every 15 s; returns the function that stops it. */
export function progressLine(b: { sampler: RssSampler; progress: string }): () => void {
  const tty = process.stderr.isTTY;
  const show = setInterval(
    () => {
      const s = b.sampler.samples.at(-1);
      const line = `[${b.sampler.phase}] ${b.progress} · RSS ${s ? fmtBytes(total(s)) : '?'}`;
      if (tty) process.stderr.write(`\r${line.padEnd(110)}`);
      else console.error(line);
    },
    tty ? 500 : 15_000,
  );
  let stopped = false;
  return () => {
    clearInterval(show);
    if (tty && !stopped) process.stderr.write('\n');
    stopped = true;
  };
}
