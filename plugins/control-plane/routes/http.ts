import type { RequestContext } from '../../../sdk/index.js';
import { workspaceFor as workspaceOf, type AdminRoute as KitRoute } from '../../../sdk/admin/index.js';
import type { ControlPlane } from '../service.js';

/**
 * The control plane's admin routes are the SDK kit's (sdk/admin), with the
 * control plane itself as their service.
 */
export * from '../../../sdk/admin/index.js';

export type AdminRoute = KitRoute<ControlPlane>;

/** {@link workspaceOf} with the control plane as the identity. */
export function workspaceFor(ctx: RequestContext, cp: ControlPlane, named: string | null | undefined, param = 'workspace_id'): Promise<string> {
  return workspaceOf(ctx, cp, named, param);
}
