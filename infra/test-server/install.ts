/**
 * Temporal's time-skipping test server for the tests that wait on durable timers (`test/soak/time-skipping.soak.test.ts`).
 * The SDK's own `@temporalio/testing` downloads a native build of it from temporal.download at run time; this installs
 * the same server as the Java artifact `io.temporal:temporal-test-server` from Maven Central instead (a registry, with
 * its dependencies), into `.temporal/test-server/lib/`, and runs it with the machine's Java 17. Test infrastructure: not
 * part of the package.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporalHome } from '../../src/devserver/cli';

const POM = join(__dirname, 'pom.xml');

/** The artifact version the pom names: the jar the installed directory must hold. */
export function testServerVersion(): string {
  const m = /<artifactId>temporal-test-server<\/artifactId>\s*<version>([^<]+)<\/version>/.exec(
    readFileSync(POM, 'utf8'),
  );
  if (!m) throw new Error(`${POM} names no temporal-test-server version`);
  return m[1]!;
}

/** Where the jars go (default `./.temporal/test-server/lib`). */
export function testServerLib(dir = join(temporalHome(), 'test-server')): string {
  return join(dir, 'lib');
}

function has(cmd: string, args: string[]): boolean {
  return spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
}

/**
 * Installs the test server's jars unless they are there at the pom's version; returns the directory that holds them.
 * Needs Java (17 or later) and Maven on PATH; without them it throws, saying which is missing and how to get it.
 */
export function installTestServer(options: { dir?: string; log?: (line: string) => void } = {}): string {
  const lib = testServerLib(options.dir);
  const jar = `temporal-test-server-${testServerVersion()}.jar`;
  if (existsSync(join(lib, jar))) return lib;
  const missing = [has('java', ['-version']) ? '' : 'java', has('mvn', ['-v']) ? '' : 'mvn'].filter(Boolean);
  if (missing.length > 0)
    throw new Error(
      `the time-skipping test server needs ${missing.join(' and ')} on PATH ` +
        '(Debian: apt-get install default-jre-headless maven)',
    );
  mkdirSync(lib, { recursive: true });
  options.log?.(`fetching io.temporal:temporal-test-server and its dependencies into ${lib}`);
  const r = spawnSync(
    'mvn',
    ['-q', '-B', '-f', POM, 'dependency:copy-dependencies', `-DoutputDirectory=${lib}`, '-DincludeScope=runtime'],
    { encoding: 'utf8', timeout: 10 * 60_000 },
  );
  if (r.status !== 0 || !readdirSync(lib).includes(jar))
    throw new Error(
      `mvn could not fetch the test server:\n${`${r.stdout ?? ''}${r.stderr ?? ''}`.trim().slice(-2000)}`,
    );
  return lib;
}
