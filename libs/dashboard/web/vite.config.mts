import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

/**
 * The gateway serves the built files at /dashboard/ (index.html for client-side routes), so every
 * asset URL carries that base. No plugin: Vite's own transform compiles the JSX for Preact, which
 * keeps the build to two packages (vite, preact) and no Babel.
 */
export default defineConfig({
  root: here,
  base: '/dashboard/',
  // Everything the page loads is bundled: no CDN, no inline script (the CSP is script-src 'self').
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    // A tiny inline module-preload polyfill would need 'unsafe-inline'; every target browser has it.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: true,
    target: 'es2022',
  },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  logLevel: 'warn',
});
