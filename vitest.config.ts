import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';
import { serviceAvailability } from './test/service-availability.js';

export default defineConfig(async () => {
  // Without PostgreSQL or Redis (and not in CI), the suites that need them are left out (one line says which).
  const services = await serviceAvailability(fileURLToPath(new URL('.', import.meta.url)).replace(/\/$/, ''));
  return {
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      exclude: [...configDefaults.exclude, ...services.exclude],
      env: services.env,
      testTimeout: 30_000,
      hookTimeout: 30_000,
      pool: 'forks',
      // Integration suites start servers on loopback; two workers match the 2-core machines.
      maxWorkers: 2,
    },
  };
});
