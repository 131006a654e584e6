import { contentText, type GatewayError, type GuardrailLists, type GuardrailRunner, type RequestContext } from '../../sdk/index.js';

type Json = Record<string, unknown>;

/** New characters of an answer's transcript between two output checks while it streams. */
const CHECK_EVERY_CHARS = 120;

/** What a session's guard does to the session when a hook denies. */
export interface GuardHost {
  /** Stops the provider's response (`response.cancel`). */
  cancelResponse(): void;
  /** Takes a user's item out of the conversation (`conversation.item.delete`). */
  deleteItem(itemId: string): void;
  /** Tells the client, as the Realtime API's own `error` event. */
  tell(error: GatewayError): void;
}

/** The events that carry an answer's words (GA names and the beta's), as they stream and when they end. */
export const TEXT_DELTAS: ReadonlySet<string> = new Set(['response.output_audio_transcript.delta', 'response.output_text.delta', 'response.audio_transcript.delta', 'response.text.delta']);
export const TEXT_DONES: ReadonlySet<string> = new Set(['response.output_audio_transcript.done', 'response.output_text.done', 'response.audio_transcript.done', 'response.text.done']);

const has = (list: readonly unknown[] | undefined) => Array.isArray(list) && list.length > 0;

/**
 * The config's guardrails on a realtime session (docs/realtime.md#guardrails), through the guardrails plugin's
 * runner: input hooks on what the user says (a text item before it goes up; an audio turn's transcript when the
 * provider sends it, after which a denied turn is deleted and its response cancelled), output hooks on the answer's
 * transcript or text as it streams (every 120 characters and at its end). A denial ends that response, not the
 * session: the rest of its events are not relayed, and the client gets an `error` event naming the guardrail.
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
  /** Per response id: its text so far, how much of it was checked, whether it was denied. */
  readonly #answers = new Map<string, { text: string; checked: number; denied: boolean; running: Promise<void> }>();

  constructor(ctx: RequestContext, runner: GuardrailRunner, lists: GuardrailLists, host: GuardHost) {
    this.#ctx = ctx;
    this.#runner = runner;
    this.#lists = lists;
    this.#host = host;
    this.input = has(lists.before_request_hooks) || has(lists.input_guardrails);
    this.output = has(lists.after_request_hooks) || has(lists.output_guardrails);
  }

  /** A client event, before it goes up: the error to answer instead when it is a user's text a hook denies. */
  async clientEvent(event: Json | null): Promise<GatewayError | null> {
    if (!this.input || event === null || event.type !== 'conversation.item.create') return null;
    const item = event.item as Json | undefined;
    if (item?.role !== 'user') return null;
    const text = contentText(item.content);
    return text === '' ? null : this.#run('input', text, event);
  }

  /** An audio turn's transcript (`conversation.item.input_audio_transcription.completed`): checked as the session goes on. */
  userTranscript(event: Json): void {
    if (!this.input || typeof event.transcript !== 'string' || event.transcript === '') return;
    void this.#run('input', event.transcript, event).then((error) => {
      if (error === null) return;
      if (typeof event.item_id === 'string') this.#host.deleteItem(event.item_id);
      this.#host.cancelResponse();
      this.#host.tell(error);
    });
  }

  /**
   * A provider event of a response: whether to relay it (a promise while a check it waits for runs). Transcript
   * and text deltas are checked as they add up, without waiting; the `.done` event of the answer's words waits for
   * the check of the whole text, so a denied answer never arrives whole. After a denial, the response's events stay
   * here but its `response.done` (which says it was cancelled).
   */
  providerEvent(type: string, id: string | null, event: Json | null): boolean | Promise<boolean> {
    if (!this.output || id === null) return true;
    let answer = this.#answers.get(id);
    if (type === 'response.done') {
      this.#answers.delete(id);
      return true;
    }
    if (answer === undefined) this.#answers.set(id, (answer = { text: '', checked: 0, denied: false, running: Promise.resolve() }));
    if (answer.denied) return false;
    if (event === null) return true;
    const delta = TEXT_DELTAS.has(type);
    const done = TEXT_DONES.has(type);
    if (delta && typeof event.delta === 'string') answer.text += event.delta;
    const whole = done ? (typeof event.transcript === 'string' ? event.transcript : typeof event.text === 'string' ? event.text : answer.text) : answer.text;
    if ((delta && whole.length - answer.checked >= CHECK_EVERY_CHARS) || (done && whole.length > answer.checked)) {
      const a = answer;
      a.checked = whole.length;
      a.running = a.running.then(async () => {
        if (a.denied) return;
        const error = await this.#run('output', whole, event);
        if (error === null || a.denied) return;
        a.denied = true;
        this.#host.cancelResponse();
        this.#host.tell(error);
      });
      if (done) return a.running.then(() => !a.denied);
    }
    return true;
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
