import { GatewayError, type ConfigSource, type PartialRelease, type PromptLookup, type PromptSelector, type RequestContext } from '../../../sdk/index.js';
import { TtlCache, type Identity } from '../../../sdk/admin/index.js';
import { checkTemplate } from '../engine.js';
import { MAX_INCLUDED_PARTIALS, toPartialRelease, toPromptRelease, versionNumber } from './releases.js';
import { PromptRepository } from './repository.js';

const NO_PROMPT: PromptLookup = Object.freeze({ missing: 'prompt' as const });

const MAX_CACHED = 10_000;

/**
 * Stored prompts and partials: their tables, on the store identity shares,
 * and what the request path reads of them, through a short TTL cache that
 * every admin write clears (`identity.invalidate()`), so this instance sees a
 * write at once and other instances within `cacheTtlMs`.
 */
export class PromptStore {
  readonly repo: PromptRepository;
  readonly #prompts: TtlCache<PromptLookup>;
  readonly #partials: TtlCache<PartialRelease | null>;

  /**
   * @param identity the control plane's workspaces and store
   * @param configs the saved configs a prompt version may send its requests through, when a plugin offers them
   */
  constructor(
    readonly identity: Identity,
    private readonly configs: () => ConfigSource | undefined,
  ) {
    this.repo = new PromptRepository(() => identity.sql());
    this.#prompts = new TtlCache(identity.cacheTtlMs, MAX_CACHED, () => identity.now());
    this.#partials = new TtlCache(identity.cacheTtlMs, MAX_CACHED, () => identity.now());
    identity.onInvalidate(() => {
      this.#prompts.clear();
      this.#partials.clear();
    });
  }

  now(): number {
    return this.identity.now();
  }

  /** After each write: every cached lookup clears, identity's and every feature's. */
  invalidate(): void {
    this.identity.invalidate();
  }

  /**
   * The version `selector` names of the prompt `ref` (id or slug) in the workspace a request acts in
   * (see {@link Identity.requestWorkspace}), with every partial it includes, through the cache: the same
   * frozen object until it expires or an admin write clears it.
   */
  async release(ctx: RequestContext, ref: string, selector: PromptSelector): Promise<PromptLookup> {
    const workspaceId = await this.identity.requestWorkspace(ctx);
    if (workspaceId === null) return NO_PROMPT;
    return this.#prompts.get(`${workspaceId}\n${ref}\n${selector}`, () => this.#load(workspaceId, ref, selector));
  }

  async #load(workspaceId: string, ref: string, selector: PromptSelector): Promise<PromptLookup> {
    const row = await this.repo.prompts.find(workspaceId, ref);
    if (row === undefined || row.status !== 'active') return NO_PROMPT;
    const number = versionNumber(row, selector);
    const version = number > row.latest_version ? undefined : await this.repo.prompts.version(row.id, number);
    if (version === undefined) return Object.freeze({ missing: 'version' as const, latestVersion: row.latest_version });
    return toPromptRelease(row, version, await this.includedPartials(workspaceId, JSON.parse(version.partials) as string[]));
  }

  /**
   * Every partial that `names` include, directly or through one another, by name: the published
   * version of the workspace's active partial of that name, or null when there is none. At most
   * {@link MAX_INCLUDED_PARTIALS}; a name beyond them is left out (saving refuses such a set).
   */
  async includedPartials(workspaceId: string, names: readonly string[]): Promise<Map<string, PartialRelease | null>> {
    const found = new Map<string, PartialRelease | null>();
    const queue = [...names];
    while (queue.length > 0 && found.size < MAX_INCLUDED_PARTIALS) {
      const name = queue.shift()!;
      if (found.has(name)) continue;
      const partial = await this.#partials.get(`${workspaceId}\n${name}`, async () => {
        const row = await this.repo.partials.active(workspaceId, name);
        const version = row === undefined ? undefined : await this.repo.partials.version(row.id, row.published_version);
        return row === undefined || version === undefined ? null : toPartialRelease(row, version);
      });
      found.set(name, partial);
      if (partial !== null) queue.push(...partial.partials);
    }
    return found;
  }

  // Checking what is saved

  /** Parses each text with the template language: a syntax error is a 400 at its path; returns the partials the texts include. */
  includesOf(texts: ReadonlyArray<{ text: string; param: string }>): string[] {
    const names = new Set<string>();
    for (const { text, param } of texts) {
      const checked = checkTemplate(text);
      if (checked.error !== null) throw new GatewayError('invalid_request', `Invalid request body: '${param}' is not a valid template: ${checked.error}`, { param });
      for (const name of checked.partials) names.add(name);
    }
    return [...names];
  }

  /**
   * Every partial `includes` names must be an active partial of the workspace, and all of them together
   * at most {@link MAX_INCLUDED_PARTIALS}. `self` (a partial being saved) must not be among them, directly
   * or through the others: a partial that includes itself never ends.
   */
  async checkIncludes(workspaceId: string, includes: readonly string[], param: string, self: string | null = null): Promise<void> {
    if (self !== null && includes.includes(self)) throw new GatewayError('invalid_request', `Invalid request body: '${param}' includes the partial "${self}" itself.`, { param });
    const found = await this.includedPartials(workspaceId, includes);
    for (const [name, partial] of found) {
      if (partial === null) {
        throw new GatewayError('invalid_request', `Invalid request body: '${param}' includes the partial "${name.slice(0, 64)}", which this workspace does not have (create it with POST /v1/prompts/partials).`, { param });
      }
    }
    if (self !== null && found.has(self)) throw new GatewayError('invalid_request', `Invalid request body: '${param}' includes the partial "${self}" again through the partials it includes.`, { param });
    if (found.size >= MAX_INCLUDED_PARTIALS) throw new GatewayError('invalid_request', `Invalid request body: '${param}' includes more than ${MAX_INCLUDED_PARTIALS - 1} partials in all.`, { param });
  }

  /** Whether the workspace has an active saved config of this id or slug: saved configs are the config plugin's (`CONFIG_SOURCE`); without it, a workspace has none. */
  async hasConfig(workspaceId: string, ref: string): Promise<boolean> {
    return (await this.configs()?.exists?.(workspaceId, ref)) === true;
  }
}
