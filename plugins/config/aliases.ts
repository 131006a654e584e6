/**
 * The spec writes cloud and vendor credential fields with neutral stand-in
 * prefixes (`cloudA_`, `cloudB_`, `cloudC_`, `vendorX_`). Clients that copy the
 * spec literally send those spellings, while the providers and every other part
 * of the gateway use the real names. The plugin owning a field declares its
 * stand-ins (`TargetField.aliases`); accepting both and normalising here keeps
 * the rest of the code on one spelling. Only config levels (the top-level
 * object and every item of `targets`) are renamed; nested objects such as
 * `override_params` are left as sent.
 */

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
export function renameAliases(input: Record<string, unknown>, aliases: ReadonlyMap<string, string>): { value: Record<string, unknown>; conflicts: AliasConflict[] } {
  const conflicts: AliasConflict[] = [];
  let renamed = false;
  const entries = Object.entries(input).map(([key, value]): [string, unknown] => {
    const real = aliases.get(key);
    if (real === undefined) return [key, value];
    if (Object.hasOwn(input, real)) conflicts.push({ alias: key, real });
    renamed = true;
    return [real, value];
  });
  return { value: renamed ? Object.fromEntries(entries) : input, conflicts };
}
