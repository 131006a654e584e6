import * as v from 'valibot';
import type { CheckInput } from '../../../sdk/index.js';

/** Headers the HTTP client manages itself; a config may not set them. */
const RESERVED = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'expect', 'te', 'trailer']);
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** `url`: an absolute http(s) URL without user info (credentials belong in `headers`, which are never logged). Keeps its origin for messages. */
export const endpointUrl = v.pipe(
  v.string('url must be a string'),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    let url: URL;
    try {
      url = new URL(dataset.value);
    } catch {
      addIssue({ message: 'url must be an absolute http(s) URL' });
      return NEVER;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      addIssue({ message: 'url must use http or https' });
      return NEVER;
    }
    if (url.username !== '' || url.password !== '') {
      addIssue({ message: 'url must not contain credentials (send them in headers)' });
      return NEVER;
    }
    return { href: url.href, origin: url.origin };
  }),
);

/** `headers`: extra request headers (e.g. a bearer token). Lower-cased; hop-by-hop and framing headers are refused. */
export const endpointHeaders = v.optional(
  v.pipe(
    v.record(
      v.pipe(
        v.string(),
        v.regex(TOKEN, 'a header name must be an HTTP token'),
        v.check((name) => !RESERVED.has(name.toLowerCase()), 'this header is set by the gateway and cannot be configured'),
      ),
      v.pipe(v.string('each header value must be a string'), v.regex(/^[^\r\n\0]*$/, 'a header value must not contain line breaks')),
      'headers must be an object of header names to string values',
    ),
    v.transform((h) => Object.fromEntries(Object.entries(h).map(([k, val]) => [k.toLowerCase(), val]))),
  ),
  {},
);

/** The JSON event webhook and log checks send: everything the check sees, except the gateway's internals. */
export function eventOf(input: CheckInput) {
  return {
    phase: input.phase,
    route: input.route,
    model: input.model,
    text: input.text,
    request: input.request,
    response: input.response,
    metadata: input.metadata,
  };
}

/** The upstream request for an event. Config headers first, so content-type stays JSON. */
export function eventRequest(url: string, headers: Record<string, string>, input: CheckInput) {
  return {
    method: 'POST',
    url,
    headers: { ...headers, 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(eventOf(input)),
  };
}
