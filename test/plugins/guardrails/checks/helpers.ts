import * as v from 'valibot';
import { expect } from 'vitest';
import { UpstreamClient } from '../../../../core/index.js';
import type { CheckInput, CheckResult, GuardrailCheck } from '../../../../sdk/guardrails.js';
import { LOOPBACK_HOSTS } from '../../../helpers/outbound.js';
import { checkInput } from '../../../../server/testing/index.js';

let client: UpstreamClient | null = null;
/** One pooled client for the unit tests that call out (webhook, log), to endpoints on loopback. */
export function testUpstream(): UpstreamClient {
  client ??= new UpstreamClient({ connections: 8, headersTimeoutMs: 10_000, bodyTimeoutMs: 10_000, outbound: { allowHosts: LOOPBACK_HOSTS } });
  return client;
}

/** A check input with defaults: the kit's (an input-phase chat request whose last message is `text`), with this file's client. */
export function inputOf(text: string, over: Partial<CheckInput> = {}): CheckInput {
  return checkInput(text, 'input', { upstream: testUpstream(), ...over });
}

/** Parses the parameters (they must be valid) and runs the check. */
export async function runCheck(check: GuardrailCheck<any>, parameters: unknown, input: CheckInput | string): Promise<CheckResult> {
  const parsed = v.safeParse(check.parameters, parameters);
  if (!parsed.success) throw new Error(`parameters refused: ${parsed.issues[0].message}`);
  return check.run(parsed.output, typeof input === 'string' ? inputOf(input) : input);
}

/** The verdict of a check on a text. */
export async function verdictOf(check: GuardrailCheck<any>, parameters: unknown, text: string): Promise<boolean> {
  return (await runCheck(check, parameters, text)).verdict;
}

/** Asserts the parameters are refused and returns the first message, which must read as a sentence about the parameter. */
export function refused(check: GuardrailCheck<any>, parameters: unknown): string {
  const parsed = v.safeParse(check.parameters, parameters);
  expect(parsed.success, `parameters ${JSON.stringify(parameters)} should be refused`).toBe(false);
  const message = parsed.issues![0].message;
  expect(message).not.toMatch(/^Invalid (type|key|length|value)/);
  return message;
}
