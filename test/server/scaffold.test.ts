import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { pluginId, scaffold } from '../../server/scaffold/index.js';

// The package `switchyard-gateway new` writes. That its tests pass on the kit out of the box is shown end to
// end in test/examples/install.test.ts, with the gateway installed from its packed tarball.

describe('switchyard-gateway new', () => {
  test.each(['provider', 'check'] as const)('%s: every file is written with the names filled in, and the package pins the kit\'s test dependencies', (kind) => {
    const dir = join(mkdtempSync(join(tmpdir(), 'gw-new-')), 'acme-thing');
    const files = scaffold(kind, dir);
    expect(files).toContain('package.json');
    expect(files).toContain('index.js');
    expect(files.some((f) => f.startsWith('test/') && f.endsWith('.test.js'))).toBe(true);
    for (const f of files) expect(readFileSync(join(dir, f), 'utf8'), f).not.toMatch(/\{\{\w+\}\}/);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const own = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    expect(pkg.name).toBe('acme-thing');
    expect(pkg.peerDependencies).toEqual({ 'switchyard-gateway': `>=${own.version}` });
    expect(pkg.devDependencies.vitest).toBe(own.devDependencies.vitest);
    expect(pkg.devDependencies.openai).toBe(own.devDependencies.openai);
    expect(pkg.devDependencies['@anthropic-ai/sdk']).toBe(own.devDependencies['@anthropic-ai/sdk']);
    const index = readFileSync(join(dir, 'index.js'), 'utf8');
    expect(index).toContain(kind === 'provider' ? "name: 'acme_thing'" : "api.checks.add('acme_thing.maxLength'");
  });

  test('a folder with files in it, or a name npm would refuse, stops with a message', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-new-'));
    writeFileSync(join(dir, 'keep.txt'), 'x');
    expect(() => scaffold('check', dir)).toThrow(/is not empty/);
    expect(() => scaffold('check', join(dir, 'sub'), 'Not A Name')).toThrow(/not a valid npm package name/);
  });

  test('the plugin id is the package name made an identifier', () => {
    expect(pluginId('@team/my-provider')).toBe('my_provider');
    expect(pluginId('acme.checks')).toBe('acme_checks');
    expect(pluginId('9lives')).toBe('p_9lives');
  });
});
