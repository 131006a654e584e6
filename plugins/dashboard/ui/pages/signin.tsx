import { useState } from 'preact/hooks';
import { get, lastRefusal, setKey, whoami, type Who } from '../api.js';
import { ErrorBox, Field, valueOf } from '../components.js';
import { useLoad } from '../hooks.js';

/** Sign-in with a gateway API key (kept in this tab's session storage) or, where configured, single sign-on. */
export function SignIn({ onSignedIn }: { onSignedIn: (who: Who) => void }) {
  const [key, setDraft] = useState('');
  // A stored key or a session the gateway no longer accepts: say why (an ended session, a revoked key).
  const [error, setError] = useState<unknown>(() => {
    const why = lastRefusal();
    return why === null ? null : new Error(why);
  });
  const sso = useLoad(() => get<{ enabled: boolean; login_url: string | null }>('/v1/auth/sso/config').catch(() => ({ enabled: false, login_url: null })), []);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setKey(key.trim());
    try {
      const who = await whoami();
      if (who === null) {
        setKey(null);
        setError(new Error(lastRefusal() ?? 'This key is not accepted by the gateway.'));
      } else onSignedIn(who);
    } catch (err) {
      setKey(null);
      setError(err);
    }
  };
  return (
    <main class="signin">
      <h1>AI gateway</h1>
      <form onSubmit={submit} aria-label="Sign in">
        <Field label="API key">
          <input type="password" name="api-key" autocomplete="off" required value={key} onInput={(e) => setDraft(valueOf(e))} />
        </Field>
        <button type="submit">Sign in</button>
      </form>
      <ErrorBox error={error} />
      {sso.data?.enabled && sso.data.login_url ? (
        <p>
          <a class="button secondary" href={`${sso.data.login_url}?return_to=${encodeURIComponent(location.pathname)}`}>
            Sign in with single sign-on
          </a>
        </p>
      ) : null}
      <p class="muted small">The key stays in this tab only (session storage) and is sent to this gateway alone.</p>
    </main>
  );
}
