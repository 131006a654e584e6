import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { etagMatches, gatewayPackageVersion, staticFile } from '../../sdk/index.js';

describe('static files', () => {
  test('the ETag is a quoted hash of the content; If-None-Match matches it in a list, weakly, or as *', () => {
    const file = staticFile(Buffer.from('hello'), 'text/plain');
    expect(file.etag).toBe(`"${file.version}"`);
    expect(staticFile(Buffer.from('hello'), 'text/plain').etag).toBe(file.etag);
    expect(staticFile(Buffer.from('hello!'), 'text/plain').etag).not.toBe(file.etag);
    expect(etagMatches(file.etag, file.etag)).toBe(true);
    expect(etagMatches(`"other", W/${file.etag}`, file.etag)).toBe(true);
    expect(etagMatches('*', file.etag)).toBe(true);
    expect(etagMatches('"other"', file.etag)).toBe(false);
    expect(etagMatches(undefined, file.etag)).toBe(false);
  });

  test("the gateway's version is package.json's", () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(gatewayPackageVersion()).toBe(pkg.version);
  });
});
