/**
 * Stored prompts as the `prompts` plugin keeps and renders them: a reference
 * with its version suffix, one version ready for the request path, and where
 * its template holds variables; see docs/prompts.md.
 */

/** Which version of a stored prompt a reference names: the published one (no suffix), the latest, or a number. */
export type PromptSelector = 'published' | 'latest' | number;

/** A prompt reference split at its version suffix: `welcome`, `pp-1a2b@latest`, `welcome@3`. */
export interface PromptRef {
  /** The prompt's id or slug. */
  ref: string;
  /** Which version: `published` (no suffix), `latest`, or a version number. */
  selector: PromptSelector;
}

/** Largest version number a reference may name (a bigger one cannot exist and would not fit an INTEGER column). */
export const MAX_PROMPT_VERSION = 2_147_483_647;

/**
 * Splits `id`, `id@latest` or `id@<version>` (a positive integer). Null for
 * an empty reference or any other suffix, which the caller answers with a 400.
 */
export function parsePromptRef(raw: string): PromptRef | null {
  const at = raw.lastIndexOf('@');
  if (at === -1) return raw === '' ? null : { ref: raw, selector: 'published' };
  const ref = raw.slice(0, at);
  const suffix = raw.slice(at + 1);
  if (ref === '') return null;
  if (suffix === 'latest') return { ref, selector: 'latest' };
  if (!/^[1-9]\d{0,9}$/.test(suffix)) return null;
  const version = Number(suffix);
  return version <= MAX_PROMPT_VERSION ? { ref, selector: version } : null;
}

/** Where a prompt version sends its requests: exactly one of the three. */
export interface PromptSelection {
  /** A provider slug, `@openai-prod`. */
  provider?: string;
  /** A legacy virtual key. */
  virtual_key?: string;
  /** A saved config's id or slug, in the prompt's workspace. */
  config?: string;
}

/** A variable a version declares: its default, used when the request does not send it. */
export interface PromptVariable {
  /** The value used when the request does not send the variable. */
  default?: unknown;
}

/** The published version of a stored partial (`{{> name}}`). */
export interface PartialRelease {
  /** The partial's id. */
  id: string;
  /** Its name, as templates include it (`{{> name}}`). */
  name: string;
  /** Its published version's number. */
  version: number;
  /** Its published version's Mustache text. */
  content: string;
  /** The partials its content includes. */
  partials: readonly string[];
}

/**
 * One version of a stored prompt, as the request path uses it. Frozen, and the
 * same object while the control plane's cache holds it.
 */
export interface PromptRelease {
  /** The prompt's id (`pp-…`), whatever the reference was. */
  id: string;
  /** The prompt's slug, unique among the workspace's active prompts. */
  slug: string;
  /** A name for people. */
  name: string;
  /** The workspace the prompt belongs to. */
  workspaceId: string;
  /** This version's number. */
  version: number;
  /** The prompt's latest version number. */
  latestVersion: number;
  /** The prompt's published version number (what a reference without a suffix selects). */
  publishedVersion: number;
  /** A chat completion body whose message texts may hold `{{variables}}`. */
  template: Readonly<Record<string, unknown>>;
  /** Where this version sends its requests: a provider slug, a virtual key or a saved config. */
  selection: Readonly<PromptSelection>;
  /** The variables this version declares, by name, with their defaults. */
  variables: Readonly<Record<string, PromptVariable>>;
  /**
   * Every partial the version includes, directly or through other partials, by
   * name: the workspace's published version, or null when the workspace has no
   * active partial of that name (any more).
   */
  partials: ReadonlyMap<string, PartialRelease | null>;
}

/** What a lookup found: the version, or why there is none. */
export type PromptLookup = PromptRelease | { missing: 'prompt' } | { missing: 'version'; latestVersion: number };

/** A template text checked: its Mustache syntax error (null when it parses), and the partials it includes. */
export interface TemplateCheck {
  /** The Mustache syntax error, null when the text parses. */
  error: string | null;
  /** The names of the partials it includes (`{{> name}}`). */
  partials: string[];
}

/** One text of a template that may hold variables: a message's `content`, or the `text` of one of its text parts. */
export interface TemplateText {
  /** Index of the message in the body's `messages`. */
  message: number;
  /** Index in the message's `content` array; null when `content` is a string. */
  part: number | null;
  /** The template text. */
  text: string;
  /** Where it is, for errors: `messages[0].content`, `messages[1].content[0].text`. */
  path: string;
}

/**
 * The texts of a chat body's messages that are templates: each string
 * `content`, and the `text` of each `{"type": "text"}` part. Nothing else of
 * the body (model, tools, response_format, …) is rendered.
 */
export function templateTexts(template: Readonly<Record<string, unknown>>): TemplateText[] {
  const out: TemplateText[] = [];
  const messages = template.messages;
  if (!Array.isArray(messages)) return out;
  messages.forEach((message: unknown, i) => {
    if (typeof message !== 'object' || message === null) return;
    const content = (message as Record<string, unknown>).content;
    if (typeof content === 'string') {
      out.push({ message: i, part: null, text: content, path: `messages[${i}].content` });
    } else if (Array.isArray(content)) {
      content.forEach((part: unknown, j) => {
        const p = part as Record<string, unknown> | null;
        if (typeof p === 'object' && p !== null && p.type === 'text' && typeof p.text === 'string') {
          out.push({ message: i, part: j, text: p.text, path: `messages[${i}].content[${j}].text` });
        }
      });
    }
  });
  return out;
}
