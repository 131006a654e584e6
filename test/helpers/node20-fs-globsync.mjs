// @ts-nocheck -- a plain script run in its own process by the MCP conformance tests (not imported by TypeScript code).
// node20-fs-globsync-shim.mjs
//
// Preload for running @modelcontextprotocol/conformance (0.1.16) on Node 20.
//
//   node --import /tmp/mcpconf/node20-fs-globsync-shim.mjs \
//        node_modules/@modelcontextprotocol/conformance/dist/index.js <args>
//
// Problem: dist/index.js does
//   import { existsSync, globSync, mkdtempSync, promises, readFileSync } from "fs";
// and `fs.globSync` only exists on Node >= 22, so on Node 20 the ESM link step
// fails with "The requested module 'fs' does not provide an export named 'globSync'".
//
// Fix (no files of the package are edited): register an ESM resolve/load hook
// (module.register, Node >= 20.6). Only when the importing module is the
// conformance package's dist/ file AND the specifier is "fs"/"node:fs", the
// import is redirected to a synthetic module that re-exports all of node:fs and
// adds a small globSync fallback. Every other importer still gets the real fs.
// On Node >= 22 (native fs.globSync) the hook is not registered at all.
//
// globSync is used in exactly one place in 0.1.16: the `tier-check` subcommand
// (function that scans a results dir with globSync("**/checks.json", {cwd})).
// `server`, `client` and `list` never call it; they only need the import to link.
// The fallback below still implements enough glob ("*", "**", "?", literal
// segments, {cwd}) for that call.

import * as fs from 'node:fs';

const SHIM_URL = 'mcpconf-shim:fs-with-globsync';

// ---------------------------------------------------------------------------
// Hook functions (these run in Node's loader thread).
// ---------------------------------------------------------------------------
export async function resolve(specifier, context, nextResolve) {
  if (
    (specifier === 'fs' || specifier === 'node:fs') &&
    context.parentURL &&
    /\/@modelcontextprotocol\/conformance\/dist\/[^/]+\.m?js$/.test(context.parentURL)
  ) {
    return { url: SHIM_URL, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (url === SHIM_URL) {
    return { format: 'module', shortCircuit: true, source: SHIM_SOURCE };
  }
  return nextLoad(url, context);
}

// Source of the synthetic `fs` module served to the conformance dist file.
const SHIM_SOURCE = `
import fs from 'node:fs';
import path from 'node:path';
export * from 'node:fs';
export default fs;

function globToRegExp(glob) {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        // "**/" matches zero or more directories; bare "**" matches anything
        if (glob[i + 2] === '/') { re += '(?:.*/)?'; i += 2; } else { re += '.*'; i += 1; }
      } else re += '[^/]*';
    } else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^$()|[\\]{}\\\\]/g, '\\\\$&');
  }
  return new RegExp('^' + re + '$');
}

export const globSync = typeof fs.globSync === 'function'
  ? fs.globSync
  : function globSync(pattern, options = {}) {
      const cwd = options.cwd ? String(options.cwd) : process.cwd();
      const patterns = Array.isArray(pattern) ? pattern : [pattern];
      const regexes = patterns.map((p) => globToRegExp(String(p).replace(/\\\\/g, '/')));
      const out = [];
      const walk = (rel) => {
        let entries;
        try { entries = fs.readdirSync(path.join(cwd, rel), { withFileTypes: true }); }
        catch { return; }
        for (const ent of entries) {
          const r = rel ? rel + '/' + ent.name : ent.name;
          if (regexes.some((rx) => rx.test(r))) out.push(r.split('/').join(path.sep));
          if (ent.isDirectory()) walk(r);
        }
      };
      walk('');
      return out;
    };
`;

// ---------------------------------------------------------------------------
// Registration (runs in the main thread when used via --import).
// ---------------------------------------------------------------------------
if (typeof fs.globSync !== 'function') {
  const { isMainThread } = await import('node:worker_threads');
  const mod = await import('node:module');
  // Only register from the main thread; the hooks thread imports this same
  // file just to get resolve/load and must not register again.
  if (isMainThread && typeof mod.register === 'function') {
    mod.register(import.meta.url);
  }
}
