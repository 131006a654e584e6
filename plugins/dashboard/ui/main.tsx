import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { hasScope, request, setKey, storedKey, whoami, type Who } from './api.js';
import { THEME_EVENT } from './chart.js';
import { ErrorBox } from './components.js';
import { Admin } from './pages/admin.js';
import { Breakdowns } from './pages/breakdowns.js';
import { LogDetail } from './pages/log-detail.js';
import { Logs } from './pages/logs.js';
import { Overview } from './pages/overview.js';
import { SignIn } from './pages/signin.js';
import { href, useRoute } from './router.js';
import './styles.css';

const THEME_STORAGE = 'gateway.dashboard.theme';

/** Light, dark, or the system's choice (the default). */
function useTheme(): [string, () => void] {
  const [theme, setTheme] = useState(() => localStorage.getItem(THEME_STORAGE) ?? 'system');
  useEffect(() => {
    if (theme === 'system') delete document.documentElement.dataset.theme;
    else document.documentElement.dataset.theme = theme;
    localStorage.setItem(THEME_STORAGE, theme);
    dispatchEvent(new Event(THEME_EVENT));
  }, [theme]);
  return [theme, () => setTheme(theme === 'system' ? 'dark' : theme === 'dark' ? 'light' : 'system')];
}

function App() {
  const route = useRoute();
  const [who, setWho] = useState<Who | null | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [theme, toggleTheme] = useTheme();
  useEffect(() => {
    // A stored key, or a single sign-on session cookie: either may already be signed in.
    whoami().then(setWho, (err: unknown) => {
      setError(err);
      setWho(null);
    });
  }, []);
  if (who === undefined) return <p class="muted loading">Loading…</p>;
  if (who === null) return <SignIn onSignedIn={setWho} />;
  const logs = hasScope(who.scopes, 'logs.read');
  const admin = ['workspaces', 'api_keys', 'integrations', 'providers', 'configs', 'prompts', 'policies'].some((r) => hasScope(who.scopes, `${r}.read`));
  const page = route.parts[0] ?? (logs ? 'overview' : 'admin');
  const signOut = async () => {
    if (storedKey() === null) await request('POST', '/v1/auth/logout').catch(() => undefined);
    setKey(null);
    setWho(null);
  };
  const nav = [
    ['overview', 'Overview', logs],
    ['logs', 'Logs', logs],
    ['breakdowns', 'Breakdowns', logs],
    ['admin', 'Admin', admin],
  ] as const;
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <strong class="brand">AI gateway</strong>
        <nav aria-label="Pages">
          {nav
            .filter(([, , allowed]) => allowed)
            .map(([id, label]) => (
              <a href={href([id])} class={page === id ? 'active' : undefined} aria-current={page === id ? 'page' : undefined}>
                {label}
              </a>
            ))}
        </nav>
        <span class="who" data-testid="who">
          {who.user?.email ?? who.key_id ?? who.type}
          {who.workspace_id ? ` · ${who.workspace_id}` : ''}
        </span>
        <button type="button" class="secondary small" onClick={toggleTheme} aria-label={`Theme: ${theme}`} title="Theme">
          {theme === 'dark' ? 'Dark' : theme === 'light' ? 'Light' : 'Auto'}
        </button>
        <button type="button" class="secondary small" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="main">
        <ErrorBox error={error} />
        {page === 'overview' && logs ? <Overview /> : null}
        {page === 'logs' && logs ? route.parts[1] ? <LogDetail id={route.parts[1]} /> : <Logs route={route} /> : null}
        {page === 'breakdowns' && logs ? <Breakdowns route={route} /> : null}
        {page === 'admin' && admin ? <Admin route={route} who={who} /> : null}
        {!nav.some(([id, , allowed]) => id === page && allowed) ? <p class="muted">This key has no scope for this page.</p> : null}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
