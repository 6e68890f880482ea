/**
 * Where `answerChoice` may send a choice's answer. A pending choice's `response_url` comes from whoever put the prompt
 * in the thread (a tool server's callback, or any input with a synthetic prompt), so the client checks it before it
 * POSTs: `http(s)` only, no credentials in the URL, and an allowed origin.
 */

/** Options of `ThreadHandle.answerChoice`. */
export interface AnswerChoiceOptions {
  /**
   * Origins (`https://tools.example.com:8443`) a choice's `response_url` may point at: your tool servers'. Any other
   * URL is refused with an `InvalidInputError`, and nothing is sent.
   * @default the origins listed in the `INFINITY_CHOICE_ORIGINS` environment variable (comma-separated) when it is
   * set, else loopback origins only (`localhost`, `127.x.x.x`, `[::1]`, any port)
   */
  allowedOrigins?: readonly string[];
}

const isLoopbackName = (hostname: string) =>
  hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);

/** `INFINITY_CHOICE_ORIGINS`, split; undefined when unset or empty. */
export function choiceOriginsFromEnv(value: string | undefined): string[] | undefined {
  const list = (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  return list.length > 0 ? list : undefined;
}

/** Why the answer must not go to `url`, or undefined when it may. */
export function choiceUrlRefusal(url: string, allowedOrigins: readonly string[] | undefined): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `the choice's response URL ${JSON.stringify(url)} is not a URL`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    return `the choice's response URL must be http or https, not ${u.protocol}`;
  if (u.username !== '' || u.password !== '') return "the choice's response URL must not carry credentials";
  if (allowedOrigins === undefined) {
    return isLoopbackName(u.hostname)
      ? undefined
      : `the choice's response URL is on ${u.origin}, not loopback: list your tool servers' origins in ` +
          'allowedOrigins (or INFINITY_CHOICE_ORIGINS) to answer there';
  }
  const allowed = new Set(allowedOrigins.map((o) => new URL(o).origin));
  return allowed.has(u.origin)
    ? undefined
    : `the choice's response URL is on ${u.origin}, which is not an allowed origin (${[...allowed].join(', ')})`;
}
