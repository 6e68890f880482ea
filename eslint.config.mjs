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
      'no-restricted-imports': ['error', { patterns: ['node:*', 'fs', 'path', '../activities/*', '../store/*', '../model/*', '../tools/*', '../worker/*', '../client/*'] }],
    },
  },
);
