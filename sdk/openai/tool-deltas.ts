/**
 * The tool-call pieces of a chat completion chunk's `delta`, in the order a
 * translated stream must emit them: a call's start (its id, or one made from
 * `idPrefix` and its index; its name) when the chunk names one, then its
 * argument text. Each callback returns the events it wrote; the joined text
 * is returned. Shared by every front door that translates a chat stream.
 */
export function toolCallDeltas(
  delta: Record<string, unknown>,
  idPrefix: string,
  start: (index: number, id: string, name: string) => string,
  args: (index: number, text: string) => string,
): string {
  if (!Array.isArray(delta.tool_calls)) return '';
  let out = '';
  for (const t of delta.tool_calls as unknown[]) {
    if (t === null || typeof t !== 'object') continue;
    const call = t as Record<string, unknown>;
    const key = typeof call.index === 'number' ? call.index : 0;
    const fn = call.function !== null && typeof call.function === 'object' ? (call.function as Record<string, unknown>) : {};
    if (typeof call.id === 'string' || typeof fn.name === 'string') out += start(key, String(call.id ?? `${idPrefix}${key}`), String(fn.name ?? ''));
    if (typeof fn.arguments === 'string') out += args(key, fn.arguments);
  }
  return out;
}
