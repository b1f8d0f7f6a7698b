/**
 * The architecture's boundaries are enforced by `npm run lint` (docs/architecture.md, "Enforced
 * rules"): each rule is shown to fire on a snippet placed where it is forbidden, and to stay quiet
 * where it is allowed; the cycle check is shown to find a cycle in a small graph.
 */
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { cyclesOf, importsOf } from '../scripts/check-cycles.mjs';
import { ROOT } from './helpers/process.js';

const eslint = new ESLint({ cwd: ROOT });

async function restrictedIn(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${ROOT}${filePath}` });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('lint-enforced boundaries', { timeout: 60_000 }, () => {
  it('Fastify only in src/http/', async () => {
    const code = "import Fastify from 'fastify';\nexport const app = Fastify;\n";
    expect(await restrictedIn('src/pipeline/x.ts', code)).toEqual([
      expect.stringContaining('Fastify is used only in src/http/'),
    ]);
    expect(
      await restrictedIn('src/billing/x.ts', "import cors from '@fastify/cors';\nexport const c = cors;\n"),
    ).toHaveLength(1);
    expect(await restrictedIn('src/http/x.ts', code)).toEqual([]);
  });

  it('store and Redis implementations only in the composition root', async () => {
    const code = "import { SqlStore } from '../store/sql-store.js';\nexport const s = SqlStore;\n";
    expect(await restrictedIn('src/routing/x.ts', code)).toEqual([expect.stringContaining('composition root')]);
    expect(
      await restrictedIn(
        'src/http/routes/x.ts',
        "import { RedisHoldStore } from '../../billing/redis-hold-store.js';\nexport const r = RedisHoldStore;\n",
      ),
    ).toHaveLength(1);
    expect(
      await restrictedIn(
        'src/pipeline/x.ts',
        "import type { Store } from '../store/types.js';\nexport type S = Store;\n",
      ),
    ).toEqual([]);
    expect(await restrictedIn('src/main.ts', code.replace('../store', './store'))).toEqual([]);
  });

  it('no upward imports: domain → pipeline/http, core → anything', async () => {
    expect(
      await restrictedIn(
        'src/routing/x.ts',
        "import { settle } from '../pipeline/settle.js';\nexport const s = settle;\n",
      ),
    ).toEqual([expect.stringContaining('dependencies point inwards')]);
    expect(
      await restrictedIn(
        'src/billing/x.ts',
        "import type { Services } from '../http/services.js';\nexport type S = Services;\n",
      ),
    ).toHaveLength(1);
    expect(
      await restrictedIn(
        'src/core/x.ts',
        "import type { Units } from '../billing/settler.js';\nexport type U = Units;\n",
      ),
    ).toEqual([expect.stringContaining('src/core/ imports nothing else')]);
    expect(
      await restrictedIn('src/core/x.ts', "import type { Units } from './money.js';\nexport type U = Units;\n"),
    ).toEqual([]);
    expect(
      await restrictedIn(
        'src/pipeline/x.ts',
        "import { planAttempts } from '../routing/plan.js';\nexport const p = planAttempts;\n",
      ),
    ).toEqual([]);
  });

  it('routes reach data through the pipeline, not services.store', async () => {
    const [direct] = await eslint.lintText(
      'export const f = (services: { store: { getAccount(id: string): void } }) => services.store.getAccount("a");\n',
      {
        filePath: `${ROOT}src/http/routes/x.ts`,
      },
    );
    expect(direct?.messages.map((m) => m.message)).toEqual([
      expect.stringContaining('Routes reach data through src/pipeline'),
    ]);
    const [handed] = await eslint.lintText(
      'export const deps = (services: { store: object; now: number }) => ({ store: services.store, now: services.now });\n',
      { filePath: `${ROOT}src/http/routes/x.ts` },
    );
    expect(handed?.messages).toEqual([]);
  });

  it('the cycle check finds cycles, type-only ones included, and passes an acyclic graph', () => {
    expect(
      importsOf(
        'a.ts',
        "import type { B } from './b.js';\nexport { c } from './c.js';\nimport x from 'undici';\nconst d = import('./d.js');",
      ),
    ).toEqual(['./b.js', './c.js', './d.js']);
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
      ['e', ['e']],
    ]);
    expect(cyclesOf(graph)).toEqual([['a', 'b', 'c'], ['e']]);
    expect(
      cyclesOf(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
    ).toEqual([]);
  });
});
