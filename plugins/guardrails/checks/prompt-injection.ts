import * as v from 'valibot';
import { defineCheck } from '../../../sdk/index.js';
import { parameters } from './params.js';

/** One signal of a prompt injection: a name (reported), a pattern and its weight in the score. */
interface Signal {
  name: string;
  pattern: RegExp;
  weight: number;
}

/** Up to three filler words ("all of the", "your"), each followed by whitespace, so no two quantifiers compete for the same spaces. */
const ANY = String.raw`(?:(?:all|any|the|your|my|these|those|every|each|of)\s+){0,3}`;

/**
 * The signals and their weights. Each counts once, except special tokens,
 * which count per occurrence up to a cap. The weights are a judgement: one
 * blatant override ("ignore all previous instructions") alone reaches the
 * default threshold of 0.5; weaker hints need company.
 */
export const SIGNALS: readonly Signal[] = [
  { name: 'ignore_instructions', weight: 0.6, pattern: new RegExp(String.raw`\b(?:ignore|disregard|forget|override|skip|bypass)\s+${ANY}(?:previous|prior|above|earlier|preceding|original|initial)\s+(?:instructions?|prompts?|rules?|directions?|guidelines?|context|messages?)`, 'i') },
  { name: 'disregard_system_prompt', weight: 0.6, pattern: /\b(?:ignore|disregard|forget|override|bypass)\s+(?:the\s+|your\s+)?(?:system|developer)\s+(?:prompt|message|instructions?)\b/i },
  {
    name: 'reveal_system_prompt',
    weight: 0.5,
    pattern: /\b(?:reveal|show|print|repeat|output|display|tell\s+me|give\s+me|what\s+(?:is|are|was|were))\s+(?:me\s+)?(?:all\s+)?(?:(?:your|the)\s+(?:(?:initial|original|hidden|secret|full|exact)\s+)?system\s+(?:prompt|message|instructions)|your\s+(?:(?:initial|original|hidden|secret|full|exact)\s+)?(?:instructions|prompt)|the\s+(?:initial|original|hidden|secret)\s+(?:instructions|prompt))\b/i,
  },
  { name: 'new_instructions', weight: 0.3, pattern: /\b(?:new|updated|real|actual)\s+instructions?\s*:|\bfrom\s+now\s+on\b/i },
  { name: 'you_are_now', weight: 0.3, pattern: /\byou\s+are\s+now\b|\byou\s+(?:will|must|shall)\s+now\s+act\b/i },
  { name: 'developer_mode', weight: 0.4, pattern: /\b(?:developer|god|admin|debug|sudo|unrestricted|unfiltered)\s+mode\b/i },
  { name: 'jailbreak', weight: 0.4, pattern: /\bjail\s?break(?:ing|s|ed|ers?)?\b/i },
  { name: 'dan', weight: 0.3, pattern: /\bDAN\b|\b[Dd]o\s+[Aa]nything\s+[Nn]ow\b/ },
  { name: 'roleplay_override', weight: 0.3, pattern: /\b(?:pretend|act|behave|roleplay|role-play)\s+(?:that\s+)?(?:you\s+are|you're|as\s+if|as|like)\b[^.\n]{0,80}\b(?:no|without|free\s+(?:of|from)|not\s+bound\s+by)\s+(?:any\s+)?(?:restrictions?|limits?|limitations?|rules?|filters?|guidelines?|censorship|ethics)/i },
  { name: 'no_restrictions', weight: 0.2, pattern: /\b(?:no|without|ignore\s+(?:all|any))\s+(?:any\s+)?(?:restrictions?|limitations?|filters?|censorship|content\s+polic(?:y|ies)|safety\s+guidelines?)\b/i },
];

/** Runs of 40 or more base64 characters; a run counts when it mixes lower case, upper case and digits (a long word or hex hash does not). */
const BASE64_RUN = /(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{40,}={0,2}/g;
const BASE64_WEIGHT = 0.2;

const LOWER = /[a-z]/;
const UPPER = /[A-Z]/;
const DIGIT = /[0-9]/;

function hasBase64Blob(text: string): boolean {
  for (const m of text.matchAll(BASE64_RUN)) {
    const run = m[0];
    if (LOWER.test(run) && UPPER.test(run) && DIGIT.test(run)) return true;
  }
  return false;
}

/** Chat-template and special tokens of common models, which have no business in user text. */
const SPECIAL_TOKENS = /<\|(?:im_start|im_end|im_sep|endoftext|system|user|assistant|begin_of_text|end_of_text|start_header_id|end_header_id|eot_id|fim_prefix|fim_middle|fim_suffix)\|>|\[\/?INST\]|<<\/?SYS>>/gi;
const SPECIAL_TOKEN_WEIGHT = 0.3;
const SPECIAL_TOKEN_CAP = 0.6;

/** The score of a text: the summed weights of the signals found, capped at 1. */
export function injectionScore(text: string): { score: number; signals: string[] } {
  const signals: string[] = [];
  let score = 0;
  for (const s of SIGNALS) {
    if (s.pattern.test(text)) {
      signals.push(s.name);
      score += s.weight;
    }
  }
  if (hasBase64Blob(text)) {
    signals.push('base64_blob');
    score += BASE64_WEIGHT;
  }
  const tokens = text.match(SPECIAL_TOKENS)?.length ?? 0;
  if (tokens > 0) {
    signals.push(`special_tokens:${tokens}`);
    score += Math.min(SPECIAL_TOKEN_CAP, tokens * SPECIAL_TOKEN_WEIGHT);
  }
  return { score: Math.min(1, Math.round(score * 1000) / 1000), signals };
}

/**
 * `default.promptInjection { threshold? }`: a heuristic. Weighted patterns
 * (instruction overrides, system-prompt extraction, "you are now", developer
 * mode, jailbreak, role-play overrides, base64 blobs, chat-template tokens)
 * are summed into a score between 0 and 1; the check fails when the score is
 * at or above `threshold` (default 0.5). Trivially evaded by paraphrase,
 * translation or encoding, and it flags texts that discuss injections; it is
 * not a substitute for a trained classifier.
 */
export const promptInjection = defineCheck({
  parameters: parameters({
    threshold: v.optional(
      v.pipe(v.number('threshold must be a number'), v.minValue(0, 'threshold must be between 0 and 1'), v.maxValue(1, 'threshold must be between 0 and 1')),
      0.5,
    ),
  }),
  run({ threshold }, { text }) {
    const { score, signals } = injectionScore(text);
    const verdict = score < threshold;
    return {
      verdict,
      explanation: verdict
        ? `Injection score ${score} is below the threshold ${threshold}.`
        : `The text looks like a prompt injection (score ${score}, threshold ${threshold}; signals: ${signals.join(', ')}).`,
      data: { score, threshold, signals },
    };
  },
});
