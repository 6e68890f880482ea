/**
 * Store URLs for display. A PostgreSQL URL may carry a password in its userinfo (`postgres://u:pw@host/db`) or in
 * its query (`?password=...`, `?sslpassword=...`, `?sslkey=...`: node-postgres and libpq read them all), and it is
 * printed in start-up lines, usage errors and errors from `pg`. Everything that prints a store spec or an error that
 * may quote one goes through here.
 */

/** Does the spec name a PostgreSQL database (`postgres://` or `postgresql://`)? */
export const isPostgresUrl = (spec: string): boolean => /^postgres(ql)?:\/\//i.test(spec);

/** What replaces a secret. */
export const REDACTED = '***';

/**
 * Query parameters whose value is secret or names a secret: libpq's `password`, `sslpassword`, `sslkey` (the client
 * key's file), and by extension anything named like a password, secret, token or key.
 */
const SECRET_PARAM = /pass|secret|token|key|pwd/i;

/** Every postgres URL in a text; a URL ends at whitespace or a quote, as it does where errors and logs quote one. */
const URL_IN_TEXT = /postgres(?:ql)?:\/\/[^\s'"`<>]+/gi;

/** The secret parts of a store spec (decoded and as written), longest first; none for a SQLite path. */
export function storeSecrets(spec: string): string[] {
  if (!isPostgresUrl(spec)) return [];
  const found = new Set<string>();
  const add = (raw: string) => {
    if (!raw) return;
    found.add(raw);
    try {
      found.add(decodeURIComponent(raw));
    } catch {
      // not %-encoded: the raw form is the one to hide
    }
  };
  try {
    const url = new URL(spec);
    add(url.password);
    for (const [name, value] of url.searchParams) if (SECRET_PARAM.test(name)) add(value);
    // URLSearchParams decodes '+' as a space; the raw text is what an echo of the URL would show.
    for (const m of url.search.matchAll(/[?&]([^=&]+)=([^&]*)/g)) if (SECRET_PARAM.test(decodeSafe(m[1]!))) add(m[2]!);
  } catch {
    // Not parseable: take what looks like userinfo's password and secret query values by pattern.
    add(/^[a-z]+:\/\/[^:/@]*:([^@/]*)@/i.exec(spec)?.[1] ?? '');
    for (const m of spec.matchAll(/[?&]([^=&]+)=([^&\s]*)/g)) if (SECRET_PARAM.test(m[1]!)) add(m[2]!);
  }
  return [...found].filter((s) => s.length > 0).sort((a, b) => b.length - a.length);
}

function decodeSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * A store spec for display: a PostgreSQL URL with its userinfo password and secret query parameters replaced by
 * `***` (user, host, port, database and the other parameters kept, so the line still says which database). A SQLite
 * path is returned as it is.
 */
export function redactStoreUrl(spec: string): string {
  if (!isPostgresUrl(spec)) return spec;
  let url: URL;
  try {
    url = new URL(spec);
  } catch {
    // Not a URL we can parse: hide whatever userinfo and query it holds.
    return spec.replace(/\/\/[^@/]*@/, `//${REDACTED}@`).replace(/\?.*$/, `?${REDACTED}`);
  }
  if (url.password) url.password = REDACTED;
  // Rebuilt by hand: URLSearchParams would re-encode '***' and every other value.
  const query = url.search
    .slice(1)
    .split('&')
    .filter(Boolean)
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      return SECRET_PARAM.test(decodeSafe(name)) ? `${name}=${REDACTED}` : pair;
    })
    .join('&');
  url.search = '';
  const base = url.toString();
  return query ? `${base}?${query}` : base;
}

/**
 * A text (an error message, a log line) with every PostgreSQL URL in it redacted, and every secret of the given specs
 * replaced wherever it appears on its own (a driver may quote a password or key path without its URL).
 */
export function redactSecrets(text: string, ...specs: (string | undefined)[]): string {
  let out = text.replace(URL_IN_TEXT, (m) => redactStoreUrl(m));
  const secrets = specs.flatMap((s) => (s ? storeSecrets(s) : [])).sort((a, b) => b.length - a.length);
  for (const secret of secrets) out = out.split(secret).join(REDACTED);
  return out;
}
