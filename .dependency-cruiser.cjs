// dependency-cruiser, run by `npm run lint` (scripts/lint.sh): no import cycles, the services and the
// admin tool share code only through libs/, never by importing one another, the renderer
// (libs/renderer) takes nothing from the other packages but @media/common, and a capability
// package's Redis keys (its keys.ts) are imported by that package alone.
// An import of another workspace package (@media/...) resolves as Node resolves it, to the package's
// built dist/ (not followed further; so it runs after `tsc -b`). Cycles between packages are refused
// by tsc -b's project references already; this finds those within a package.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle (type-only imports count): move what both sides need into a module that neither imports.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'services-and-tools-use-libs-only',
      severity: 'error',
      comment: 'A service or tool imports another service or tool: move what they share into libs/.',
      from: { path: '^(services|tools)/([^/]+)/' },
      to: { path: '^(services|tools)/', pathNot: '^$1/$2/' },
    },
    {
      name: 'libs-use-libs-only',
      severity: 'error',
      comment: 'A library imports a service or tool: libraries are what services and tools build on.',
      from: { path: '^libs/' },
      to: { path: '^(services|tools)/' },
    },
    {
      name: 'renderer-uses-common-only',
      severity: 'error',
      comment:
        'The renderer imports a workspace package other than @media/common (its scratch directory): it draws from a prompt and a seed alone, so any backend or tool can use it without the store, the queues or the domain model.',
      from: { path: '^libs/renderer/' },
      to: { path: '^libs/', pathNot: '^libs/(renderer|common)/' },
    },
    {
      name: 'capability-keys-stay-home',
      severity: 'error',
      comment:
        "A package imports another capability's keys.ts (libs/callbacks, libs/jobs, libs/accounts): only the owning package reads or writes its Redis keys; ask it through its stores instead. Tests reach every key through test/support/store-keys.ts.",
      from: { path: '^(libs|services|tools|bench|scripts)/([^/]+)/' },
      to: { path: '^libs/(callbacks|jobs|accounts)/(src|dist)/keys\\.', pathNot: '^libs/$2/' },
    },
    {
      name: 'workspace-package-resolves',
      severity: 'error',
      comment: 'An @media/* import that does not resolve: the package is not built (tsc -b), or has no entry point (a service, which nothing imports).',
      from: {},
      to: { path: '^@media/', couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: ['node_modules', '/dist/'] },
    // Ambient declarations (vite/client, an untyped package's types) are no module anyone imports.
    exclude: { path: '\\.d\\.ts$' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.mts', '.js', '.mjs', '.json'] },
  },
};
