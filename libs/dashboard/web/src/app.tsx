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

  useEffect(() => {
    api.session().then(setSession, setBootError);
  }, [api]);

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
        <div class="brand">
          Media callbacks <span class="muted">· {session.workspace.name}</span>
        </div>
        <nav aria-label="Sections">
          <NavLink href="/overview">Overview</NavLink>
          <NavLink href="/requests">Requests</NavLink>
          <NavLink href="/keys">API keys</NavLink>
          <NavLink href="/usage">Usage</NavLink>
          <NavLink href="/members">Members</NavLink>
        </nav>
        <div class="who">
          <span>
            {session.member.email} <span class="role">{session.member.role}</span>
          </span>
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
          <Route path="/keys" component={KeysPage} />
          <Route path="/usage" component={UsagePage} />
          <Route path="/members" component={MembersPage} />
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
