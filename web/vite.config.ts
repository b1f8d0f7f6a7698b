/**
 * The dashboard build: `npm run build` (root) runs `vite build --config web/vite.config.ts`, writing
 * hashed files to dist/web/, which the gateway reads at boot (src/http/web-bundle.ts).
 */
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const here = import.meta.dirname;

export default defineConfig({
  root: here,
  base: '/',
  plugins: [react()],
  build: {
    outDir: `${here}/../dist/web`,
    emptyOutDir: true,
    assetsDir: 'assets',
    // Small SVGs stay files too: the CSP has no reason to allow data: scripts or styles.
    assetsInlineLimit: 0,
    sourcemap: false,
    target: 'es2022',
  },
});
