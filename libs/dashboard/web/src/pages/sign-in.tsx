import { useState } from 'preact/hooks';
import { ApiError, type DashboardApi, type SessionInfo } from '../api';
import { ErrorBanner } from '../ui';

export function SignInPage({ api, onSignedIn }: { api: DashboardApi; onSignedIn: (s: SessionInfo) => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await api.signIn(email.trim(), password));
    } catch (err) {
      if (err instanceof ApiError && err.status === 429 && err.retryAfter) {
        setError(new ApiError(429, `Too many sign-in attempts. Try again in ${err.retryAfter} s.`, err.code));
      } else setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <main class="signin" id="main">
      <form class="card signin-card" onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">Sign in</h1>
        <p class="muted">
          Use the e-mail and password that <code>create-workspace</code> or your workspace owner gave you.
        </p>
        <ErrorBanner error={error} />
        <label for="email">E-mail</label>
        <input id="email" name="email" type="email" autoComplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        <label for="password">Password</label>
        <input
          id="password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
        />
        <button type="submit" class="btn btn-primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
