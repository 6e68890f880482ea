/**
 * Text on its way to a terminal (issue 38, finding 8). What the CLI prints quotes threads — user texts, model texts,
 * tool arguments and results, thread ids, prompts, errors — and a terminal acts on control characters in it: an escape
 * sequence can set the window title (OSC 0/2), clear the screen (CSI 2J), write the clipboard (OSC 52), move the
 * cursor over earlier lines. Every line the CLI writes goes through {@link toTerminal} (`buildProgram` wraps its
 * output; errors and progress on standard error use {@link toStderr}), which shows each such character as a `\uXXXX`
 * escape instead, so a text can only be read, never obeyed.
 *
 * The CLI's own colours cannot be told from a text's escape sequences once both are in one string, so `colour.*`
 * (format.ts) does not write escape sequences: it marks its span with {@link styled}, a tag of this process's own that
 * no text can forge (a NUL, which a text's would be escaped, and 16 random hex digits it never saw), and
 * {@link toTerminal} turns only those tags into SGR codes.
 */
import { randomBytes } from 'node:crypto';

/**
 * What a terminal acts on rather than shows, or that misleads a reader: the C0 controls but tab and line feed (ESC
 * among them, so no escape sequence starts; carriage return and backspace, which overwrite what is shown), DEL, the C1
 * controls U+0080–U+009F (CSI and OSC among them, which some terminals take as ESC [ and ESC ]), the line and paragraph
 * separators U+2028/U+2029, and the bidirectional embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069,
 * which reorder the characters after them on the line ("Trojan Source"). Left alone: right-to-left text itself, and
 * the implicit marks U+200E, U+200F and U+061C, which only steer the terminal's own ordering of neutral characters.
 */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` with every character of {@link UNSAFE} written as its `\uXXXX` escape (ESC as `\u001b`). The notation JSON
 * uses: a JSON line passes through unchanged in meaning (these characters can only stand inside its strings, where the
 * escape reads back as the same character), so `--json` output stays exact data.
 * @example visibleControls('\x1b]0;pwned\x07') === '\\u001b]0;pwned\\u0007'
 */
export function visibleControls(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** This process's own mark for the CLI's colours: a NUL (escaped in any text) and 64 random bits. */
const TAG = `\u0000${randomBytes(8).toString('hex')}:`;
const TAGGED = new RegExp(`${TAG}(\\d{1,2})m`);

/** `text` in the SGR style `code` (1 bold, 31 red, ...), as tags only {@link toTerminal} turns into escape codes. */
export const styled = (code: number, text: string): string => `${TAG}${code}m${text}${TAG}0m`;

/**
 * What the CLI writes for `text`: its unsafe characters made visible ({@link visibleControls}), its {@link styled}
 * spans in their colours.
 */
export function toTerminal(text: string): string {
  // With a capturing group, split puts each tag's code between the pieces of text around it.
  return text
    .split(TAGGED)
    .map((part, i) => (i % 2 === 1 ? `\x1b[${part}m` : visibleControls(part)))
    .join('');
}

/** Writes `text` (errors, progress) on standard error, as {@link toTerminal} makes it. */
export const toStderr = (text: string): void => void process.stderr.write(toTerminal(text));
