import { randomBytes, randomUUID } from 'node:crypto';

/** A new id for a stored resource (a random UUID). */
export function newId(): string {
  return randomUUID();
}

/** A random lower-case suffix for generated slugs and config ids. */
export function randomSlug(length = 10): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = randomBytes(length);
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[bytes[i]! % alphabet.length];
  return out;
}
