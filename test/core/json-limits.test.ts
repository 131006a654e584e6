import { describe, expect, test } from 'vitest';
import { exceedsJsonDepth, exceedsValueDepth, parseJsonObject } from '../../core/index.js';
import { createConfigParser } from '../../plugins/config/index.js';
import { bundledTargetFields } from '../helpers/fields.js';

const nested = (levels: number, inner = '1') => '['.repeat(levels) + inner + ']'.repeat(levels);

describe('exceedsJsonDepth', () => {
  test('counts objects and arrays inside one another, as bytes or as text', () => {
    for (const form of [(s: string) => s, (s: string) => Buffer.from(s)]) {
      expect(exceedsJsonDepth(form(nested(3)), 3)).toBe(false);
      expect(exceedsJsonDepth(form(nested(4)), 3)).toBe(true);
      expect(exceedsJsonDepth(form('{"a":{"b":[{"c":1}]}}'), 4)).toBe(false);
      expect(exceedsJsonDepth(form('{"a":{"b":[{"c":1}]}}'), 3)).toBe(true);
      // Siblings do not add up.
      expect(exceedsJsonDepth(form(`[${Array(50).fill('[1]').join(',')}]`), 2)).toBe(false);
    }
  });

  test('ignores brackets inside strings, escaped quotes included', () => {
    expect(exceedsJsonDepth('{"a":"[[[[{{{{"}', 1)).toBe(false);
    expect(exceedsJsonDepth('{"a":"\\"[[[[","b":"\\\\"}', 1)).toBe(false);
    expect(exceedsJsonDepth(Buffer.from('{"é[":"ü{{{{"}'), 1)).toBe(false);
    expect(exceedsJsonDepth('{"a":"\\\\",   "b":[[1]]}', 2)).toBe(true);
  });

  test('a 10,000-level body is refused as json_too_deep before parsing; 100 levels pass', () => {
    const deep = Buffer.from(`{"a":${nested(10_000)}}`);
    expect(() => parseJsonObject(deep)).toThrow(expect.objectContaining({ code: 'json_too_deep', status: 400 }));
    expect(() => parseJsonObject(deep)).toThrow(/deeper than 100 levels/);
    expect(parseJsonObject(Buffer.from(`{"a":${nested(99)}}`)).a).toBeDefined();
    expect(() => parseJsonObject(Buffer.from(`{"a":${nested(100)}}`))).toThrow(/deeper than 100/);
  });
});

describe('exceedsValueDepth', () => {
  test('walks a decoded value without recursion', () => {
    const deep: unknown = JSON.parse(nested(100_000));
    expect(exceedsValueDepth(deep, 100)).toBe(true);
    expect(exceedsValueDepth({ a: [{ b: 1 }] }, 3)).toBe(false);
    expect(exceedsValueDepth({ a: [{ b: {} }] }, 3)).toBe(true);
    expect(exceedsValueDepth('text', 0)).toBe(false);
  });
});

describe('the config parser', () => {
  const parser = createConfigParser(bundledTargetFields(), { maxDepth: 10, maxBytes: 1000 });
  const key = { provider: 'openai', api_key: 'k' };

  test('refuses a config deeper or larger than its limits before validating it, naming the limit', () => {
    expect(() => parser.parse({ ...key, override_params: { a: JSON.parse(nested(9)) } })).toThrow(/deeper than 10 levels/);
    expect(parser.check({ ...key, override_params: { a: JSON.parse(nested(100_000)) } })).toEqual([{ path: '', message: expect.stringContaining('deeper than 10 levels') }]);
    expect(() => parser.parse({ ...key, override_params: { stop: ['x'.repeat(2000)] } })).toThrow(/larger than the limit of 1000/);
    expect(parser.parse({ ...key, override_params: { a: JSON.parse(nested(7)) } }).provider).toBe('openai');
  });
});
