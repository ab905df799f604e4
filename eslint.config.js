// Type-aware lint. The rules for src/core/** keep the core pure and deterministic
// (STYLE.md rule 1): no clock, no randomness, no timers, no process, no node:* and no async.
// The import-direction rules encode the layering: imports only point down.
import { dirname, relative, resolve, sep } from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const srcRoot = resolve(import.meta.dirname, 'src');

// Every layer, a folder of src/. A file belongs to the longest layer its path starts with, so
// core/raft is a layer of its own, not part of a layer "core".
const LAYERS = [
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
  'render',
  'launcher',
  'detect-eval',
  'bench',
  'demo',
  'chaos',
  'cli',
];

/** The layer of a path relative to src/ (with / separators), or undefined outside every layer. */
function layerOf(path) {
  let best;
  for (const l of LAYERS) {
    if ((path === l || path.startsWith(`${l}/`)) && (best === undefined || l.length > best.length))
      best = l;
  }
  return best;
}

// The layer rule resolves each relative import against the importing file, so that a sibling
// written as `../raft/log.js` from core/state counts as core/raft just as `../core/raft/log.js`
// from replica does. Package and node:* imports are not layers and pass.
const layersPlugin = {
  rules: {
    'imports-point-down': {
      meta: {
        type: 'problem',
        schema: [
          {
            type: 'object',
            properties: {
              allowed: { type: 'array', items: { type: 'string' } },
              allowedModules: { type: 'array', items: { type: 'string' } },
            },
            additionalProperties: false,
          },
        ],
      },
      create(context) {
        const { allowed = [], allowedModules = [] } = context.options[0] ?? {};
        const relToSrc = (p) => relative(srcRoot, p).split(sep).join('/');
        const from = layerOf(relToSrc(context.filename));
        const check = (source) => {
          if (from === undefined || typeof source?.value !== 'string') return;
          if (!source.value.startsWith('.')) return;
          const target = relToSrc(resolve(dirname(context.filename), source.value));
          const to = layerOf(target);
          if (to === undefined || to === from || allowed.includes(to)) return;
          if (allowedModules.some((m) => target.startsWith(m))) return;
          context.report({
            node: source,
            message: `src/${from} may not import src/${to} (imports only point down).`,
          });
        };
        return {
          ImportDeclaration: (n) => check(n.source),
          ExportAllDeclaration: (n) => check(n.source),
          ExportNamedDeclaration: (n) => check(n.source),
          ImportExpression: (n) => check(n.source),
        };
      },
    },
  },
};

/** The files of layer `from` may import only the layers `allowed` and the modules named. */
const layer = (from, allowed, allowedModules = []) => ({
  files: [`src/${from}/**/*.ts`],
  plugins: { layers: layersPlugin },
  rules: { 'layers/imports-point-down': ['error', { allowed, allowedModules }] },
});

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
  // Pure string building for the reports of the bench and the detector evaluation, and the
  // progress line of the long commands (progress.ts).
  layer('render', []),
  // The launcher starts members as processes, by their command line: it needs none of the code
  // it starts.
  layer('launcher', []),
  // The detector evaluation runs the pure detectors in a simulator of its own.
  layer('detect-eval', ['core/base', 'core/detect', 'render']),
  // The bench drives tenure (and etcd) through the SDK and starts members as the launcher does.
  layer('bench', ['client', 'render', 'launcher']),
  layer('demo', ['client', 'fence', 'launcher']),
  // The chaos harness starts real members (launcher), drives them through the SDK, writes
  // through fences and judges what it recorded with the checkers.
  layer('chaos', ['client', 'fence', 'check', 'launcher', 'core/base']),
  // The CLI is the top: it may import every layer, and none may import it.
  layer('cli', LAYERS),
  coreBans,
  {
    // The dashboard's page (ui/, served by src/server/ui/routes.ts): plain browser JavaScript
    // with no types to check it against.
    files: ['ui/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      sourceType: 'script',
      globals: Object.fromEntries(
        [
          'window',
          'document',
          'fetch',
          'EventSource',
          'requestAnimationFrame',
          'setTimeout',
          'setInterval',
          'clearTimeout',
        ].map((name) => [name, 'readonly']),
      ),
    },
  },
  {
    // Table tests beside the core use the test runner (node:test, node:assert); the modules they
    // test stay pure.
    files: ['src/core/**/*.test.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
