import { describe, expect, test } from 'vitest';
import { checkReference } from '../../../plugins/provider-registry/store/credentials.js';

describe('secret references', () => {
  test.each([
    ['env:GATEWAY_SECRET_OPENAI', null],
    ['file:openai.key', null],
    ['file:team/openai.key', null],
    ['env:DATABASE_URL', /GATEWAY_SECRET_/],
    ['env:GATEWAY_SECRET_lower', /upper case/],
    ['file:../x', /inside the secrets directory/],
    ['file:/etc/passwd', /inside the secrets directory/],
    ['file:', /inside the secrets directory/],
    ['vault:x', /env: or file:/],
  ])('%s', (ref, expected) => {
    const message = checkReference(ref, { workspaceSlug: null });
    if (expected === null) expect(message).toBeNull();
    else expect(message).toMatch(expected);
  });
});
