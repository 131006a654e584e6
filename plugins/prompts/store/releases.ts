import type { PartialRelease, PromptRelease, PromptSelection, PromptSelector, PromptVariable } from '../../../sdk/index.js';
import type { PartialRow, PartialVersionRow, PromptRow, PromptVersionRow } from './repository.js';

/** Most partials one prompt may include, directly or through one another. */
export const MAX_INCLUDED_PARTIALS = 64;

/** A prompt version as stored in `cp_prompt_versions.body`. */
export interface StoredPromptVersion extends PromptSelection {
  template: Record<string, unknown>;
  variables: Record<string, PromptVariable> | null;
  description: string | null;
}

/** Freezes a JSON value at every depth: a release is shared by every request while it is cached. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}

/** The selection of a stored version: the one field of the three it set. */
export function selectionOf(body: PromptSelection): PromptSelection {
  if (body.provider !== undefined) return { provider: body.provider };
  if (body.virtual_key !== undefined) return { virtual_key: body.virtual_key };
  return { config: body.config! };
}

/** The version number `selector` names of a prompt or partial (which may be past its latest). */
export function versionNumber(row: { latest_version: number; published_version: number }, selector: PromptSelector): number {
  return selector === 'published' ? row.published_version : selector === 'latest' ? row.latest_version : selector;
}

/** A stored version as the request path uses it (parsed once per cache fill). */
export function toPromptRelease(row: PromptRow, version: PromptVersionRow, partials: ReadonlyMap<string, PartialRelease | null>): PromptRelease {
  const body = JSON.parse(version.body) as StoredPromptVersion;
  return deepFreeze({
    id: row.id,
    slug: row.slug,
    name: row.name,
    workspaceId: row.workspace_id,
    version: version.version,
    latestVersion: row.latest_version,
    publishedVersion: row.published_version,
    template: body.template,
    selection: selectionOf(body),
    variables: body.variables ?? {},
    partials,
  });
}

export function toPartialRelease(row: PartialRow, version: PartialVersionRow): PartialRelease {
  return deepFreeze({ id: row.id, name: row.name, version: version.version, content: version.content, partials: JSON.parse(version.partials) as string[] });
}
