import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'var/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', fetch: 'readonly', AbortSignal: 'readonly', AbortController: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': ['error', { allow: ['error'] }],
    },
  },
  {
    // The console's browser script.
    files: ['src/console/static/**/*.js'],
    languageOptions: { globals: { document: 'readonly', window: 'readonly', EventSource: 'readonly' } },
  },
  {
    files: ['src/cli/**', 'src/contract/extract.ts', 'src/contract/generate.ts', 'src/contract/rules-doc.ts', 'bench/**'],
    rules: { 'no-console': 'off' },
  },
);
