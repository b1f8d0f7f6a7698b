#!/usr/bin/env node
/**
 * Import cycles in src/ (docs/architecture.md, "Enforced rules"), run by `npm run lint`. Builds the
 * graph of relative imports of every src/**\/*.ts (tests excluded) with the TypeScript compiler's own
 * parser, then reports every strongly connected component of more than one module (and a module
 * importing itself). Type-only imports count too: a type cycle is still two modules that cannot be
 * read, or moved, one without the other. Exit code 1 when there is a cycle.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** Relative import specifiers of one file (import, export … from, dynamic import of a literal). */
export function importsOf(fileName, text) {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found = [];
  const visit = (node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found.filter((s) => s.startsWith('.'));
}

/** Every cycle (strongly connected component of size > 1, or a self-import) of a graph: module → modules. */
export function cyclesOf(graph) {
  let index = 0;
  const indices = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const cycles = [];
  const strongConnect = (v) => {
    indices.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indices.has(w)) {
        strongConnect(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), indices.get(w)));
    }
    if (low.get(v) === indices.get(v)) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!indices.has(v)) strongConnect(v);
  return cycles;
}

function sourceGraph(root) {
  const graph = new Map();
  const files = readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => join(e.parentPath, e.name));
  for (const file of files) {
    const targets = importsOf(file, readFileSync(file, 'utf8')).map((spec) =>
      resolve(dirname(file), spec.replace(/\.js$/, '.ts')),
    );
    graph.set(
      file,
      targets.filter((t) => t.startsWith(root)),
    );
  }
  return graph;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'src');
  const cycles = cyclesOf(sourceGraph(root));
  for (const cycle of cycles) console.error(`import cycle: ${cycle.map((f) => relative(root, f)).join(' ↔ ')}`);
  if (cycles.length > 0) process.exit(1);
}
