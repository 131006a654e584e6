import { describe, expect, test } from 'vitest';
import { upstreamUrlProblem, withoutUserInfo } from '../../../core/index.js';

describe('upstreamUrlProblem', () => {
  test.each(['http://127.0.0.1:9000/v1', 'https://llm.example.com/v1/', 'http://[::1]:8000', 'HTTPS://LLM.EXAMPLE.COM'])('%s is fine', (url) => {
    expect(upstreamUrlProblem(url)).toBeNull();
  });

  test.each([
    ['http://[::1', /absolute http or https URL/],
    ['http://', /absolute http or https URL/],
    ['llm.example.com/v1', /absolute http or https URL/],
    ['', /absolute http or https URL/],
    ['ftp://files.example', /http or https URL/],
    ['file:///etc/passwd', /http or https URL/],
    ['http://user:pw@llm.example.com', /user info/],
    ['http://user@llm.example.com', /user info/],
    ['http://:pw@llm.example.com', /user info/],
  ])('%j: %s', (url, problem) => {
    expect(upstreamUrlProblem(url)).toMatch(problem);
  });

  test('never repeats the URL', () => {
    expect(upstreamUrlProblem('http://user:SECRET@h.example')).not.toContain('SECRET');
    expect(upstreamUrlProblem('gopher://SECRET')).not.toContain('SECRET');
  });
});

describe('withoutUserInfo', () => {
  test.each([
    ['The upstream at http://user:SECRET@127.0.0.1:1 is unreachable.', 'The upstream at http://127.0.0.1:1 is unreachable.'],
    ['https://SECRET@h.example/a?b=c', 'https://h.example/a?b=c'],
    ['two: http://a:SECRET@x.example/p and https://b:SECRET@y.example', 'two: http://x.example/p and https://y.example'],
    ['every @ of the user info: http://a@SECRET@host/p', 'every @ of the user info: http://host/p'],
    ['redis://:SECRET@127.0.0.1:6379/0', 'redis://127.0.0.1:6379/0'],
  ])('%s', (text, clean) => {
    expect(withoutUserInfo(text)).toBe(clean);
  });

  test('leaves text without user info alone', () => {
    for (const text of ['http://h.example/a@b', 'mail me at a@b.example', 'https://h.example/?to=a@b', 'no url']) expect(withoutUserInfo(text)).toBe(text);
  });
});
