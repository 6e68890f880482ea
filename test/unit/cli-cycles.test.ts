/**
 * src/cli/ has no import circle (issue 42 §2): its modules import one way, main → commands → lazy-actions → actions →
 * helpers (target, serve-flags, format, ...) → errors, lazy, terminal-text. Before, lazy.ts loaded every action and
 * every helper imported `CliError` from target.ts, which imports lazy.ts: 17 files in one circle.
 *
 * The imports are read with the TypeScript compiler API: `import` and `export ... from` (type-only ones too: a circle
 * of types is still one), `require('…')` and `import('…')` calls, and `typeof import('…')` types (lazy loading).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { expect, it } from 'vitest';

const CLI = resolve(__dirname, '..', '..', 'src', 'cli');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The module specifiers a file names, wherever it names them. */
function specifiers(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(node.expression) && node.expression.text === 'require')) &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      found.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Each file of src/cli/ (relative to it) and the files of src/cli/ it imports. */
function cliImports(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(CLI)) {
    const targets = new Set<string>();
    for (const spec of specifiers(file)) {
      if (!spec.startsWith('.')) continue;
      const base = resolve(dirname(file), spec);
      const target = [`${base}.ts`, join(base, 'index.ts')].find(existsSync);
      if (target?.startsWith(`${CLI}/`)) targets.add(relative(CLI, target));
    }
    graph.set(relative(CLI, file), [...targets].sort());
  }
  return graph;
}

/** The groups of files that import each other, directly or not (Tarjan's strongly connected components). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1 || graph.get(v)?.includes(v)) found.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** One circle through `group`'s first file, for the failure message: a → b → … → a. */
function oneCircle(graph: Map<string, string[]>, group: string[]): string {
  const inside = new Set(group);
  const start = group[0]!;
  const from = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!inside.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let u = v; u !== start; u = from.get(u)!) path.splice(1, 0, u);
        return [...path, start].join(' → ');
      }
      if (!from.has(w)) {
        from.set(w, v);
        queue.push(w);
      }
    }
  }
  return group.join(', ');
}

it('finds the imports of src/cli/, lazy ones included', () => {
  const graph = cliImports();
  expect(graph.size).toBeGreaterThan(40);
  expect(graph.get('main.ts')).toContain('commands/history.ts');
  // require() with typeof import(): the actions are loaded by the commands that run them.
  expect(graph.get('lazy-actions.ts')).toContain('actions/dev.ts');
  // The parser sees a circle when there is one.
  const looped = new Map(graph);
  looped.set('errors.ts', ['main.ts']);
  expect(circles(looped).flat()).toContain('errors.ts');
});

it('has no import circle in src/cli/', () => {
  const graph = cliImports();
  const found = circles(graph).map((group) => `${group.length} files: ${oneCircle(graph, group)}`);
  expect(found, 'import circles in src/cli/ (helpers must not import commands, actions or lazy-actions.ts)').toEqual(
    [],
  );
});
