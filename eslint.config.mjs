// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.temporal/**', 'test/fixtures/histories/**', 'test/fixtures/bundles/**', '.pack-test-*/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // The CLI launcher is plain CommonJS for Node.
    files: ['bin/**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', process: 'readonly', console: 'readonly', __dirname: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
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
      'no-restricted-imports': ['error', { patterns: [{ group: ['node:*', 'fs', 'path'], message: 'Workflow code does no I/O.' }, { regex: '^\\.\\./(?!core/)', message: 'Workflow code imports only src/core (layers: README "Layout").' }] }],
    },
  },
  // Imports flow one way: core <- workflows/store/model <- tools <- inbox/events/activities <- client <- rap/worker/cli.
  // Each layer names the project folders it may import from; anything else is a back-edge or a sideways import.
  ...layer('src/core/**/*.ts', []),
  ...layer('src/store/**/*.ts', ['core']),
  ...layer('src/model/**/*.ts', ['core']),
  ...layer('src/tools/**/*.ts', ['core', 'model']),
  ...layer('src/events/**/*.ts', ['core']),
  ...layer('src/inbox/**/*.ts', ['core', 'store', 'workflows']),
  ...layer('src/activities/**/*.ts', ['core', 'model', 'store', 'tools']),
  ...layer('src/client/**/*.ts', ['core', 'events', 'inbox', 'store', 'tools', 'workflows']),
  ...layer('src/rap/**/*.ts', ['core', 'inbox', 'tools']),
  ...layer('src/worker/**/*.ts', ['activities', 'core', 'events', 'inbox', 'mcp', 'model', 'rap', 'store', 'tools', 'workflows', 'codec']),
);

/** An ESLint block that lets the files of one layer import only from the named sibling folders of src/. */
function layer(files, allowed) {
  const allow = allowed.length ? `(?!(${allowed.join('|')})(/|$))` : '';
  return [
    {
      files: [files],
      rules: {
        'no-restricted-imports': [
          'error',
          { patterns: [{ regex: `^\\.\\./${allow}`, message: `${files.split('/')[1]} may import only from: ${allowed.join(', ') || 'nothing else in src'} (layers: README "Layout").` }] },
        ],
      },
    },
  ];
}
