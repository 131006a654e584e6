import { describe, expect, test } from 'vitest';
import { allowedRequestTypes } from '../../../../plugins/guardrails/checks/allowed-request-types.js';
import { modelWhitelist } from '../../../../plugins/guardrails/checks/model-whitelist.js';
import { inputOf, refused, runCheck } from './helpers.js';

describe('default.modelWhitelist', () => {
  const models = ['gpt-4o-mini', 'gpt-4o'];
  test('true when the model is listed', async () => {
    expect((await runCheck(modelWhitelist, { models }, inputOf('hi', { model: 'gpt-4o' }))).verdict).toBe(true);
  });
  test('false when it is not, or when the request names none', async () => {
    const r = await runCheck(modelWhitelist, { models }, inputOf('hi', { model: 'o1' }));
    expect(r.verdict).toBe(false);
    expect(r.explanation).toBe('The model "o1" is not in the allowed list.');
    expect((await runCheck(modelWhitelist, { models }, inputOf('hi', { model: null }))).verdict).toBe(false);
    expect((await runCheck(modelWhitelist, { models }, inputOf('hi', { model: 'GPT-4O' }))).verdict).toBe(false);
  });
  test('not makes it a block list', async () => {
    expect((await runCheck(modelWhitelist, { models, not: true }, inputOf('hi', { model: 'o1' }))).verdict).toBe(true);
    const blocked = await runCheck(modelWhitelist, { models, not: true }, inputOf('hi', { model: 'gpt-4o' }));
    expect(blocked.verdict).toBe(false);
    expect(blocked.explanation).toBe('The model "gpt-4o" is blocked.');
  });
  test('bad parameters', () => {
    expect(refused(modelWhitelist, {})).toContain('models is required');
    expect(refused(modelWhitelist, { models: [] })).toContain('models must not be empty');
    expect(refused(modelWhitelist, { models: 'gpt-4o' })).toContain('models must be an array of model names');
    expect(refused(modelWhitelist, { models: [''] })).toContain('a model name must not be empty');
    expect(refused(modelWhitelist, { models: ['a'], not: 'yes' })).toContain('not must be true or false');
  });
});

describe('default.allowedRequestTypes', () => {
  test('allowed: the route must be listed', async () => {
    expect((await runCheck(allowedRequestTypes, { allowed: ['chat.completions'] }, inputOf('hi'))).verdict).toBe(true);
    const r = await runCheck(allowedRequestTypes, { allowed: ['chat.completions'] }, inputOf('hi', { route: 'embeddings' }));
    expect(r.verdict).toBe(false);
    expect(r.explanation).toContain('"embeddings" are not in the allowed list (chat.completions)');
  });
  test('blocked: the route must not be listed', async () => {
    expect((await runCheck(allowedRequestTypes, { blocked: ['proxy', 'embeddings'] }, inputOf('hi'))).verdict).toBe(true);
    expect((await runCheck(allowedRequestTypes, { blocked: ['proxy', 'embeddings'] }, inputOf('hi', { route: 'proxy' }))).verdict).toBe(false);
  });
  test('bad parameters: exactly one of the two lists, of names', () => {
    expect(refused(allowedRequestTypes, {})).toContain('give exactly one of allowed and blocked');
    expect(refused(allowedRequestTypes, { allowed: ['a'], blocked: ['b'] })).toContain('give exactly one of allowed and blocked');
    expect(refused(allowedRequestTypes, { allowed: [] })).toContain('allowed must not be empty');
    expect(refused(allowedRequestTypes, { blocked: 'proxy' })).toContain('blocked must be an array of route names');
    expect(refused(allowedRequestTypes, { allowed: [''] })).toContain('must not be empty');
    expect(refused(allowedRequestTypes, { allow: ['x'] })).toContain('unknown parameter "allow"');
  });
});
