// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The architecture's boundaries (docs/architecture.md, "Enforced rules"). For one file the last
 * matching block wins, so each block below states its files' whole rule.
 */
const FASTIFY = {
  regex: '^(fastify|@fastify/.*)$',
  message: 'Fastify is used only in src/http/ (and wired in src/app.ts): domain code never sees the web framework',
};
const IMPLEMENTATIONS = {
  regex:
    '(^|/)(store/(sql-[^/]*|pg-[^/]*|sqlite-[^/]*|open-store|redis-[^/]*)|billing/redis-hold-store|limits/redis-rate-limiter)\\.js$',
  message:
    'store and Redis implementations are wired only in the composition root (src/app.ts, src/main.ts); depend on the interfaces in store/types.ts, billing/hold-store.ts, limits/rate-limit.ts',
};
const UPWARD = {
  regex: '(^|/)(pipeline|http)/',
  message: 'domain code never imports the pipeline or the HTTP layer (dependencies point inwards)',
};
const CORE = { regex: '^\\.\\./', message: 'src/core/ imports nothing else from src/' };
const restrict = (...patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });
const DOMAIN = [
  'auth',
  'billing',
  'limits',
  'mail',
  'moderation',
  'notifications',
  'providers',
  'routing',
  'secret-scanning',
  'streaming',
  'usage',
];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        URL: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        TextDecoder: 'readonly',
        TextEncoder: 'readonly',
        performance: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
      eqeqeq: ['error', 'always'],
    },
  },
  { files: ['src/**/*.ts'], rules: restrict(FASTIFY, IMPLEMENTATIONS) },
  { files: DOMAIN.map((dir) => `src/${dir}/**/*.ts`), rules: restrict(FASTIFY, IMPLEMENTATIONS, UPWARD) },
  { files: ['src/core/**/*.ts'], rules: restrict(FASTIFY, IMPLEMENTATIONS, UPWARD, CORE) },
  { files: ['src/http/**/*.ts'], rules: restrict(IMPLEMENTATIONS) },
  // Routes reach data through the pipeline's use cases: they may hand `services.store` to them, never
  // call it themselves. The operations endpoints (ops.ts) probe the store's health directly.
  {
    files: ['src/http/routes/**/*.ts'],
    ignores: ['src/http/routes/ops.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "MemberExpression[object.type='MemberExpression'][object.object.name='services'][object.property.name='store']",
          message:
            'Routes reach data through src/pipeline (pass services.store to a use case), not services.store itself',
        },
      ],
    },
  },
  // The implementations themselves, and the composition root that wires them.
  { files: ['src/store/**/*.ts', 'src/billing/redis-*.ts', 'src/limits/redis-*.ts'], rules: restrict(FASTIFY, UPWARD) },
  {
    files: ['src/app.ts', 'src/main.ts', 'src/boot-durability.ts', 'src/cli/**', 'src/bench/**', '**/*.test.ts'],
    rules: { 'no-restricted-imports': 'off' },
  },
  { files: ['test/**', '**/*.test.ts', 'src/bench/**', 'scripts/**'], rules: { 'no-console': 'off' } },
  // Tests read untyped JSON response bodies.
  { files: ['test/**', '**/*.test.ts'], rules: { '@typescript-eslint/no-explicit-any': 'off' } },
);
