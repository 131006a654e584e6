import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';

/*
 * docs/plugins.md shows real code, marked so it cannot drift from the files it comes from. A marker
 * line right before a fenced block says how the block relates to its file:
 * - `<!-- include: path -->`: the block is the whole file, byte for byte;
 * - `<!-- include-part: path -->`: the blocks so marked, in the page's order, are the whole file,
 *   cut at blank lines (the blank line between two parts is the one the page leaves out);
 * - `<!-- excerpt: path -->`: the block is a verbatim piece of the file.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOC = readFileSync(`${ROOT}docs/plugins.md`, 'utf8');

interface Marked {
  kind: 'include' | 'include-part' | 'excerpt';
  path: string;
  code: string;
}

function marked(doc: string): Marked[] {
  return Array.from(doc.matchAll(/<!-- (include|include-part|excerpt): (\S+) -->\n```\w*\n([\s\S]*?)^```$/gm), (m) => ({
    kind: m[1] as Marked['kind'],
    path: m[2]!,
    code: m[3]!,
  }));
}

const file = (path: string) => readFileSync(`${ROOT}${path}`, 'utf8');
const blocks = marked(DOC);

describe('docs/plugins.md shows the example files as they are', () => {
  test('the walkthrough of the Quill provider shows its package.json and its whole index.js, and the kit on its tests', () => {
    expect(blocks.filter((b) => b.kind === 'include').map((b) => b.path)).toContain('examples/quill-provider/package.json');
    expect(blocks.filter((b) => b.kind === 'include-part' && b.path === 'examples/quill-provider/index.js').length).toBeGreaterThan(1);
    expect(blocks.filter((b) => b.kind === 'excerpt').map((b) => b.path)).toEqual(expect.arrayContaining(['examples/quill-provider/test/quill-mock.js', 'examples/quill-provider/test/quill.test.js']));
  });

  test('every marked path exists', () => {
    for (const b of blocks) expect(existsSync(`${ROOT}${b.path}`), b.path).toBe(true);
  });

  test.each(blocks.filter((b) => b.kind === 'include').map((b) => [b.path, b.code]))('include %s: the whole file', (path, code) => {
    expect(code).toBe(file(path));
  });

  const parted = [...new Set(blocks.filter((b) => b.kind === 'include-part').map((b) => b.path))];
  test.each(parted)('include-part %s: the parts, in order, are the whole file', (path) => {
    const parts = blocks.filter((b) => b.kind === 'include-part' && b.path === path).map((b) => b.code);
    // Compared part by part first, so a failure names the part that drifted.
    const text = file(path);
    let at = 0;
    for (const [i, part] of parts.entries()) {
      expect(text.slice(at, at + part.length), `part ${i + 1} of ${path}`).toBe(part);
      at += part.length + 1;
    }
    expect(parts.join('\n')).toBe(text);
  });

  test.each(blocks.filter((b) => b.kind === 'excerpt').map((b) => [b.path, b.code]))('excerpt %s: a verbatim piece of the file', (path, code) => {
    expect(file(path)).toContain(code);
  });
});
