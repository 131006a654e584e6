import Mustache from 'mustache';
import { defineErrors, GatewayError, templateTexts, type PromptRelease, type TemplateCheck } from '../../sdk/index.js';

/** The prompts plugin's own error codes (its `errorCodes`), and the factory that raises them with their declared meaning. */
export const promptError = defineErrors({ missing_variables: { status: 400, type: 'invalid_request_error' } });

/** Parsed template tokens (mustache's `TemplateSpans`). */
type Tokens = ReturnType<typeof Mustache.parse>;
type Token = Tokens[number];

/**
 * How a value goes into model text: a string as it is (no HTML escaping:
 * this is a prompt, not a page), a number or boolean as written, anything
 * else (an object, an array) as JSON rather than `[object Object]`.
 */
export function formatValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value) ?? '';
}

const RENDER_OPTIONS = { escape: formatValue };

/**
 * A writer that counts what it writes: every character of a rendering comes
 * from a text, a `{{name}}` or a `{{{name}}}` token, so counting there bounds
 * the whole output, however sections over large arrays nest. `{{{name}}}`
 * formats like `{{name}}` (both unescaped).
 */
class PromptWriter extends Mustache.Writer {
  /** Characters this rendering may still write; set before each rendering (renderings are synchronous). */
  remaining = 0;

  #count(text: string | undefined): string | undefined {
    if (text === undefined) return undefined;
    this.remaining -= text.length;
    if (this.remaining < 0) throw new RenderTooLarge();
    return text;
  }

  override rawValue(token: string[]): string {
    return this.#count(super.rawValue(token))!;
  }

  override escapedValue(token: string[], context: Mustache.Context, config?: Mustache.RenderOptions): string {
    return this.#count(super.escapedValue(token, context, config))!;
  }

  override unescapedValue(token: string[], context: Mustache.Context): string {
    const value: unknown = context.lookup(token[1]!);
    return this.#count(value === null || value === undefined ? undefined : formatValue(value))!;
  }
}

class RenderTooLarge extends Error {}

/** A writer with no cache, for checks: what is checked at save time is parsed once there and never again by it. */
const checker = new Mustache.Writer();
(checker as unknown as { templateCache: undefined }).templateCache = undefined;

/** The partials a token list includes, at any depth of sections. */
function partialsOf(tokens: Tokens, into: Set<string>): Set<string> {
  for (const token of tokens) {
    if (token[0] === '>') into.add(token[1]);
    else if ((token[0] === '#' || token[0] === '^') && Array.isArray(token[4])) partialsOf(token[4] as Tokens, into);
  }
  return into;
}

/** Parses one text: its syntax error (mustache's message, which names the tag and position), and the partials it includes. */
export function checkTemplate(text: string): TemplateCheck {
  try {
    return { error: null, partials: [...partialsOf(checker.parse(text) as Tokens, new Set())] };
  } catch (err) {
    return { error: (err as Error).message, partials: [] };
  }
}

/** One text of the template, parsed. */
interface CompiledText {
  message: number;
  part: number | null;
  source: string;
  tokens: Tokens;
}

/** A prompt version made ready to render: parsed once, used by every request for that version. */
export interface CompiledPrompt {
  /** `id@version` and the versions of the partials it includes: what was parsed. */
  key: string;
  texts: CompiledText[];
  /** Variables the template uses outside any section and that have no declared default. */
  required: readonly string[];
  defaults: Readonly<Record<string, unknown>>;
  /** Partial name → content, for the writer (which parses each once, into its own cache). */
  partials: Record<string, string>;
  writer: PromptWriter;
}

/** The name of a version's compiled form: a new version of the prompt or of a partial it includes is another. */
export function compiledKey(release: PromptRelease): string {
  let key = `${release.id}@${release.version}`;
  for (const [name, partial] of release.partials) key += `|${name}@${partial === null ? '-' : partial.version}`;
  return key;
}

const invalid = (message: string, param: string | null = null) => new GatewayError('invalid_request', message, { param });

/**
 * Parses a version's message texts and the partials they include, and works
 * out which variables it needs. A partial it includes that the workspace no
 * longer has, or partials that include one another, make it unrenderable: a
 * 400 naming them (saving refuses both; an archive or a publish since can
 * bring them back).
 */
