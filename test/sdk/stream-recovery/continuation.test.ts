import { describe, expect, test } from 'vitest';
import { CONTINUE_INSTRUCTION, continuationBody, continuationMode, seamOverlap } from '../../../sdk/index.js';

describe('seamOverlap: the repeat a continuation starts with', () => {
  test.each([
    ['The quick brown fox ', 'brown fox jumps', 10],
    ['The quick brown fox ', 'The quick brown fox jumps', 20],
    ['The quick brown fox ', 'jumps over', 0],
    // Shorter than four characters: taken for a coincidence, kept.
    ['the bookkee', 'eper', 0],
    ['ends with abc', 'abc and more', 0],
    ['ends with abcd', 'abcd and more', 4],
    ['', 'anything', 0],
  ])('%j then %j: %i', (sent, next, overlap) => {
    expect(seamOverlap(sent, next)).toBe(overlap);
  });

  test('the longest repeat wins', () => {
    expect(seamOverlap('abab abab abab', 'abab abab abab!')).toBe(14);
  });
});

describe('continuationMode', () => {
  const body = { model: 'claude-sonnet-4-5' };
  test.each([
    ['chat.completions', { provider: 'anthropic' }, body, 'prefill'],
    ['messages', { provider: 'bedrock', override_params: { model: 'us.anthropic.claude-sonnet-4-5' } }, { model: 'x' }, 'prefill'],
    ['chat.completions', { provider: 'vertex-ai' }, body, 'prefill'],
    ['chat.completions', { provider: 'bedrock' }, { model: 'meta.llama3-70b' }, 'instruct'],
    ['chat.completions', { provider: 'mistral-ai' }, { model: 'mistral-large' }, 'prefix'],
    // DeepSeek's prefix flag works only on its beta base URL, which the bundled provider does not call.
    ['chat.completions', { provider: 'deepseek' }, { model: 'deepseek-chat' }, 'instruct'],
    // The prefix flag is a chat field: through another door those providers get the instruction.
    ['messages', { provider: 'mistral-ai' }, { model: 'mistral-large' }, 'instruct'],
    ['responses', { provider: 'openai' }, { model: 'gpt-5' }, 'instruct'],
    // A provider behind a virtual key is not known before it is resolved.
    ['chat.completions', { provider: '@my-anthropic' }, body, 'instruct'],
  ] as const)('%s to %j: %s', (route, target, b, mode) => {
    expect(continuationMode(route, target, b, 'Some text')).toBe(mode);
  });

  test('nothing said yet: the request is sent again as it was', () => {
    expect(continuationMode('chat.completions', { provider: 'anthropic' }, body, '  ')).toBe('restart');
    const original = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
    expect(continuationBody('chat.completions', original, '', 'restart')).toBe(original);
  });
});

describe('continuationBody', () => {
  const chat = { model: 'm', stream: true, messages: [{ role: 'user', content: 'Say it.' }] };

  test('prefill: the partial answer as the last turn, its trailing whitespace left out', () => {
    expect(continuationBody('chat.completions', chat, 'The quick brown fox ', 'prefill').messages).toEqual([
      { role: 'user', content: 'Say it.' },
      { role: 'assistant', content: 'The quick brown fox' },
    ]);
  });

  test('prefix: the assistant message flagged, its text as sent', () => {
    expect(continuationBody('chat.completions', chat, 'The quick ', 'prefix').messages).toEqual([
      { role: 'user', content: 'Say it.' },
      { role: 'assistant', content: 'The quick ', prefix: true },
    ]);
  });

  test('instruct: the partial answer, then the instruction', () => {
    const body = continuationBody('messages', { model: 'm', max_tokens: 50, messages: [{ role: 'user', content: 'Say it.' }] }, 'The quick ', 'instruct');
    expect(body.messages).toEqual([
      { role: 'user', content: 'Say it.' },
      { role: 'assistant', content: 'The quick ' },
      { role: 'user', content: CONTINUE_INSTRUCTION },
    ]);
    expect(body.max_tokens).toBe(50);
  });

  test("a client's own prefill goes on with the partial answer", () => {
    const prefilled = { model: 'm', messages: [{ role: 'user', content: 'List them.' }, { role: 'assistant', content: '1.' }] };
    expect(continuationBody('messages', prefilled, ' Apples\n2.', 'prefill').messages).toEqual([
      { role: 'user', content: 'List them.' },
      { role: 'assistant', content: '1. Apples\n2.' },
    ]);
  });

  test('Responses: a string input becomes a user item; the partial answer an assistant message', () => {
    const body = continuationBody('responses', { model: 'm', input: 'Say it.', instructions: 'Be brief.' }, 'The quick ', 'instruct');
    expect(body.instructions).toBe('Be brief.');
    expect(body.input).toEqual([
      { role: 'user', content: 'Say it.' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'The quick ' }] },
      { role: 'user', content: CONTINUE_INSTRUCTION },
    ]);
  });

  test('the client body is not changed', () => {
    const before = JSON.stringify(chat);
    continuationBody('chat.completions', chat, 'x', 'instruct');
    expect(JSON.stringify(chat)).toBe(before);
  });
});
