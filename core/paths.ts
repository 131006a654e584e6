/** Dotted path of child `index` under `parent` (the root is ''): `1`, `0.1`, … */
export function childPath(parent: string, index: number): string {
  return parent === '' ? String(index) : `${parent}.${index}`;
}
