import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * The released version before this one: the last commit of main that landed with CI passing, which operators run
 * until they roll this one out. Moved forward when a release lands (docs/operations.md, "Rolling upgrades").
 */
export const PREVIOUS_RELEASE = { version: '0.1.0', commit: '60a574d12c8b2e9b90b4d8e1a4dd33f151904bd7' } as const;

/** A checkout of an earlier version beside this one, sharing its node_modules; `remove()` takes it away. */
export interface ReleaseCheckout {
  dir: string;
  /** Its server's entry point, for `startProcess(…, { source })`. */
  main: string;
  commit: string;
  remove(): void;
}

function git(...args: string[]): string {
  const r = spawnSync('git', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout.trim();
}

/** Whether this clone holds `ref` (a shallow clone may not). */
export function hasCommit(ref: string): boolean {
  return spawnSync('git', ['cat-file', '-e', `${ref}^{commit}`], { stdio: 'ignore' }).status === 0;
}

/**
 * Checks `ref` out in a temporary directory (a detached git worktree) with this checkout's node_modules linked in,
 * run through tsx. A version whose dependencies differ from this one's needs its own `npm ci` there instead.
 */
export function checkoutRelease(ref: string): ReleaseCheckout {
  const parent = mkdtempSync(join(tmpdir(), 'release-'));
  const dir = join(parent, 'checkout');
  git('worktree', 'add', '--detach', dir, ref);
  symlinkSync(resolve('node_modules'), join(dir, 'node_modules'));
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    spawnSync('git', ['worktree', 'remove', '--force', dir]);
    if (existsSync(parent)) rmSync(parent, { recursive: true, force: true });
  };
  // However the caller ends (a failure included), no checkout is left registered behind it.
  process.once('exit', remove);
  return { dir, main: join(dir, 'server/main.ts'), commit: git('rev-parse', '--short', ref), remove };
}
