import { contentText, type GatewayError, type GuardrailLists, type GuardrailRunner, type RequestContext } from '../../sdk/index.js';

type Json = Record<string, unknown>;

/** New characters of an answer's transcript between two output checks while it streams. */
const CHECK_EVERY_CHARS = 120;

/** What a session's guard does to the session when a hook denies. */
export interface GuardHost {
  /** Stops a response of the provider's (`response.cancel` naming it). */
  cancelResponse(responseId: string | null): void;
  /** Takes a user's item out of the conversation (`conversation.item.delete`). */
  deleteItem(itemId: string): void;
  /** Tells the client, as the Realtime API's own `error` event. */
  tell(error: GatewayError): void;
}

/** The events that carry an answer's words (GA names and the beta's), as they stream and when they end. */
export const TEXT_DELTAS: ReadonlySet<string> = new Set(['response.output_audio_transcript.delta', 'response.output_text.delta', 'response.audio_transcript.delta', 'response.text.delta']);
export const TEXT_DONES: ReadonlySet<string> = new Set(['response.output_audio_transcript.done', 'response.output_text.done', 'response.audio_transcript.done', 'response.text.done']);
/** Provider events an output guard reads whole: the words, and what ties an item to its response or carries its content. */
export const GUARD_READS: ReadonlySet<string> = new Set([
  ...TEXT_DELTAS,
  ...TEXT_DONES,
  'response.output_item.added',
  'response.output_item.done',
  'conversation.item.added',
  'conversation.item.created',
  'conversation.item.done',
  'conversation.item.retrieved',
  'response.done',
]);
/** Denied responses remembered (their late events are held back): the most recent ones. */
const MAX_DENIED = 256;

const has = (list: readonly unknown[] | undefined) => Array.isArray(list) && list.length > 0;
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/**
 * The config's guardrails on a realtime session (docs/realtime.md#guardrails), through the guardrails plugin's
 * runner: input hooks on what the user says (a text item, or a response's inline input, before it goes up; an audio
 * turn's transcript when the provider sends it, after which the turn is deleted and its response cancelled), output
 * hooks on the answer's transcript or text as it streams (every 120 characters and at its end). A denial ends that
 * response, not the session: its later events are not relayed, its `response.done` goes without its output, and the
 * client gets an `error` event naming the guardrail.
 */
export class SessionGuard {
  readonly input: boolean;
  readonly output: boolean;
  checked = 0;
  denied = 0;
  readonly #ctx: RequestContext;
  readonly #runner: GuardrailRunner;
  readonly #lists: GuardrailLists;
  readonly #host: GuardHost;
  /** Per response id: its words so far, how much of them was checked, and the checks in order. */
  readonly #answers = new Map<string, { text: string; checked: number; running: Promise<void> }>();
  /** Which response each output item belongs to (conversation events name the item only). */
  readonly #itemResponse = new Map<string, string>();
  readonly #deniedResponses = new Set<string>();

  constructor(ctx: RequestContext, runner: GuardrailRunner, lists: GuardrailLists, host: GuardHost) {
    this.#ctx = ctx;
    this.#runner = runner;
    this.#lists = lists;
    this.#host = host;
    this.input = has(lists.before_request_hooks) || has(lists.input_guardrails);
    this.output = has(lists.after_request_hooks) || has(lists.output_guardrails);
  }

  /**
   * A client event, before it goes up: the error to answer instead when a hook denies the user's words it carries (a
   * user message item, or the input items of a `response.create`).
   */
  async clientEvent(event: Json | null): Promise<GatewayError | null> {
    if (!this.input || event === null) return null;
    const items = event.type === 'conversation.item.create' ? [event.item] : event.type === 'response.create' ? ((event.response as Json | undefined)?.input ?? []) : [];
    if (!Array.isArray(items)) return null;
    const words = items
      .filter((item): item is Json => item !== null && typeof item === 'object' && (item as Json).role === 'user')
      .map((item) => contentText(item.content))
      .filter((t) => t !== '')
      .join('\n');
    return words === '' ? null : this.#run('input', words, event);
  }

  /** An audio turn's transcript (`conversation.item.input_audio_transcription.completed`): checked as the session goes on. */
  userTranscript(event: Json): void {
    if (!this.input || typeof event.transcript !== 'string' || event.transcript === '') return;
    void this.#run('input', event.transcript, event).then((error) => {
      if (error === null) return;
      if (typeof event.item_id === 'string') this.#host.deleteItem(event.item_id);
      this.#host.cancelResponse(null);
      this.#host.tell(error);
    });
  }

  /**
   * A provider event, as the client is to get it: its text, a rewritten text (the `response.done` of a denied
   * response, without its output), or null to hold it back; a promise while a check it waits for runs. The words'
   * deltas are checked as they add up, without waiting; their `.done` event waits for the check of the whole text.
   */
  providerEvent(type: string, responseId: string | null, event: Json | null, text: string): string | null | Promise<string | null> {
    if (!this.output) return text;
    const item = (event?.item as Json | undefined) ?? null;
    const itemId = str(item?.id) ?? str(event?.item_id);
    let id = responseId;
    if (type === 'response.output_item.added' && id !== null && itemId !== null) this.#itemResponse.set(itemId, id);
    if (id === null && itemId !== null) id = this.#itemResponse.get(itemId) ?? null;
    if (id === null) return text;
    if (type === 'response.done') {
      this.#answers.delete(id);
      for (const [i, r] of this.#itemResponse) if (r === id) this.#itemResponse.delete(i);
      if (!this.#deniedResponses.has(id) || event === null) return text;
      // The answer's words stay here: the response is said to have been cancelled, without its output.
      const response = { ...(event.response as Json), status: 'cancelled', status_details: { type: 'cancelled', reason: 'guardrail' }, output: [] };
      return JSON.stringify({ ...event, response });
    }
    if (this.#deniedResponses.has(id)) return null;
    if (event === null || (!TEXT_DELTAS.has(type) && !TEXT_DONES.has(type))) return text;
    let answer = this.#answers.get(id);
    if (answer === undefined) this.#answers.set(id, (answer = { text: '', checked: 0, running: Promise.resolve() }));
    const done = TEXT_DONES.has(type);
    if (!done && typeof event.delta === 'string') answer.text += event.delta;
    const whole = done ? (str(event.transcript) ?? str(event.text) ?? answer.text) : answer.text;
    if ((!done && whole.length - answer.checked >= CHECK_EVERY_CHARS) || (done && whole.length > answer.checked)) {
      const a = answer;
      const denied = this.#deniedResponses;
      a.checked = whole.length;
      a.running = a.running.then(async () => {
        if (denied.has(id)) return;
        const error = await this.#run('output', whole, event);
        if (error === null || denied.has(id)) return;
        denied.add(id);
        if (denied.size > MAX_DENIED) denied.delete(denied.values().next().value!);
        this.#host.cancelResponse(id);
        this.#host.tell(error);
      });
      if (done) return a.running.then(() => (denied.has(id) ? null : text));
    }
    return text;
  }

  async #run(phase: 'input' | 'output', text: string, event: Json): Promise<GatewayError | null> {
    this.checked++;
    try {
      const verdict = await this.#runner.run(this.#ctx, this.#lists, phase, { text, request: phase === 'input' ? event : {}, response: phase === 'output' ? event : null, route: 'realtime' });
      if (!verdict.denied) return null;
      this.denied++;
      return verdict.error;
    } catch (err) {
      // A hook that cannot run is a failed check (as on a provider request), which a deny hook turns into a denial.
      this.denied++;
      return err as GatewayError;
    }
  }
}
