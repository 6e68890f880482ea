/**
 * The public API report (issue 42 §3): every name the package exports from its root and its subpaths, each with its
 * signature as the TypeScript compiler sees it, in one committed file (`docs/api-report.md`), so a change to the public
 * face shows in review. `npx tsx scripts/api-report.ts` rewrites the file; `--check` exits 1 when it is out of date
 * (test/unit/api-report.test.ts runs the same check in `npm test`).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const ROOT = join(__dirname, '..');
export const REPORT = join(ROOT, 'docs', 'api-report.md');
/** The package's entry points (package.json `exports`), by subpath. */
const ENTRIES: [string, string][] = [
  ['infinity-temporal', 'src/index.ts'],
  ['infinity-temporal/rap', 'src/rap/index.ts'],
  ['infinity-temporal/testing', 'src/testing.ts'],
];

const FLAGS =
  ts.TypeFormatFlags.NoTruncation |
  ts.TypeFormatFlags.WriteArrowStyleSignature |
  ts.TypeFormatFlags.UseSingleQuotesForStringLiteralType;

/** One line per member of an interface or class: `name?: type`, in declaration order, public ones only. */
function members(checker: ts.TypeChecker, type: ts.Type, at: ts.Node): string[] {
  const lines: string[] = [];
  for (const p of checker.getPropertiesOfType(type)) {
    const decl = p.valueDeclaration ?? p.declarations?.[0];
    const mods = decl && ts.canHaveModifiers(decl) ? (ts.getModifiers(decl) ?? []) : [];
    if (mods.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword))
      continue;
    if (p.name.startsWith('#')) continue;
    const optional = p.flags & ts.SymbolFlags.Optional ? '?' : '';
    const readonly = mods.some((m) => m.kind === ts.SyntaxKind.ReadonlyKeyword) ? 'readonly ' : '';
    lines.push(
      `  ${readonly}${p.name}${optional}: ${checker.typeToString(checker.getTypeOfSymbolAtLocation(p, at), at, FLAGS)}`,
    );
  }
  return lines;
}

function describe(checker: ts.TypeChecker, exported: ts.Symbol, at: ts.Node): string[] {
  const s = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
  const name = exported.name;
  const out: string[] = [];
  if (s.flags & ts.SymbolFlags.Class) {
    const ctorType = checker.getTypeOfSymbolAtLocation(s, at);
    const ctors = ctorType.getConstructSignatures().map((c) => checker.signatureToString(c, at, FLAGS));
    out.push(`class ${name}`, ...ctors.map((c) => `  constructor${c.replace(/ => .*$/, '')}`));
    out.push(...members(checker, checker.getDeclaredTypeOfSymbol(s), at));
    const statics = checker
      .getPropertiesOfType(ctorType)
      .filter((p) => p.name !== 'prototype')
      .map((p) => `  static ${p.name}: ${checker.typeToString(checker.getTypeOfSymbolAtLocation(p, at), at, FLAGS)}`);
    out.push(...statics);
    return out;
  }
  if (s.flags & ts.SymbolFlags.Interface) {
    out.push(`interface ${name}`, ...members(checker, checker.getDeclaredTypeOfSymbol(s), at));
  } else if (s.flags & ts.SymbolFlags.TypeAlias) {
    out.push(
      `type ${name} = ${checker.typeToString(checker.getDeclaredTypeOfSymbol(s), at, FLAGS | ts.TypeFormatFlags.InTypeAlias)}`,
    );
  } else if (s.flags & ts.SymbolFlags.Enum) {
    out.push(`enum ${name}`);
  }
  if (s.flags & (ts.SymbolFlags.Function | ts.SymbolFlags.Variable)) {
    const kind = s.flags & ts.SymbolFlags.Function ? 'function' : 'const';
    out.push(`${kind} ${name}: ${checker.typeToString(checker.getTypeOfSymbolAtLocation(s, at), at, FLAGS)}`);
  }
  if (out.length === 0) out.push(`${ts.SymbolFlags[s.flags] ?? 'symbol'} ${name}`);
  return out;
}

/** The report's text, made from the sources as they are now. */
export function apiReport(): string {
  const files = ENTRIES.map(([, f]) => join(ROOT, f));
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), (p) => readFileSync(p, 'utf8')).config;
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, ROOT);
  const program = ts.createProgram(files, { ...options, noEmit: true });
  const checker = program.getTypeChecker();
  const parts: string[] = [
    '# Public API report',
    '',
    'Every name the package exports, with its signature as the TypeScript compiler sees it. Made by',
    '`npx tsx scripts/api-report.ts`; `npm test` fails when it is out of date (`test/unit/api-report.test.ts`), so a',
    'change to the public face shows in review. Do not edit by hand.',
  ];
  for (const [subpath, file] of ENTRIES) {
    const source = program.getSourceFile(join(ROOT, file))!;
    const moduleSymbol = checker.getSymbolAtLocation(source)!;
    const exports = checker.getExportsOfModule(moduleSymbol).sort((a, b) => a.name.localeCompare(b.name));
    parts.push('', `## ${subpath} (${exports.length} names)`, '', '```ts');
    for (const e of exports) parts.push(...describe(checker, e, source));
    parts.push('```');
  }
  // Type names are printed as written, never with a path on this machine (`import("/home/...").Name`).
  return `${parts.join('\n').replace(/import\("[^"]*"\)\./g, '')}\n`;
}

if (require.main === module) {
  const text = apiReport();
  if (process.argv.includes('--check')) {
    const committed = readFileSync(REPORT, 'utf8');
    if (committed !== text) {
      console.error('docs/api-report.md is out of date: run `npx tsx scripts/api-report.ts` and review the change');
      process.exit(1);
    }
  } else {
    writeFileSync(REPORT, text);
    console.log(`wrote ${REPORT}`);
  }
}
