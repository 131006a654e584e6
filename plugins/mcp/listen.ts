import { isObject, type JsonRpcId } from '../../sdk/index.js';
import { META } from './revision.js';

/*
 * 2026-07-28's subscriptions (`subscriptions/listen`) for a server of the session revisions: which notifications a
 * client asks for, which the server can give, and each as the subscription sends it.
 */

/** What a subscription asks to be told. */
export interface ListenFilter {
  toolsListChanged?: boolean;
  promptsListChanged?: boolean;
  resourcesListChanged?: boolean;
  resourceSubscriptions?: string[];
}

/** The filter of a `subscriptions/listen` request, or null when it has none (or a malformed one). */
export function listenFilter(params: Record<string, unknown>): ListenFilter | null {
  const n = params.notifications;
  if (!isObject(n)) return null;
  const filter: ListenFilter = {};
  for (const key of ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged'] as const) {
    if (n[key] === undefined) continue;
    if (typeof n[key] !== 'boolean') return null;
    filter[key] = n[key];
  }
  if (n.resourceSubscriptions !== undefined) {
    if (!Array.isArray(n.resourceSubscriptions) || !n.resourceSubscriptions.every((u) => typeof u === 'string')) return null;
    filter.resourceSubscriptions = n.resourceSubscriptions.slice(0, 256) as string[];
  }
  return filter;
}

/** What of the filter the server can honour: the list changes it announces, subscriptions when it takes them. */
export function honoredFilter(filter: ListenFilter, capabilities: Record<string, unknown>): ListenFilter {
  const flag = (name: string, key: string) => isObject(capabilities[name]) && (capabilities[name] as Record<string, unknown>)[key] === true;
  const honored: ListenFilter = {};
  if (filter.toolsListChanged === true && flag('tools', 'listChanged')) honored.toolsListChanged = true;
  if (filter.promptsListChanged === true && flag('prompts', 'listChanged')) honored.promptsListChanged = true;
  if (filter.resourcesListChanged === true && flag('resources', 'listChanged')) honored.resourcesListChanged = true;
  if (filter.resourceSubscriptions !== undefined && filter.resourceSubscriptions.length > 0 && flag('resources', 'subscribe')) honored.resourceSubscriptions = filter.resourceSubscriptions;
  return honored;
}

/** Which filter entry lets a notification through (null: none does). */
function wanted(method: string, params: unknown, honored: ListenFilter): boolean {
  if (method === 'notifications/tools/list_changed') return honored.toolsListChanged === true;
  if (method === 'notifications/prompts/list_changed') return honored.promptsListChanged === true;
  if (method === 'notifications/resources/list_changed') return honored.resourcesListChanged === true;
  if (method === 'notifications/resources/updated') return isObject(params) && typeof params.uri === 'string' && (honored.resourceSubscriptions ?? []).includes(params.uri);
  return false;
}

/**
 * A notification as the subscription sends it (its `_meta` names the subscription: the listen request's id), or
 * null when the filter does not let it through (`honored` omitted: the subscription's own acknowledgement).
 */
export function listenNotification(method: string, params: unknown, subscription: JsonRpcId, honored?: ListenFilter): Record<string, unknown> | null {
  if (honored !== undefined && !wanted(method, params, honored)) return null;
  const p = isObject(params) ? { ...params } : {};
  p._meta = { ...(isObject(p._meta) ? p._meta : {}), [META.subscriptionId]: subscription };
  return { jsonrpc: '2.0', method, params: p };
}
