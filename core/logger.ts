import pino, { type DestinationStream, type Logger } from 'pino';
import { isoTime } from './iso-time.js';

/**
 * Paths pino censors in every log line, whatever the plugins declare. Request
 * logs are built from chosen fields, so these are a second line of defence
 * for what plugins log. They are explicit on purpose: one wildcard path
 * (`*.api_key`) made every line about 40 µs slower in measurement, more than
 * the rest of the pipeline. A plugin that logs an object holding credentials
 * logs it under one of these names, or as `target` / `config`, whose declared
 * credential fields are added by {@link redactPaths}.
 */
export const CORE_REDACT_PATHS: readonly string[] = Object.freeze([
  'authorization',
  'api_key',
  'apiKey',
  'keys',
  'headers.authorization',
  'headers["x-gateway-api-key"]',
  'headers["api-key"]',
  'headers["x-api-key"]',
  'headers["x-goog-api-key"]',
  'headers.cookie',
  'req.headers.authorization',
  'req.headers["x-gateway-api-key"]',
  'options.apiKey',
  'options.keys',
]);

/** The core's paths, plus `target.<field>` and `config.<field>` for each credential field. */
export function redactPaths(credentialFields: Iterable<string>): string[] {
  const paths = [...CORE_REDACT_PATHS];
  for (const field of credentialFields) paths.push(`target.${field}`, `config.${field}`);
  return paths;
}

const CENSOR = '[redacted]';

/**
 * pino's `time` field as ISO 8601 (`"2026-11-24T19:47:16.042Z"`), like
 * `stdTimeFunctions.isoTime` but without a Date and its string per line
 * ({@link isoTime} formats the date part once a second).
 */
export function isoTimestamp(): string {
  return `,"time":"${isoTime(Date.now())}"`;
}

/** What {@link createLogger} takes. */
export interface LoggerOptions {
  /** The lowest level written (pino's: `trace`, `debug`, `info`, `warn`, `error`, `fatal`, `silent`). Default `info`. */
  level?: string;
  /** Paths censored in every line. Default: {@link CORE_REDACT_PATHS} and the core's own credential field (`target.api_key`, `config.api_key`). */
  redact?: readonly string[];
  /** Where lines go; default: stdout, written asynchronously (flushed on close). */
  destination?: DestinationStream;
}

/** The root logger. Lines are JSON; secrets at the redacted paths are replaced by `[redacted]`. */
export function createLogger(options: LoggerOptions = {}): Logger {
  // Async, gathered into chunks under load; a quiet gateway's lines still go out within STDOUT_FLUSH_MS.
  const destination = options.destination ?? bufferedStdout();
  return pino(
    {
      level: options.level ?? 'info',
      redact: { paths: [...(options.redact ?? redactPaths(['api_key']))], censor: CENSOR },
      base: undefined,
      timestamp: isoTimestamp,
    },
    destination,
  );
}

/** Bytes gathered before one write to stdout: a write per line is a syscall and a thread-pool round trip per request under load. */
const STDOUT_CHUNK = 8 * 1024;
/** Longest a line waits in the buffer when traffic is too light to fill it. */
const STDOUT_FLUSH_MS = 100;

/**
 * stdout, written asynchronously in chunks of about STDOUT_CHUNK bytes, and at
 * least every STDOUT_FLUSH_MS (an unref'd timer: it never keeps the process
 * alive); `flushLogger` writes out the rest on close.
 */
function bufferedStdout(): DestinationStream {
  const stream = pino.destination({ dest: 1, sync: false, minLength: STDOUT_CHUNK });
  const timer = setInterval(() => {
    try {
      stream.flush();
    } catch {
      // Nothing to write yet, or closed: the next tick (or close) writes it.
    }
  }, STDOUT_FLUSH_MS).unref();
  stream.once('close', () => clearInterval(timer));
  return stream;
}

/**
 * A gateway's logger: `base` (its level and destination) with secrets censored
 * at `paths`. pino replaces a parent's redaction in a child, so the paths are
 * complete, not added to the parent's.
 */
export function withRedaction(base: Logger, paths: readonly string[]): Logger {
  return base.child({}, { redact: { paths: [...paths], censor: CENSOR } });
}

/** Writes out what an async destination still holds. */
export function flushLogger(logger: Logger): Promise<void> {
  return new Promise((resolve) => {
    try {
      logger.flush((err) => {
        void err;
        resolve();
      });
    } catch {
      resolve();
    }
  });
}

export type { Logger };
