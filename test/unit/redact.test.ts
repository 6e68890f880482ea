/** Store URLs for display (`src/store/redact.ts`): no password, in the userinfo or the query, survives printing. */
import { describe, expect, it } from 'vitest';
import { describeStore } from '../../src/store/open';
import { redactSecrets, redactStoreUrl, storeSecrets } from '../../src/store/redact';

describe('redactStoreUrl', () => {
  it("hides the userinfo password and the query's secret parameters, and keeps the rest", () => {
    const url =
      'postgres://app:hunter2@db.internal:5432/agents?sslmode=require&password=swordfish&sslpassword=open%20sesame&sslkey=/etc/keys/app.key&application_name=w1';
    const shown = redactStoreUrl(url);
    expect(shown).toBe(
      'postgres://app:***@db.internal:5432/agents?sslmode=require&password=***&sslpassword=***&sslkey=***&application_name=w1',
    );
    for (const secret of ['hunter2', 'swordfish', 'sesame', 'app.key']) expect(shown).not.toContain(secret);
    // The name the CLI has always used for it is the same function.
    expect(describeStore(url)).toBe(shown);
  });

  it('leaves a URL without secrets and a SQLite path as they are', () => {
    expect(redactStoreUrl('postgresql://app@db/agents?sslmode=verify-full')).toBe(
      'postgresql://app@db/agents?sslmode=verify-full',
    );
    expect(redactStoreUrl('/var/lib/agents/conversations.sqlite')).toBe('/var/lib/agents/conversations.sqlite');
  });

  it('hides a password with reserved characters, and what an unparseable URL holds', () => {
    expect(redactStoreUrl('postgres://app:p%40ss%2Fw0rd@db/agents')).toBe('postgres://app:***@db/agents');
    const odd = redactStoreUrl('postgres://app:pw-in-socket-url@/agents?host=/run/pg&password=q-secret');
    expect(odd).not.toContain('pw-in-socket-url');
    expect(odd).not.toContain('q-secret');
  });
});

describe('redactSecrets', () => {
  it('redacts every postgres URL in a text and the given spec’s secrets where a driver quotes them alone', () => {
    const spec = 'postgres://app:hunter2@db/agents?sslkey=/etc/keys/app.key';
    const message =
      `cannot use ${spec}: ENOENT: no such file or directory, open '/etc/keys/app.key'; ` +
      'also postgresql://other:tr0ub4dor@db2/x?password=correct-horse';
    const shown = redactSecrets(message, spec);
    for (const secret of ['hunter2', '/etc/keys/app.key', 'tr0ub4dor', 'correct-horse'])
      expect(shown).not.toContain(secret);
    expect(shown).toContain('ENOENT: no such file or directory');
    expect(shown).toContain('postgresql://other:***@db2/x?password=***');
  });

  it('finds the secrets of a spec decoded and as written', () => {
    expect(storeSecrets('postgres://app:p%40ss@db/a?password=a+b')).toEqual(
      expect.arrayContaining(['p%40ss', 'p@ss', 'a+b']),
    );
    expect(storeSecrets('conversations.sqlite')).toEqual([]);
  });
});
