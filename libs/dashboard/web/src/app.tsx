import { useEffect, useMemo, useState } from 'preact/hooks';
import { Link, Redirect, Route, Router, Switch, useLocation, useSearch } from 'wouter-preact';
import { DashboardApi, type SessionInfo } from './api';
import { AppContext, ErrorBanner } from './ui';
import { useNow } from './time';
import { SignInPage } from './pages/sign-in';
import { OverviewPage } from './pages/overview';
import { RequestsPage } from './pages/requests';
import { RequestDetailPage } from './pages/request-detail';
import { KeysPage } from './pages/keys';
import { UsagePage } from './pages/usage';
import { MembersPage } from './pages/members';
import { AuditPage } from './pages/audit';
import { EndpointsPage } from './pages/endpoints';

/** How long a page that could not reach the server at start waits before asking again. */
const BOOT_RETRY_MS = 5_000;

/** Each page's name, for the window title (after the workspace's), so tabs and history tell them apart. */
const PAGE_TITLES: [RegExp, string][] = [
  [/^\/overview/, 'Overview'],
  [/^\/requests\/./, 'Request'],
  [/^\/requests/, 'Requests'],
  [/^\/endpoints/, 'Webhook endpoints'],
  [/^\/keys/, 'API keys'],
  [/^\/usage/, 'Usage'],
  [/^\/members/, 'Members'],
  [/^\/audit/, 'Audit'],
  [/^\/sign-in/, 'Sign in'],
];

/** Vite's base is '/dashboard/'; the router wants it without the trailing slash. */
const BASE = import.meta.env.BASE_URL.replace(/\/$/, '');

export function App() {
  return (
    <Router base={BASE}>
      <Shell />
    </Router>
  );
}

function Shell() {
  const [location, navigate] = useLocation();
  const search = useSearch();
  // undefined: still asking the server; null: signed out.
  const [session, setSession] = useState<SessionInfo | null | undefined>(undefined);
  const [bootError, setBootError] = useState<unknown>(null);
  const api = useMemo(() => new DashboardApi(() => setSession(null)), []);
  const now = useNow();

  // Asked again every few seconds while it fails (Redis away a moment, a deploy): a page opened then
  // comes up by itself once the server answers.
  const [bootAttempt, setBootAttempt] = useState(0);
  useEffect(() => {
    api.session().then(
      (s) => {
        setBootError(null);
        setSession(s);
      },
      (err: unknown) => {
        setBootError(err);
        setTimeout(() => setBootAttempt((n) => n + 1), BOOT_RETRY_MS);
      },
    );
  }, [api, bootAttempt]);

  // The window's title names the page and the workspace; on a change of page, focus goes to the
  // page's content, so a screen reader announces the new page rather than staying on the link.
  const workspaceName = session ? session.workspace.name : undefined;
  useEffect(() => {
    const page = PAGE_TITLES.find(([path]) => path.test(location))?.[1];
    document.title = [page, workspaceName, 'Media callbacks'].filter(Boolean).join(' · ');
  }, [location, workspaceName]);
  const [firstLocation] = useState(location);
  useEffect(() => {
    if (location !== firstLocation) document.getElementById('main')?.focus();
  }, [location, firstLocation]);

  // Signed out (at start, by a 401 anywhere, or by signing out): the sign-in page, remembering where we were.
  useEffect(() => {
    if (session === null && location !== '/sign-in') {
      const here = location + (search ? `?${search}` : '');
      navigate(`/sign-in${here && here !== '/' ? `?next=${encodeURIComponent(here)}` : ''}`, { replace: true });
    }
  }, [session, location, search, navigate]);

  if (bootError)
    return (
      <main class="page">
        <ErrorBanner error={bootError} />
        <p class="muted">Trying again every {BOOT_RETRY_MS / 1000} seconds.</p>
        <button type="button" class="btn" onClick={() => setBootAttempt((n) => n + 1)}>
          Try now
        </button>
      </main>
    );
  if (session === undefined)
    return (
      <main class="page">
        <p class="muted">Loading…</p>
      </main>
    );
  if (session === null) {
    return (
      <SignInPage
        api={api}
        onSignedIn={(s) => {
          setSession(s);
          const next = new URLSearchParams(search).get('next');
          // Only a path inside the app: never an open redirect.
          navigate(next && next.startsWith('/') && !next.startsWith('//') ? next : '/overview', { replace: true });
        }}
      />
    );
  }

  return (
    <AppContext.Provider value={{ api, session, now }}>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <div class="brand" title={session.workspace.name}>
          Media callbacks <span class="muted">· {session.workspace.name}</span>
        </div>
        <nav aria-label="Sections">
          <NavLink href="/overview">Overview</NavLink>
          <NavLink href="/requests">Requests</NavLink>
          <NavLink href="/endpoints">Endpoints</NavLink>
          <NavLink href="/keys">API keys</NavLink>
          <NavLink href="/usage">Usage</NavLink>
          <NavLink href="/members">Members</NavLink>
          {session.member.role !== 'member' ? <NavLink href="/audit">Audit</NavLink> : null}
        </nav>
        <div class="who">
          <span class="who-email" title={session.member.email}>
            {session.member.email}
          </span>
          <span class="role">{session.member.role}</span>
          <button
            type="button"
            class="btn btn-small"
            onClick={async () => {
              try {
                await api.signOut();
              } finally {
                setSession(null);
              }
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <main id="main" class="page" tabIndex={-1}>
        <Switch>
          <Route path="/overview" component={OverviewPage} />
          <Route path="/requests" component={RequestsPage} />
          <Route path="/requests/:id">{(params) => <RequestDetailPage id={params.id} />}</Route>
          <Route path="/endpoints" component={EndpointsPage} />
          <Route path="/keys" component={KeysPage} />
          <Route path="/usage" component={UsagePage} />
          <Route path="/members" component={MembersPage} />
          <Route path="/audit" component={AuditPage} />
          <Route path="/sign-in">
            <Redirect to="/overview" replace />
          </Route>
          <Route path="/">
            <Redirect to="/overview" replace />
          </Route>
          <Route>
            <h1>Not found</h1>
            <p>
              There is no such page. <Link href="/overview">Go to the Overview</Link>.
            </p>
          </Route>
        </Switch>
      </main>
    </AppContext.Provider>
  );
}

function NavLink({ href, children }: { href: string; children: string }) {
  const [location] = useLocation();
  const active = location === href || location.startsWith(`${href}/`);
  return (
    <Link href={href} class={active ? 'nav-link active' : 'nav-link'} aria-current={active ? 'page' : undefined}>
      {children}
    </Link>
  );
}
