import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

/** An account of the test identity provider. */
export interface TestAccount {
  email?: string;
  email_verified?: boolean;
  name?: string;
  /** Leave the email out of the ID token (the gateway then reads it from the userinfo endpoint). */
  emailInUserinfoOnly?: boolean;
}

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  accounts: Map<string, TestAccount>;
  /** The account the next sign-in authenticates as (the login page always says yes). */
  loginAs: string;
  /** Rewrites the ID token of the next token response; null: untouched. */
  tamperIdToken: ((idToken: string) => string) | null;
  /** Requests the provider served, by path (discovery, jwks, token, …). */
  seen: string[];
  close(): Promise<void>;
}

/**
 * A real OpenID Connect provider (the `oidc-provider` package) on 127.0.0.1,
 * with one confidential client whose redirect URI is `redirectUri`, PKCE
 * required, RS256 ID tokens, and a login page that signs in `loginAs`
 * without asking (the interaction is finished by the test server, the way a
 * provider's own login and consent pages finish it).
 */
export async function startOidcProvider(redirectUri: string): Promise<TestOidcProvider> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key-1', alg: 'RS256', use: 'sig' };
  const state: TestOidcProvider = {
    issuer,
    clientId: 'ai-gateway',
    clientSecret: `secret-${randomUUID()}`,
    accounts: new Map(),
    loginAs: '',
    tamperIdToken: null,
    seen: [],
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: state.clientId,
        client_secret: state.clientSecret,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    pkce: { required: () => true },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    // Like most providers' code flow: the scopes' claims in the ID token too (per account, see emailInUserinfoOnly).
    conformIdTokenClaims: false,
    async findAccount(_ctx, sub) {
      const account = state.accounts.get(sub);
      if (account === undefined) return undefined;
      return {
        accountId: sub,
        async claims(use) {
          const { emailInUserinfoOnly, ...claims } = account;
          if (use === 'id_token' && emailInUserinfoOnly) return { sub, name: claims.name };
          return { sub, ...claims };
        },
      };
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    features: { devInteractions: { enabled: false }, rpInitiatedLogout: { enabled: true } },
    jwks: { keys: [jwk] },
    cookies: { keys: ['oidc-provider-test-cookie-key'] },
  });
  const callback = provider.callback();

  server.on('request', async (req: IncomingMessage, res: ServerResponse) => {
    state.seen.push(new URL(req.url ?? '/', issuer).pathname);
    try {
      if (req.url?.startsWith('/interaction/')) {
        const details = await provider.interactionDetails(req, res);
        const accountId = state.loginAs;
        const grant = new provider.Grant({ accountId, clientId: String(details.params.client_id) });
        grant.addOIDCScope(String(details.params.scope));
        const grantId = await grant.save();
        await provider.interactionFinished(req, res, { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: false });
        return;
      }
      const tamper = state.tamperIdToken;
      if (tamper !== null && req.url?.startsWith('/token')) {
        state.tamperIdToken = null;
        const end = res.end.bind(res);
        res.end = ((chunk?: unknown, ...rest: unknown[]) => {
          if (chunk !== undefined && chunk !== null && typeof chunk !== 'function') {
            const body = JSON.parse(Buffer.from(chunk as Buffer).toString('utf8'));
            if (typeof body.id_token === 'string') body.id_token = tamper(body.id_token);
            res.removeHeader('content-length');
            return (end as (...a: unknown[]) => ServerResponse)(JSON.stringify(body), ...rest);
          }
          return (end as (...a: unknown[]) => ServerResponse)(chunk, ...rest);
        }) as typeof res.end;
      }
      callback(req, res);
    } catch (err) {
      res.statusCode = 500;
      res.end(String(err));
    }
  });
  return state;
}

/** The ID token with its payload's claims changed (the signature left as it was). */
export function rewriteClaims(idToken: string, change: (claims: Record<string, unknown>) => void): string {
  const [header, payload, signature] = idToken.split('.');
  const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8'));
  change(claims);
  return `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
}
