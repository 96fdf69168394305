// @ts-check
// ESLint (flat config): the recommended rules of ESLint and typescript-eslint over every TypeScript
// and JavaScript source of the repository. Formatting is Prettier's (.prettierrc.json), not ESLint's.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import reactHooks from 'eslint-plugin-react-hooks';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  globalIgnores(['**/node_modules/', '**/dist/', '.cache/', 'var/', 'coverage/']),
  {
    files: ['**/*.{ts,tsx,mts,cts,js,mjs,cjs}'],
    extends: [js.configs.recommended, tseslint.configs.recommended],
    languageOptions: {
      globals: globals.node,
    },
    linterOptions: {
      reportUnusedDisableDirectives: 'error',
    },
    rules: {
      // As tsc's noUnusedParameters: a leading `_` marks a parameter kept for its position (Express
      // tells error middleware by its four parameters). A rest sibling is how a property is left out.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', ignoreRestSiblings: true }],
      // The ffmpeg/ffprobe installers throw when loaded on a platform without a prebuilt binary, so
      // libs/renderer/src/binaries.ts requires them only when their path is asked for.
      '@typescript-eslint/no-require-imports': ['error', { allow: ['^@ffmpeg-installer/ffmpeg$', '^@ffprobe-installer/ffprobe$'] }],
    },
  },
  {
    // The dashboard's browser app (Preact, bundled by Vite): browser globals and the rules of hooks.
    files: ['libs/dashboard/web/src/**/*.{ts,tsx}'],
    plugins: { 'react-hooks': reactHooks },
    languageOptions: {
      globals: globals.browser,
    },
    rules: {
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'error',
    },
  },
  {
    // Tests and benchmarks read parsed JSON and poke at internals; typing every response body would add noise, not safety.
    files: ['test/**', 'bench/**', '**/*.test.ts', '**/test-support/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
);