export function compilePrompt(release: PromptRelease, key = compiledKey(release)): CompiledPrompt {
  const writer = new PromptWriter();
  const partials: Record<string, string> = Object.create(null);
  for (const [name, partial] of release.partials) {
    if (partial === null) {
      throw invalid(`Prompt "${release.slug}" version ${release.version} includes the partial "${name}", which its workspace no longer has (archived?). Publish a version that does not include it, or create the partial again.`, 'prompt_id');
    }
    partials[name] = partial.content;
  }
  const texts = templateTexts(release.template).map((t) => ({ message: t.message, part: t.part, source: t.text, tokens: writer.parse(t.text) as Tokens }));

  // Names used outside any section must be there; inside `{{#x}}` a name may come from x's value, so it is not required.
  const used = new Set<string>();
  const visit = (tokens: Tokens, inSection: boolean, stack: readonly string[]) => {
    for (const token of tokens) visitToken(token, inSection, stack);
  };
  const visitToken = (token: Token, inSection: boolean, stack: readonly string[]) => {
    const [kind, name] = token;
    if ((kind === 'name' || kind === '&') && !inSection && name !== '.') used.add(name.split('.')[0]!);
    else if (kind === '#') visit(token[4] as Tokens, true, stack);
    else if (kind === '^') visit(token[4] as Tokens, inSection, stack);
    else if (kind === '>') {
      if (stack.includes(name)) throw invalid(`Prompt "${release.slug}" version ${release.version} cannot render: partials include one another (${[...stack, name].join(' → ')}).`, 'prompt_id');
      const content = partials[name];
      if (content === undefined) {
        throw invalid(`Prompt "${release.slug}" version ${release.version} includes the partial "${name}", which its workspace does not have.`, 'prompt_id');
      }
      visit(writer.parse(content) as Tokens, inSection, [...stack, name]);
    }
  };
  for (const text of texts) visit(text.tokens, false, []);

  const defaults: Record<string, unknown> = Object.create(null);
  for (const [name, declared] of Object.entries(release.variables)) if (declared.default !== undefined) defaults[name] = declared.default;
  const required = [...used].filter((name) => !(name in defaults));
  return { key, texts, required, defaults, partials, writer };
}

/** A copy of a JSON value whose objects have no prototype, so `{{constructor}}` or `{{toString}}` find nothing but the caller's own keys. */
function ownOnly(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(ownOnly);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = Object.create(null);
  for (const [k, v] of Object.entries(value)) out[k] = ownOnly(v);
  return out;
}

/**
 * Renders the version's template with `variables` (over the declared
 * defaults): the template with each message text rendered, everything else
 * as saved. A value is text: Mustache syntax in it is written as it is,
 * never expanded again. Throws `missing_variables` naming every required
 * variable the request did not send, and a 400 when the rendering would pass
 * `maxChars` characters.
 */
export function renderPrompt(compiled: CompiledPrompt, template: Readonly<Record<string, unknown>>, variables: Record<string, unknown>, maxChars: number): Record<string, unknown> {
  const view = ownOnly({ ...compiled.defaults, ...variables }) as Record<string, unknown>;
  const missing = compiled.required.filter((name) => !(name in view));
  if (missing.length > 0) {
    throw promptError(
      'missing_variables',
      `Missing variable${missing.length === 1 ? '' : 's'} ${missing.map((m) => `"${m}"`).join(', ')}: the template uses ${missing.length === 1 ? 'it' : 'them'} and declares no default. Send ${missing.length === 1 ? 'it' : 'them'} in variables.`,
      { param: 'variables' },
    );
  }
  const context = new Mustache.Context(view);
  // Only the messages that hold a template are copied (with their parts); the saved template is never changed.
  const messages = (template.messages as Record<string, unknown>[]).slice();
  const copied = new Set<number>();
  const own = (i: number): Record<string, unknown> => {
    if (!copied.has(i)) {
      const message = { ...messages[i] };
      if (Array.isArray(message.content)) message.content = message.content.slice();
      messages[i] = message;
      copied.add(i);
    }
    return messages[i]!;
  };
  const writer = compiled.writer;
  writer.remaining = maxChars;
  try {
    for (const text of compiled.texts) {
      const rendered = writer.renderTokens(text.tokens as unknown as string[][], context, compiled.partials, text.source, RENDER_OPTIONS);
      const message = own(text.message);
      if (text.part === null) message.content = rendered;
      else {
        const parts = message.content as Record<string, unknown>[];
        parts[text.part] = { ...parts[text.part], text: rendered };
      }
    }
  } catch (err) {
    if (err instanceof RenderTooLarge) {
      throw invalid(`The rendered prompt is longer than ${maxChars} characters, the limit: check the variables that sections repeat over.`, 'variables');
    }
    throw err;
  }
  return { ...template, messages };
}
