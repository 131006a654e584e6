import { fileURLToPath } from 'node:url';
import { Application, Logger, LogLevel, ReflectionKind, TSConfigReader, type DeclarationReflection, type ProjectReflection, type Reflection } from 'typedoc';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * The generated API reference (`npm run docs:api`, TypeDoc) shows the doc comments of the SDK's
 * exports. This converts the SDK's entry points as that run does and fails on every export without
 * one: a symbol of `switchyard-gateway/sdk` or `switchyard-gateway/sdk/admin` (namespace members
 * included), and every public property, method and accessor of an exported class or interface.
 * Constructors are covered by their class's comment. Write the missing comment where the symbol is
 * declared (the file named with it).
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
const ENTRY_POINTS = ['sdk/index.ts', 'sdk/admin/index.ts'];

/** Collects TypeDoc's messages instead of printing them. */
class Collect extends Logger {
  readonly warnings: string[] = [];
  override log(message: string, level: LogLevel): void {
    super.log(message, level);
    if (level >= LogLevel.Warn) this.warnings.push(message);
  }
}

let project: ProjectReflection;
let logger: Collect;

beforeAll(async () => {
  const app = await Application.bootstrap(
    {
      entryPoints: ENTRY_POINTS.map((p) => root + p),
      tsconfig: root + 'tsconfig.json',
      excludeExternals: true,
      excludePrivate: true,
      excludeInternal: true,
      // Type errors are `npm run typecheck`'s business; skipping the check halves the run.
      skipErrorChecking: true,
      // Source locations for the messages below, without asking git for a remote.
      disableGit: true,
      sourceLinkTemplate: '{path}#L{line}',
      validation: { notExported: false, invalidLink: true, rewrittenLink: true, notDocumented: false },
    },
    // Read no typedoc.json or argv (vitest's): only the tsconfig the options name.
    [new TSConfigReader()],
  );
  logger = new Collect();
  logger.level = LogLevel.Warn;
  app.logger = logger;
  const converted = await app.convert();
  if (converted === undefined) throw new Error(`TypeDoc could not convert the SDK:\n${logger.warnings.join('\n')}`);
  project = converted;
  app.validate(project);
}, 60_000);

function documented(r: Reflection): boolean {
  if (r.hasComment()) return true;
  const d = r as DeclarationReflection;
  if (d.signatures?.some((s) => s.hasComment())) return true;
  if (d.getSignature?.hasComment() || d.setSignature?.hasComment()) return true;
  // A function-typed variable or alias (`const f: (x) => y`): its call signature may hold the comment.
  const type = d.type;
  if (type?.type === 'reflection' && type.declaration.signatures?.some((s) => s.hasComment())) return true;
  return false;
}

function where(r: Reflection): string {
  const source = (r as DeclarationReflection).sources?.[0];
  return source === undefined ? '' : ` (${source.fileName}:${source.line})`;
}

/** Every export and member without a comment, as `module.name (kind) (file:line)`. */
function undocumented(): string[] {
  const missing: string[] = [];
  const seen = new Set<Reflection>();
  const visit = (parent: DeclarationReflection | ProjectReflection, prefix: string): void => {
    for (const child of parent.children ?? []) {
      const name = prefix + child.name;
      if (child.kindOf(ReflectionKind.Module)) {
        visit(child, `${child.name}: `);
        continue;
      }
      // A re-export of a symbol exported elsewhere too: its comment is the target's.
      const target = child.kindOf(ReflectionKind.Reference) ? (child as unknown as { tryGetTargetReflectionDeep(): Reflection | undefined }).tryGetTargetReflectionDeep() : child;
      if (target === undefined) continue;
      if (!documented(target)) missing.push(`${name} (${ReflectionKind.singularString(target.kind)})${where(target)}`);
      if (seen.has(target)) continue;
      seen.add(target);
      const declaration = target as DeclarationReflection;
      if (declaration.kindOf(ReflectionKind.Namespace)) visit(declaration, `${name}.`);
      else if (declaration.kindOf(ReflectionKind.Class | ReflectionKind.Interface)) {
        for (const member of declaration.children ?? []) {
          if (member.kindOf(ReflectionKind.Constructor) || member.flags.isPrivate || member.flags.isProtected) continue;
          // Inherited from a type of the SDK's: documented (or reported) there. From elsewhere (Error's `message`): not the SDK's to document.
          if (member.inheritedFrom !== undefined) continue;
          if (!documented(member)) missing.push(`${name}.${member.name} (${ReflectionKind.singularString(member.kind)})${where(member)}`);
        }
      }
    }
  };
  visit(project, '');
  return missing.sort();
}

describe('the API reference', () => {
  it('covers every export of the SDK', () => {
    const names = new Set<string>();
    const count = (r: DeclarationReflection | ProjectReflection): void => {
      for (const c of r.children ?? []) {
        if (c.kindOf(ReflectionKind.Module)) count(c);
        else names.add(c.name);
      }
    };
    count(project);
    // A sanity check that the entry points were read: a few exports of each.
    for (const name of ['createGateway', 'GatewayError', 'SSEParser', 'anthropic', 'crudRoutes', 'IDENTITY']) expect(names).toContain(name);
  });

  it('has a doc comment on every exported symbol and every public member', () => {
    const missing = undocumented();
    expect(missing, `Undocumented in the SDK's API reference (add a /** … */ comment where each is declared):\n  ${missing.join('\n  ')}\n`).toEqual([]);
  });

  it('has comments TypeDoc reads without a warning (no broken {@link}, no unknown tag or @param)', () => {
    expect(logger.warnings, logger.warnings.join('\n')).toEqual([]);
  });
});
