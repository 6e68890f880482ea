/**
 * `infinity-temporal`: operate agent threads from a shell. `dev` runs everything locally; the other commands talk to
 * a Temporal server (found through flags, environment, or a running `dev`).
 */
import { Command, CommanderError } from 'commander';
import {
  InvalidInputError,
  PayloadTooLargeError,
  ThreadBusyError,
  ThreadClosedError,
  ThreadNotFoundError,
} from '../inbox/errors';
import { ModelConfigError } from '../model/config-error';
import { EvalOptionError, MalformedExportError, UnknownSliceError, UnknownThreadError } from '../evals/errors';
import { InvalidScoreError } from '../store/eval-records';
import { ExperimentFileError } from '../experiments/errors';
import { redactSecrets } from '../store/redact';
import { registerAnswer } from './commands/answer';
import { registerBackup } from './commands/backup';
import { registerBudget } from './commands/budget';
import { registerAgent } from './commands/agent';
import { registerCompact } from './commands/compact';
import { registerDeliver } from './commands/deliver';
import { registerDev } from './commands/dev';
import { registerEval } from './commands/eval';
import { registerExperiment } from './commands/experiment';
import { registerExport } from './commands/export';
import { registerFork } from './commands/fork';
import { registerRewind } from './commands/rewind';
import { registerMigrate } from './commands/migrate';
import { registerGateway } from './commands/gateway';
import { registerHistory } from './commands/history';
import { registerReplay } from './commands/replay';
import { registerScore } from './commands/score';
import { registerScores } from './commands/scores';
import { registerSend } from './commands/send';
import { registerStart } from './commands/start';
import { registerStatus } from './commands/status';
import { registerTail } from './commands/tail';
import { registerThreads } from './commands/threads';
import { registerUsage } from './commands/usage';
import { registerWorker } from './commands/worker';
import { colour, type Out } from './format';
import { CliError } from './errors';
import { toStderr, toTerminal } from './terminal-text';

/**
 * The program, its commands writing lines to `out` and `tail`'s live text to `write` (standard output, or a test's
 * collectors). Both get what the commands print through {@link toTerminal}: texts from threads show their control
 * characters and escape sequences instead of running them on the reader's terminal (issue 38, finding 8).
 */
export function buildProgram(
  out: Out = (l) => process.stdout.write(`${l}\n`),
  write: (s: string) => void = (s) => process.stdout.write(s),
): Command {
  const shown: Out = (line) => out(toTerminal(line));
  const written = (s: string) => write(toTerminal(s));
  const program = new Command('infinity-temporal')
    .description('LLM agents as stackless coroutines on Temporal')
    .showHelpAfterError()
    .option('--address <host:port>', 'Temporal frontend (env TEMPORAL_ADDRESS; default: the running `dev`)')
    .option('--namespace <name>', 'Temporal namespace (env TEMPORAL_NAMESPACE; default "default")')
    .option('--task-queue <name>', 'task queue of the agent workers (env INFINITY_TASK_QUEUE; default infinity-agents)')
    .option('--store <file|url>', 'the conversation store: a SQLite file or a postgres:// URL (env INFINITY_STORE)')
    .option('--events-url <urls>', "the workers' live events endpoints, comma-separated (env INFINITY_EVENTS_URL)")
    .option('--events-token <token>', 'bearer token of that endpoint (env INFINITY_EVENTS_TOKEN)')
    .option('--data-dir <dir>', 'where `dev` keeps its databases and state (default .temporal/local)')
    .option('--tls', 'connect to Temporal with TLS')
    .option('--tls-cert <file>', 'client certificate (mTLS)')
    .option('--tls-key <file>', 'client key (mTLS)')
    .option('--tls-ca <file>', 'server CA certificate')
    .option('--tls-server-name <name>', 'server name override');
  // The commands, one file each in commands/, in the order `--help` lists them.
  // Running the system:
  registerGateway(program, shown);
  registerDev(program, shown);
  registerWorker(program, shown);
  // Threads:
  registerStart(program, shown);
  registerSend(program, shown);
  registerDeliver(program, shown);
  registerHistory(program, shown);
  registerStatus(program, shown);
  registerThreads(program, shown);
  registerAnswer(program, shown);
  registerCompact(program, shown);
  registerFork(program, shown);
  registerRewind(program, shown);
  // The conversation store, budgets, the replay gate, moving threads onto a new release:
  registerBackup(program, shown);
  registerBudget(program, shown);
  registerAgent(program, shown);
  registerUsage(program, shown);
  registerReplay(program, shown);
  registerMigrate(program, shown);
  // Replay-evals and outcome scores (the store alone):
  registerEval(program, shown);
  registerExport(program, shown);
  registerScore(program, shown);
  registerScores(program, shown);
  registerExperiment(program, shown);
  // Following a thread as it runs:
  registerTail(program, written, shown);
  return program;
}

const KNOWN_ERRORS = [
  CliError,
  ThreadNotFoundError,
  ThreadClosedError,
  ThreadBusyError,
  InvalidInputError,
  PayloadTooLargeError,
  ModelConfigError,
  UnknownThreadError,
  UnknownSliceError,
  MalformedExportError,
  EvalOptionError,
  InvalidScoreError,
  ExperimentFileError,
];

/** Help asked for (and `--version`) ends 0; anything else commander stops at is a usage error: 2. */
const commanderExitCode = (e: CommanderError): number => (e.exitCode === 0 ? 0 : 2);

export async function main(argv: string[] = process.argv): Promise<number> {
  const program = buildProgram();
  // Every command, not only the program: a subcommand's own errors (a missing argument) would exit the process.
  const override = (c: Command): void => {
    c.exitOverride();
    c.commands.forEach(override);
  };
  override(program);
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (e) {
    // Commander printed the message or the help already. Its own exit code is 1 for a usage error (an unknown
    // command or option, a missing argument); ours is 2 for every usage error, as the README's table says.
    if (e instanceof CommanderError) return commanderExitCode(e);
    const known = KNOWN_ERRORS.some((k) => e instanceof k);
    // Errors from `pg` and from our own messages may quote the store URL or its secrets (a password, a key's path).
    const stores = [program.opts<{ store?: string }>().store, process.env.INFINITY_STORE];
    const shown = (text: string) => redactSecrets(text, ...stores);
    // They may quote a thread too (a model's error, a text): toStderr shows its control characters.
    toStderr(`${colour.red('error')}: ${shown(e instanceof Error ? e.message : String(e))}\n`);
    if (!known && e instanceof Error && e.stack && process.env.DEBUG) toStderr(`${shown(e.stack)}\n`);
    return known ? 2 : 1;
  }
}
