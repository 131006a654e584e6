/** float32 little-endian bytes in base64, as OpenAI's `encoding_format: "base64"`. */
export function base64Floats(values: number[]): string {
  const bytes = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => bytes.writeFloatLE(v, i * 4));
  return bytes.toString('base64');
}
