import * as v from 'valibot';
import { defineCheck } from '../../../sdk/index.js';
import { fencedBlocks } from './fences.js';
import { parameters } from './params.js';

/** Fence tags by language; the first is the language's canonical name. */
const LANGUAGES: Record<string, readonly string[]> = {
  py: ['py', 'python', 'python3', 'py3'],
  js: ['js', 'javascript', 'jsx', 'mjs', 'cjs', 'node'],
  ts: ['ts', 'typescript', 'tsx', 'mts', 'cts'],
  sql: ['sql', 'mysql', 'postgresql', 'postgres', 'psql', 'sqlite', 'plsql', 'tsql'],
  json: ['json', 'jsonc', 'json5'],
  bash: ['bash', 'sh', 'shell', 'zsh', 'console', 'shell-session'],
  html: ['html', 'htm', 'xhtml'],
  css: ['css', 'scss', 'sass', 'less'],
  xml: ['xml', 'svg'],
  yaml: ['yaml', 'yml'],
  java: ['java'],
  kotlin: ['kotlin', 'kt', 'kts'],
  c: ['c', 'h'],
  cpp: ['cpp', 'c++', 'cc', 'cxx', 'hpp'],
  csharp: ['csharp', 'cs', 'c#'],
  go: ['go', 'golang'],
  rust: ['rust', 'rs'],
  ruby: ['ruby', 'rb'],
  php: ['php'],
  swift: ['swift'],
  r: ['r'],
  powershell: ['powershell', 'ps1', 'pwsh'],
  dockerfile: ['dockerfile', 'docker'],
  markdown: ['markdown', 'md'],
};

/** Tag (any alias) → canonical language. */
const CANONICAL = new Map<string, string>(Object.entries(LANGUAGES).flatMap(([lang, tags]) => tags.map((t) => [t, lang] as [string, string])));

/**
 * Heuristics for code outside fences, per language. One `strong` pattern is
 * enough; otherwise two different `weak` patterns must match. Languages
 * without an entry are recognised by their fence tag only.
 */
interface Heuristic {
  strong: readonly RegExp[];
  weak: readonly RegExp[];
  /** Also required (TypeScript: a type annotation, to tell it from JavaScript; SQL: a keyword in capitals). */
  requires?: RegExp;
  /** Instead of patterns: the language recognises its own text (JSON). */
  test?: (text: string) => boolean;
}

const JS_STRONG = [
  /^[ \t]*(?:export[ \t]+)?(?:async[ \t]+)?function[ \t]*\*?[ \t]*[\w$]*[ \t]*\([^)\n]*\)[ \t]*\{/m,
  /\bconsole\.(?:log|error|warn|info)\(/,
  /\brequire\([ \t]*['"][^'"\n]+['"][ \t]*\)/,
  /^[ \t]*import[ \t]+[\w${}*,\t ]+[ \t]+from[ \t]+['"][^'"\n]+['"];?[ \t]*$/m,
];
const JS_WEAK = [
  /^[ \t]*(?:const|let|var)[ \t]+[\w${}[\], \t]+=/m,
  /=>/,
  /^[ \t]*export[ \t]+(?:default|const|function|class)\b/m,
  /;[ \t]*$/m,
  /\b(?:document|window)\.\w+/,
  /===|!==/,
  /^[ \t]*\}\)?;?[ \t]*$/m,
];

