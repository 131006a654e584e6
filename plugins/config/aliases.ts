/**
 * The spec writes cloud and vendor credential fields with neutral stand-in
 * prefixes (`cloudA_`, `cloudB_`, `cloudC_`, `vendorX_`). Clients that copy the
 * spec literally send those spellings, while the providers and every other part
 * of the gateway use the real names. Accepting both and normalising here keeps
 * the rest of the code on one spelling.
 */

/**
 * Stand-in spelling → real config property name. Only config levels (the
 * top-level object and every item of `targets`) are renamed; nested objects
 * such as `override_params` are left as sent.
 */
export const CONFIG_ALIASES: Readonly<Record<string, string>> = Object.freeze({
  cloudA_access_key_id: 'aws_access_key_id',
  cloudA_secret_access_key: 'aws_secret_access_key',
  cloudA_region: 'aws_region',
  cloudA_session_token: 'aws_session_token',
  cloudB_project_id: 'vertex_project_id',
  cloudB_region: 'vertex_region',
  cloudB_service_account_json: 'vertex_service_account_json',
  cloudC_region: 'azure_region',
  cloudC_deployment_name: 'azure_deployment_name',
  cloudC_deployment_type: 'azure_deployment_type',
  cloudC_endpoint_name: 'azure_endpoint_name',
  cloudC_api_version: 'azure_api_version',
  cloudC_entra_scope: 'azure_entra_scope',
  vendorX_organization: 'openai_organization',
  vendorX_project: 'openai_project',
});

/** An alias sent together with the real name it stands for; which value wins would be a guess, so it is refused. */
export interface AliasConflict {
  alias: string;
  real: string;
}

/**
 * Renames alias keys of one config level to their real names, keeping key
 * order. Returns a new object; the input is not mutated. `Object.fromEntries`
 * is used so that a `__proto__` key from JSON stays an ordinary (and later
 * rejected) property instead of replacing the prototype.
 */
export function renameAliases(input: Record<string, unknown>): { value: Record<string, unknown>; conflicts: AliasConflict[] } {
  const conflicts: AliasConflict[] = [];
  let renamed = false;
  const entries = Object.entries(input).map(([key, value]): [string, unknown] => {
    const real = Object.hasOwn(CONFIG_ALIASES, key) ? CONFIG_ALIASES[key] : undefined;
    if (real === undefined) return [key, value];
    if (Object.hasOwn(input, real)) conflicts.push({ alias: key, real });
    renamed = true;
    return [real, value];
  });
  return { value: renamed ? Object.fromEntries(entries) : input, conflicts };
}
