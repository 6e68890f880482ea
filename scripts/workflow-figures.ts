/**
 * `npx tsx scripts/workflow-figures.ts [root] [--json]`: what the thread workflow's code weighs, for a release's
 * retirement of old patch rules (decision 85; bench/results/retirement-0.13-2026-12-06.md). `root` is a checkout (this
 * one by default), so the same script measures another worktree too.
 *
 * Per file of `src/workflows/` and in all: lines (as `wc -l` counts them), decision points — `if`, `? :`, `&&`, `||`,
 * `??`, `case` clauses and loops (`for`, `for…in`, `for…of`, `while`, `do`), counted on the TypeScript syntax tree, so
 * comments and strings count for nothing, and `&&=`, `||=` and `??=` with their operators — and patch questions: the calls
 * of `patched()`, `impliedPatch()`, `decideRules()` and of the release functions `v0…()` (their definitions in
 * patches.ts are calls too: each asks). Patch ids are the distinct `'infinity-v…'` string literals.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';

interface Figures {
  lines: number;
  if: number;
  conditional: number;
  and: number;
  or: number;
  nullish: number;
  case: number;
  loops: number;
  /** Every decision point above together. */
  decisions: number;
  patchCalls: number;
  patchIds: Set<string>;
}

const PATCH_CALLEE = /^(patched|impliedPatch|decideRules|v0\d+)$/;

function empty(): Figures {
  return {
    lines: 0,
    if: 0,
    conditional: 0,
    and: 0,
    or: 0,
    nullish: 0,
    case: 0,
    loops: 0,
    decisions: 0,
    patchCalls: 0,
    patchIds: new Set(),
  };
}

function measure(path: string): Figures {
  const text = readFileSync(path, 'utf8');
  const f = empty();
  // `wc -l`: newline characters.
  f.lines = text.split('\n').length - 1;
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const visit = (node: ts.Node): void => {
    switch (node.kind) {
      case ts.SyntaxKind.IfStatement:
        f.if += 1;
        break;
      case ts.SyntaxKind.ConditionalExpression:
        f.conditional += 1;
        break;
      case ts.SyntaxKind.CaseClause:
        f.case += 1;
        break;
      case ts.SyntaxKind.ForStatement:
      case ts.SyntaxKind.ForInStatement:
      case ts.SyntaxKind.ForOfStatement:
      case ts.SyntaxKind.WhileStatement:
      case ts.SyntaxKind.DoStatement:
        f.loops += 1;
        break;
      case ts.SyntaxKind.BinaryExpression: {
        const op = (node as ts.BinaryExpression).operatorToken.kind;
        if (op === ts.SyntaxKind.AmpersandAmpersandToken || op === ts.SyntaxKind.AmpersandAmpersandEqualsToken)
          f.and += 1;
        if (op === ts.SyntaxKind.BarBarToken || op === ts.SyntaxKind.BarBarEqualsToken) f.or += 1;
        if (op === ts.SyntaxKind.QuestionQuestionToken || op === ts.SyntaxKind.QuestionQuestionEqualsToken)
          f.nullish += 1;
        break;
      }
      case ts.SyntaxKind.CallExpression: {
        const callee = (node as ts.CallExpression).expression;
        if (ts.isIdentifier(callee) && PATCH_CALLEE.test(callee.text)) f.patchCalls += 1;
        break;
      }
      case ts.SyntaxKind.StringLiteral:
      case ts.SyntaxKind.NoSubstitutionTemplateLiteral: {
        const s = (node as ts.StringLiteralLike).text;
        if (/^infinity-v\d+\.\d+$/.test(s)) f.patchIds.add(s);
        break;
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  f.decisions = f.if + f.conditional + f.and + f.or + f.nullish + f.case + f.loops;
  return f;
}

function add(total: Figures, f: Figures): void {
  for (const k of Object.keys(total) as (keyof Figures)[]) {
    if (k === 'patchIds') for (const id of f.patchIds) total.patchIds.add(id);
    else total[k] += f[k];
  }
}

function main(): void {
  const args = process.argv.slice(2);
  const json = args.includes('--json');
  const root = resolve(args.find((a) => !a.startsWith('--')) ?? join(__dirname, '..'));
  const dir = join(root, 'src', 'workflows');
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .sort();
  const total = empty();
  const rows = files.map((file) => {
    const f = measure(join(dir, file));
    add(total, f);
    return { file, ...f };
  });
  if (json) {
    const plain = (f: Figures) => ({ ...f, patchIds: [...f.patchIds].sort() });
    console.log(JSON.stringify({ root, files: rows.map(plain), total: plain(total) }, null, 2));
    return;
  }
  const cols = [
    'lines',
    'if',
    'conditional',
    'and',
    'or',
    'nullish',
    'case',
    'loops',
    'decisions',
    'patchCalls',
  ] as const;
  const line = (name: string, f: Figures) =>
    `| ${name} | ${cols.map((c) => String(f[c])).join(' | ')} | ${f.patchIds.size} |`;
  console.log(`src/workflows of ${root}\n`);
  console.log(`| file | ${cols.join(' | ')} | patch ids |`);
  console.log(`|---|${cols.map(() => '--:').join('|')}|--:|`);
  for (const r of rows) console.log(line(r.file, r));
  console.log(line('**total**', total));
  console.log(`\npatch ids: ${[...total.patchIds].sort().join(', ')}`);
}

main();
