import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { createSecretBox, maskedJson, openJson, sealJson } from '../../sdk/index.js';

const box = createSecretBox(randomBytes(32));
const KEYS = new Set(['api_key', 'headers']);
const KEY = 'sk-nested-target-key-0123456789abcd';

describe('sealJson / openJson', () => {
  const doc = {
    strategy: { mode: 'fallback' },
    targets: [{ provider: 'openai', api_key: KEY, weight: 1 }, { provider: 'anthropic', api_key: 'short' }],
    input_guardrails: [{ 'default.webhook': { url: 'http://127.0.0.1:1/h', headers: { authorization: 'Bearer hook-secret-0123456789', 'x-n': '1' } } }],
  };

  test('credentials at any depth are masked in the body, sealed, and restored by openJson', () => {
    const sealed = sealJson(box, 'config:pc-1', doc, KEYS);
    expect(sealed.body).not.toContain(KEY);
    expect(sealed.body).not.toContain('hook-secret');
    const shown = JSON.parse(sealed.body);
    expect(shown.targets[0]).toEqual({ provider: 'openai', api_key: '****abcd', weight: 1 });
    expect(shown.targets[1].api_key).toBe('****');
    // Header names stay; each value is masked.
    expect(Object.keys(shown.input_guardrails[0]['default.webhook'].headers)).toEqual(['authorization', 'x-n']);
    expect(openJson(box, 'config:pc-1', sealed)).toEqual(doc);
    // Bound to its record: another id cannot open it.
    expect(() => openJson(box, 'config:pc-2', sealed)).toThrow();
  });

  test('a document without credentials stores no sealed part', () => {
    expect(sealJson(box, 'config:pc-1', { retry: { attempts: 2 } }, KEYS)).toEqual({ body: '{"retry":{"attempts":2}}', sealed: '' });
  });

  test('a mask sent back at the same place keeps the credential; elsewhere it is a 400', () => {
    const v1 = sealJson(box, 'config:pc-1', doc, KEYS);
    const back = JSON.parse(v1.body);
    back.targets[0].weight = 2;
    const v2 = sealJson(box, 'config:pc-1', back, KEYS, { previous: v1 });
    expect(openJson(box, 'config:pc-1', v2)).toEqual({ ...doc, targets: [{ ...doc.targets[0], weight: 2 }, doc.targets[1]] });
    const moved = { targets: [doc.targets[1], { ...back.targets[0] }] };
    expect(() => sealJson(box, 'config:pc-1', moved, KEYS, { previous: v1, param: 'config' })).toThrow(expect.objectContaining({ status: 400, param: 'config.targets[1].api_key' }));
  });

  test('a row stored before sealing (sealed null) is answered masked and opened as it is', () => {
    const legacy = { body: JSON.stringify(doc), sealed: null };
    expect(JSON.stringify(maskedJson(legacy, KEYS))).not.toContain(KEY);
    expect(openJson(box, 'config:pc-1', legacy)).toEqual(doc);
  });
});
