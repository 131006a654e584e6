import * as v from 'valibot';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { UpstreamClient, type GatewayPlugin, type Registry } from '../../core/index.js';
import { openai } from '../../plugins/providers/openai/index.js';
import type { CheckInput, GuardrailCheck } from '../../sdk/guardrails.js';
import { LOOPBACK_HOSTS, startTestGateway, type TestGateway } from './harness.js';
import { startChatMock, type ChatMock } from './mock-http.js';

/** One set of parameters and texts the check must pass and fail with them. */
export interface CheckCase {
  parameters: Record<string, unknown>;
  /** Texts the check passes (verdict true) with these parameters. */
  pass: string[];
  /** Texts the check fails (verdict false) with these parameters. */
  fail: string[];
}

/** What {@link checkContract} needs to know about a guardrail check. */
export interface CheckContract {
  /** The check's id as its plugin registers it: `<namespace>.<check>`. */
  check: string;
  /** The plugin(s) that register it (and declare its deny code). */
  plugins: () => GatewayPlugin[];
  /** At least one case. The first one with a failing text is also run end to end through a gateway. */
  cases: CheckCase[];
  /** Parameter objects the check must refuse, each with a message a person can act on. */
  refused?: Array<Record<string, unknown>>;
  /** The phases the check judges (default both): a denial is tested end to end in each. */
  phases?: Array<'input' | 'output'>;
}

let client: UpstreamClient | null = null;
/** One pooled client for checks that call out, allowed to reach loopback only. */
function upstream(): UpstreamClient {
  client ??= new UpstreamClient({ connections: 4, headersTimeoutMs: 10_000, bodyTimeoutMs: 10_000, outbound: { allowHosts: [...LOOPBACK_HOSTS] } });
  return client;
}

/** A check input: an input-phase chat request whose last message is `text`, or an answer with it as its text. */
export function checkInput(text: string, phase: 'input' | 'output' = 'input', over: Partial<CheckInput> = {}): CheckInput {
  const request = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: phase === 'input' ? text : 'Hi' }] };
  const response = phase === 'output' ? { object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }] } : null;
  return { phase, text, request, response, route: 'chat.completions', model: 'gpt-4o-mini', metadata: null, signal: new AbortController().signal, upstream: upstream(), ...over };
}

/**
 * The guardrail check contract: the suite the bundled checks pass, for a check of your own. It checks that
 * the plugin registers the check under its id; that every case's parameters are accepted and every
 * `refused` one is refused with a readable message; the verdict on every case's texts, in both phases; that
 * odd texts (empty, very long, non-Latin) get a verdict rather than a throw; and, through a real gateway
 * against a mock upstream, that a failing text is denied with a 446 in the gateway's error envelope (with
 * the check's own deny code, declared by its plugin) while a passing one is answered, in each phase.
 */
export function checkContract(spec: CheckContract): void {
  describe(`check contract: ${spec.check}`, () => {
    let gw: TestGateway;
    let mock: ChatMock;
    let registry: Registry<unknown> | null = null;
    const check = (): GuardrailCheck<any> => {
      const found = registry?.get(spec.check) as GuardrailCheck<any> | undefined;
      if (found === undefined) throw new Error(`no check "${spec.check}" is registered (registered: ${registry?.names().join(', ')})`);
      return found;
    };
    const parse = (parameters: unknown) => {
      const parsed = v.safeParse(check().parameters, parameters);
      if (!parsed.success) throw new Error(`parameters ${JSON.stringify(parameters)} refused: ${parsed.issues[0].message}`);
      return parsed.output;
    };

    beforeAll(async () => {
      mock = await startChatMock();
      // A probe last in the list, to read the registry the plugins under test added to.
      const probe: GatewayPlugin = { name: 'check-contract-probe', apply: (api) => void (registry = api.checks) };
      // The mock speaks OpenAI's format, so the bundled openai provider carries the requests.
      gw = await startTestGateway({ plugins: [openai(), ...spec.plugins(), probe] });
    });
    afterAll(async () => {
      await gw?.close();
      await mock?.close();
    });

    test('the plugin registers the check under its id, with a parameters schema and a run function', () => {
      const c = check();
      expect(typeof c.run).toBe('function');
      expect(c.parameters).toBeDefined();
      expect(spec.cases.length).toBeGreaterThan(0);
    });

    test('every case\'s parameters are accepted; every refused set is refused with a sentence, not a bare "Invalid …"', () => {
      for (const c of spec.cases) parse(c.parameters);
      for (const parameters of spec.refused ?? []) {
        const parsed = v.safeParse(check().parameters, parameters);
        expect(parsed.success, `parameters ${JSON.stringify(parameters)} should be refused`).toBe(false);
        expect(parsed.issues![0].message).not.toMatch(/^Invalid (type|key|length|value)/);
      }
    });

    for (const phase of spec.phases ?? (['input', 'output'] as const)) {
      test(`verdicts in the ${phase} phase: each pass text passes, each fail text fails, with a boolean verdict`, async () => {
        for (const c of spec.cases) {
          const parameters = parse(c.parameters);
          for (const text of c.pass) expect((await check().run(parameters, checkInput(text, phase))).verdict, `${JSON.stringify(text)} should pass`).toBe(true);
          for (const text of c.fail) expect((await check().run(parameters, checkInput(text, phase))).verdict, `${JSON.stringify(text)} should fail`).toBe(false);
        }
      });
    }

    test('odd texts get a verdict, not a throw: empty, 200 000 characters, non-Latin and emoji', async () => {
      const parameters = parse(spec.cases[0]!.parameters);
      for (const text of ['', 'x'.repeat(200_000), 'Привет, 世界, مرحبا', '👋🏽 ✓ \u0000 \uFFFD']) {
        const result = await check().run(parameters, checkInput(text));
        expect(typeof result.verdict).toBe('boolean');
      }
    });

    const failing = spec.cases.find((c) => c.fail.length > 0);
    for (const phase of spec.phases ?? (['input', 'output'] as const)) {
      test(`through the gateway, ${phase}: a failing text is a 446 in the error envelope with the check's code; a passing one is answered`, async () => {
        if (failing === undefined) throw new Error('the contract needs at least one case with a fail text');
        const denyCode = check().denyCode ?? 'guardrail_denied';
        const guardrail = { id: 'under-test', deny: true, [spec.check]: failing.parameters };
        const post = async (text: string) => {
          if (phase === 'output') mock.answer(text);
          return fetch(`${gw.url}/v1/chat/completions`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-test', custom_host: mock.baseURL, [`${phase}_guardrails`]: [guardrail] }),
            },
            body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: phase === 'input' ? text : 'Hi' }] }),
          });
        };
        const denied = await post(failing.fail[0]!);
        const body = (await denied.json()) as { error: { message: string; type: string; code: string } };
        expect(denied.status, JSON.stringify(body)).toBe(446);
        expect(body.error.code).toBe(denyCode);
        expect(typeof body.error.message).toBe('string');
        if (failing.pass.length > 0) {
          const passed = await post(failing.pass[0]!);
          expect(passed.status, await passed.clone().text()).toBe(200);
        }
      });
    }
  });
}
