import * as v from 'valibot';

/**
 * A check's parameters object: these fields and no others. A missing required
 * field, an unknown field (a typo) or a non-object is refused with a message
 * naming the field and the known ones.
 */
export function parameters<const E extends v.ObjectEntries>(entries: E) {
  const known = Object.keys(entries).join(', ');
  return v.strictObject(entries, (issue) => {
    if (issue.expected === 'Object') return `parameters must be an object with: ${known}`;
    if (issue.expected === 'never') return `unknown parameter ${issue.received} (known: ${known})`;
    return `${issue.expected?.replace(/^"|"$/g, '')} is required`;
  });
}
