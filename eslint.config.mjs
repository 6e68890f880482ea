// @ts-check
import js from '@eslint/js';
import { builtinModules } from 'node:module';
import { fileURLToPath, URL } from 'node:url';
import tseslint from 'typescript-eslint';

/** The repository, where the TypeScript project service finds tsconfig.json. */
const ROOT = fileURLToPath(new URL('.', import.meta.url));

/**
 * Node's built-in modules, as `node:<name>` or bare (`fs`, `fs/promises`, `crypto`, ...): src/core and src/workflows
 * are bundled into Temporal's workflow sandbox, which has none of them (and where I/O would break determinism).
 */
const NO_NODE = {
  regex: `^(node:|(${builtinModules.filter((m) => !m.includes('/')).join('|')})(/|$))`,
  message:
    "src/core and src/workflows run in Temporal's workflow sandbox, which has no Node built-in modules (and does no I/O).",
};

/** src/ never imports infra/, from any depth (`../infra`, `../../infra`, ...). */
const NO_INFRA = {
  regex: '^(\\.\\./)+infra(/|$)',
  message: 'src/ never imports infra/ (servers for the tests and the benchmark, outside the package).',
};

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      '.temporal/**',
      'test/fixtures/histories/**',
      'test/fixtures/bundles/**',
      '.pack-test-*/**',
      '.cache/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Type-aware rules (typed linting through the TypeScript project service, tsconfig.json): a promise nobody awaits,
    // returns or hands to `void` (with a comment saying why not waiting is safe) fails unheard of, and a promise where
    // a plain value or callback is expected (an `if`, a listener) does not do what it reads as. The package's code
    // only: typed linting builds the whole TypeScript program, and `eslint .` took 6.2 s without it, 14.6 s with it on
    // src/ and 18.2 s on every TypeScript file (2-core machine, issue 32 §3); tests and bench passed it when measured.
    files: ['src/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: ROOT } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    // The CLI launcher is plain CommonJS for Node.
    files: ['bin/**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', process: 'readonly', console: 'readonly', __dirname: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The package never imports the tests' and the benchmark's servers (infra/ is outside the package). The fenced
    // folders below repeat this pattern: a later block's no-restricted-imports replaces an earlier one's.
    files: ['src/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_INFRA] }] },
  },
  {
    // infra/ (a throwaway PostgreSQL, the local multi-shard cluster) sits between src/ and its users: it may import
    // src/; the tests, the benchmark and the scripts import it, never the other way.
    files: ['infra/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+(test|bench|scripts|examples)(/|$)',
              message: 'infra/ may import only src/ (tests, bench and scripts import infra/, not the other way).',
            },
          ],
        },
      ],
    },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: forbid the usual sources of nondeterminism.
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-globals': ['error', 'setTimeout', 'setInterval', 'process', 'require'],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'Use the workflow clock via Temporal APIs.' },
        { object: 'Math', property: 'random', message: 'Use uuid4() from @temporalio/workflow.' },
      ],
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            NO_NODE,
            { regex: '^\\.\\./(?!core/)', message: 'Workflow code imports only src/core (layers: README "Layout").' },
            NO_INFRA,
          ],
        },
      ],
    },
  },
  // Imports flow one way: core <- workflows/store/model <- tools <- inbox/events/activities <- client <- rap/worker/cli.
  // http (the listeners' common guard) imports nothing of the project.
  // Each layer names the project folders it may import from; anything else is a back-edge or a sideways import.
  ...layer('core', [], [NO_NODE]),
  ...layer('store', ['core']),
  ...layer('model', ['core']),
  ...layer('tools', ['core', 'model']),
  ...layer('http', []),
  ...layer('events', ['core', 'http']),
  ...layer('inbox', ['core', 'store', 'workflows']),
  ...layer('activities', ['core', 'model', 'store', 'tools']),
  ...layer('client', ['core', 'events', 'inbox', 'store', 'tools', 'workflows']),
  // Replay-evals (issue 29): offline, over the store; they rebuild requests with the slice's own functions.
  ...layer('evals', ['activities', 'core', 'model', 'store', 'tools']),
  // Interleaving experiments (issue 29 §2): forks and inputs through the client; decisions compared as evals do.
  ...layer('experiments', ['client', 'core', 'evals', 'tools']),
  ...layer('rap', ['core', 'http', 'inbox', 'tools']),
  ...layer('tracing', []),
  ...layer('worker', [
    'activities',
    'core',
    'events',
    'http',
    'inbox',
    'mcp',
    'model',
    'rap',
    'store',
    'tools',
    'tracing',
    'workflows',
    'codec',
  ]),
);

/**
 * ESLint blocks that let the files of one src/ folder (and its subfolders) import only from the named sibling folders;
 * `more`: further restricted patterns for that folder.
 */
function layer(folder, allowed, more = []) {
  const allow = allowed.length ? `(?!(${allowed.join('|')})(/|$))` : '';
  const message = `${folder} may import only from: ${allowed.join(', ') || 'nothing else in src'} (layers: README "Layout").`;
  const block = (files, up) => ({
    files: [files],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: `^${up}${allow}`, message }, NO_INFRA, ...more] }],
    },
  });
  return [block(`src/${folder}/*.ts`, '\\.\\./'), block(`src/${folder}/*/**/*.ts`, '\\.\\./\\.\\./')];
}
