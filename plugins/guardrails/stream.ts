import { Transform } from 'node:stream';
import { SSEParser } from '../../sdk/index.js';

/**
 * Wraps an OpenAI SSE answer so output checks can run on its assembled text.
 * Every event passes through as it arrives except `[DONE]`, which is held
 * until `atEnd` has run on the text: a stream cannot be un-sent, so all a
 * failed check can still do is add an event (an error) before `[DONE]`.
 */
export function guardStream(atEnd: (text: string) => Promise<string>): Transform {
  const parser = new SSEParser();
  let text = '';
  const emit = (data: string): string => {
    if (data === '[DONE]') return '';
    if (data.includes('"content"')) {
      try {
        const chunk = JSON.parse(data) as { choices?: Array<{ delta?: { content?: unknown }; text?: unknown }> };
        for (const choice of chunk.choices ?? []) {
          const piece = choice.delta?.content ?? choice.text;
          if (typeof piece === 'string') text += piece;
        }
      } catch {
        /* not a chunk: passed through untouched */
      }
    }
    return `data: ${data}\n\n`;
  };
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      let out = '';
      for (const e of parser.push(chunk.toString('utf8'))) out += emit(e.data);
      done(null, out === '' ? undefined : out);
    },
    flush(done) {
      let out = '';
      for (const e of parser.end()) out += emit(e.data);
      atEnd(text).then(
        (tail) => done(null, out + tail + 'data: [DONE]\n\n'),
        (err: Error) => done(err),
      );
    },
  });
}
