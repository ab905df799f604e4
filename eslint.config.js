// Type-aware lint. The rules for src/core/** keep the core pure and deterministic
// (STYLE.md rule 1): no clock, no randomness, no timers, no process, no node:* and no async.
// The import-direction rules encode the layering: imports only point down.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const layer = (from, allowed, allowedModules = []) => {
  const all = [
    'core/base',
    'core/raft',
    'core/detect',
    'core/state',
    'core/queue',
    'replica',
    'server',
    'membership',
    'client',
    'fence',
    'sim',
    'check',
    'cli',
  ];
  const forbidden = all.filter((l) => l !== from && !allowed.includes(l));
  const escape = (x) => x.replace(/[/.]/g, (c) => `\\${c}`);
  return {
    files: [`src/${from}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: forbidden.map((l) => {
            // Named modules of a forbidden layer that this one may still use.
            const except = allowedModules
              .filter((m) => m.startsWith(`${l}/`))
              .map((m) => escape(m.slice(l.length + 1)));
            const rest = except.length > 0 ? `\\/(?!${except.join('|')})` : '\\/';
            return {
              regex: `(^|\\/)${escape(l)}(${rest}|$)`,
              message: `src/${from} may not import src/${l} (imports only point down).`,
            };
          }),
        },
      ],
    },
  };
};

const coreBans = {
  files: ['src/core/**/*.ts'],
  rules: {
    'no-restricted-globals': [
      'error',
      { name: 'Date', message: 'The core is deterministic: time is passed in.' },
      { name: 'performance', message: 'The core is deterministic: time is passed in.' },
      { name: 'process', message: 'The core does no I/O.' },
      { name: 'setTimeout', message: 'The core has no timers: tick() is called from outside.' },
      { name: 'setInterval', message: 'The core has no timers.' },
      { name: 'setImmediate', message: 'The core has no timers.' },
      { name: 'queueMicrotask', message: 'The core has no timers.' },
      { name: 'clearTimeout', message: 'The core has no timers.' },
      { name: 'clearInterval', message: 'The core has no timers.' },
    ],
    'no-restricted-properties': [
      'error',
      { object: 'Math', property: 'random', message: 'Use the injected Prng.' },
      { object: 'crypto', property: 'randomUUID', message: 'Use the injected Prng.' },
    ],
    'no-restricted-syntax': [
      'error',
      { selector: ':function[async=true]', message: 'The core is synchronous.' },
      {
        selector: 'ImportDeclaration[source.value=/^node:/]',
        message: 'The core imports no node:* module.',
      },
    ],
  },
};

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'dist-*/**',
      'node_modules/**',
      'eslint.config.js',
      'scripts/**',
      'bin/**',
      '.tenure/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // node:test's test()/describe() return promises that the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true, allowNullish: true },
      ],
    },
  },
  layer('core/base', []),
  layer('core/raft', ['core/base']),
  layer('core/detect', ['core/base']),
  layer('core/state', ['core/base']),
  // The lock and election queue (etcd's concurrency recipes) as pure data and decisions, shared by
  // the server's Lock and Election services and the SDK's Lock and Election.
  layer('core/queue', ['core/base']),
  layer('replica', ['core/base', 'core/raft', 'core/detect', 'core/state', 'core/queue']),
  layer('server', ['replica', 'core/base', 'core/raft', 'core/detect', 'core/state', 'core/queue']),
  layer('membership', ['core/base', 'core/raft', 'core/detect', 'core/state', 'core/queue']),
  layer('client', ['core/base', 'core/queue']),
  layer('fence', ['core/base']),
  layer('check', ['core/base']),
  // The simulator drives the production member through the real client API handlers, and its
  // lease holders keep their lease by the SDK's own (pure) session rule.
  layer(
    'sim',
    ['replica', 'core/base', 'core/raft', 'core/detect', 'core/state', 'core/queue', 'check'],
    ['server/api/', 'client/session-state'],
  ),
  coreBans,
  {
    // Table tests beside the core use the test runner (node:test, node:assert); the modules they
    // test stay pure.
    files: ['src/core/**/*.test.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