const HEURISTICS: Record<string, Heuristic> = {
  py: {
    strong: [
      /^[ \t]*(?:async[ \t]+)?def[ \t]+\w+[ \t]*\([^)\n]*\)[ \t]*(?:->[^:\n]+)?:[ \t]*$/m,
      /^[ \t]*class[ \t]+\w+(?:\([^)\n]*\))?:[ \t]*$/m,
      /^if[ \t]+__name__[ \t]*==[ \t]*['"]__main__['"][ \t]*:/m,
      /^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]+[\w*, ()]+$/m,
    ],
    weak: [
      /^[ \t]*import[ \t]+[\w.]+(?:[ \t]+as[ \t]+\w+)?[ \t]*$/m,
      /\bprint\(/,
      /^[ \t]*(?:if|elif|while|for|with)\b[^\n]*:[ \t]*$/m,
      /^[ \t]*(?:else|try|finally):[ \t]*$/m,
      /^[ \t]*except\b[^\n]*:[ \t]*$/m,
      /\bself\.\w+/,
      /^[ \t]+return\b/m,
    ],
  },
  js: { strong: JS_STRONG, weak: JS_WEAK },
  ts: {
    strong: [
      /^[ \t]*(?:export[ \t]+)?interface[ \t]+\w+(?:<[^>\n]*>)?[ \t]*(?:extends[ \t]+[\w<>, ]+)?\{/m,
      /^[ \t]*(?:export[ \t]+)?type[ \t]+\w+(?:<[^>\n]*>)?[ \t]*=/m,
      /^[ \t]*(?:export[ \t]+)?enum[ \t]+\w+[ \t]*\{/m,
    ],
    weak: [...JS_STRONG, ...JS_WEAK],
    requires: /:[ \t]*(?:string|number|boolean|void|unknown|any|never|Promise<|Record<|Array<)|^[ \t]*(?:export[ \t]+)?(?:interface|type|enum)[ \t]+\w+|\bas[ \t]+(?:const|string|number|unknown)\b/m,
  },
  sql: {
    strong: [
      /\bSELECT\s[\s\S]{1,500}?\sFROM\s+[\w."`[\]]+/i,
      /\bINSERT\s+INTO\s+[\w."`[\]]+/i,
      /\bUPDATE\s+[\w."`[\]]+\s+SET\s+\w+\s*=/i,
      /\bDELETE\s+FROM\s+[\w."`[\]]+/i,
      /\bCREATE\s+(?:TABLE|INDEX|VIEW|DATABASE)\b/i,
      /\bALTER\s+TABLE\b/i,
      /\bDROP\s+(?:TABLE|DATABASE|INDEX)\b/i,
    ],
    weak: [/\bWHERE\s+\w+\s*(?:=|<|>|LIKE\b|IN\b)/, /\bJOIN\s+\w+(?:\s+\w+)?\s+ON\b/i, /\bGROUP\s+BY\b|\bORDER\s+BY\b/, /;[ \t]*$/m],
    // Keywords in capitals: "select a photo from your gallery" is prose.
    requires: /\b(?:SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP)\b/,
  },
  json: { strong: [], weak: [], test: looksLikeJson },
  bash: {
    strong: [/^#![ \t]*\/(?:usr\/)?bin\/(?:env[ \t]+)?(?:ba|z|da)?sh\b/m, /^[ \t]*\$[ \t]+(?:sudo[ \t]+)?[a-z][\w.-]*(?:[ \t]|$)/m, /^[ \t]*sudo[ \t]+[a-z][\w.-]*/m],
    weak: [
      /^[ \t]*(?:apt(?:-get)?|yum|dnf|brew|npm|npx|pip3?|curl|wget|chmod|chown|mkdir|export|cd|ls|grep|echo|git|docker|kubectl)[ \t]+[-\w./$"'~]/m,
      /\$\{?[A-Za-z_]\w*\}?/,
      /\|[ \t]*(?:grep|awk|sed|xargs|sort|uniq|head|tail|wc|tee)\b/,
      /^[ \t]*(?:fi|done|esac)[ \t]*$/m,
      /;[ \t]*(?:then|do)[ \t]*$/m,
      /[ \t]&&[ \t]|[ \t]\|\|[ \t]/,
      /[ \t]--?[a-z][\w-]*(?:[ \t=]|$)/m,
    ],
  },
  html: {
    strong: [/<!DOCTYPE[ \t]+html/i],
    weak: [
      /<(?:html|head|body|div|span|script|style|table|form|ul|ol|p|a|img|br|input|button|li|h[1-6])\b[^<>\n]{0,200}>/i,
      /<\/(?:html|head|body|div|span|script|style|table|form|ul|ol|p|a|button|li|h[1-6])>/i,
      /[ \t](?:class|id|href|src)="[^"\n]{0,500}"/,
    ],
  },
  css: {
    strong: [/^[ \t]*[.#@]?[\w-][^{}\n;]*\{\s*[\w-]+[ \t]*:[ \t]*[^;{}\n]+;/m, /@media[ \t]*\(/],
    weak: [/^[ \t]*[\w-]+[ \t]*:[ \t]*[^;{}\n]+;[ \t]*$/m, /^[ \t]*\}[ \t]*$/m],
  },
};

const OPEN_BRACKET = /[[{]/;
const STARTS_WITH_BRACKET = /^[[{]/;

/** JSON heuristic: the trimmed text, or a span of it from the first `{`/`[` to the last `}`/`]`, parses as an object or array. */
function looksLikeJson(text: string): boolean {
  const candidates = [text.trim()];
  const start = text.search(OPEN_BRACKET);
  const end = Math.max(text.lastIndexOf('}'), text.lastIndexOf(']'));
  if (start !== -1 && end > start) candidates.push(text.slice(start, end + 1));
  for (const c of candidates) {
    if (!STARTS_WITH_BRACKET.test(c)) continue;
    try {
      const value: unknown = JSON.parse(c);
      if (typeof value === 'object' && value !== null) return true;
    } catch {
      /* not JSON */
    }
  }
  return false;
}

function heuristicMatch(lang: string, text: string): boolean {
  const h = HEURISTICS[lang];
  if (h === undefined) return false;
  if (h.test) return h.test(text);
  if (h.requires && !h.requires.test(text)) return false;
  if (h.strong.some((re) => re.test(text))) return true;
  let hits = 0;
  for (const re of h.weak) if (re.test(text) && ++hits >= 2) return true;
  return false;
}

/** Where code in `lang` was found: a fence with its tag, the heuristics on unfenced (or untagged) text, or nowhere. */
export function findCode(lang: string, text: string): 'fence' | 'heuristic' | null {
  const fences = fencedBlocks(text);
  if (fences.some((f) => CANONICAL.get(f.lang) === lang)) return 'fence';
  // Blocks tagged with another language are not this one, whatever they look like.
  const kept: string[] = [];
  let at = 0;
  for (const f of fences) {
    if (f.lang === '') continue;
    kept.push(text.slice(at, f.start));
    at = f.end;
  }
  kept.push(text.slice(at));
  return heuristicMatch(lang, kept.join('')) ? 'heuristic' : null;
}

/** The languages `format` accepts (each also by its aliases). */
export const CODE_LANGUAGES = Object.freeze(Object.keys(LANGUAGES));
/** The languages also recognised without a fence. */
export const HEURISTIC_LANGUAGES = Object.freeze(Object.keys(HEURISTICS));

/**
 * `default.containsCode { format, not? }`: passes when the text contains code
 * in the language `format` (a name or fence tag: `py`, `python`, `js`, `ts`,
 * `sql`, `json`, `bash`, …): a fenced block tagged with that language, or,
 * for py, js, ts, sql, json, bash, html and css, unfenced code recognised by
 * the heuristics above. `not` inverts: the text must contain no such code.
 */
export const containsCode = defineCheck({
  parameters: parameters({
    format: v.pipe(
      v.string('format must be a string (a language such as py, js, ts, sql, json, bash)'),
      v.rawTransform(({ dataset, addIssue, NEVER }) => {
        const lang = CANONICAL.get(dataset.value.trim().toLowerCase());
        if (lang === undefined) {
          addIssue({ message: `format "${dataset.value.slice(0, 40)}" is not a known language (known: ${CODE_LANGUAGES.join(', ')})` });
          return NEVER;
        }
        return lang;
      }),
    ),
    not: v.optional(v.boolean('not must be true or false'), false),
  }),
  run({ format, not }, { text }) {
    const found = findCode(format, text);
    const verdict = not ? found === null : found !== null;
    const how = found === 'fence' ? `a \`\`\`${format} block` : 'code recognised by its look';
    return {
      verdict,
      explanation: found === null
        ? `The text contains no ${format} code${not ? ', as required' : ''}.`
        : `The text contains ${format} code (${how})${not ? ', which it must not' : ''}.`,
      data: { language: format, found: found !== null, how: found },
    };
  },
});
