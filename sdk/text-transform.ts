import { Transform } from 'node:stream';

/**
 * A Transform that sends what `push` makes of each chunk as it arrives and
 * what `end` makes when the input ends ('' sends nothing); a throw from
 * either fails the stream. Backpressure flows through.
 */
export function textTransform(push: (chunk: Buffer) => string, end: () => string): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      let out: string;
      try {
        out = push(chunk);
      } catch (err) {
        return done(err as Error);
      }
      done(null, out === '' ? undefined : out);
    },
    flush(done) {
      let out: string;
      try {
        out = end();
      } catch (err) {
        return done(err as Error);
      }
      done(null, out === '' ? undefined : out);
    },
  });
}
