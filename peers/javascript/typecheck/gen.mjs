#!/usr/bin/env node
// Writes the two TypeScript projects of the typecheck benchmark (README.md in this folder): one
// on oRPC, one on tRPC, each with the same routers, procedures and typed client calls, every
// input a StandardSchemaV1 of the same vendored schema.ts, plus a guard (checks.ts) that must
// fail to type-check. Plain Node.js, no dependency of its own.
//
//   node typecheck/gen.mjs [--out DIR] [--routers N] [--if-stale]
//
// --out      where to write (default build/typecheck); inside peers/javascript, since the
//            projects resolve the libraries from its node_modules/
// --routers  top-level routers (default 500: 3,000 procedures in 1,501 routers)
// --if-stale do nothing when DIR holds what this generator, at this size, would write
//
// DIR/orpc/ and DIR/trpc/ (tsconfig.json: the benchmarked project; tsconfig.checks.json: the
// same plus checks.ts), DIR/bin/tsc (a link to the native tsc binary of the installed
// typescript package) and DIR/stamp.json (what was generated, read by --if-stale).

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PEER = path.resolve(HERE, '..');
const DEFAULT_ROUTERS = 500;
/** Levels of routers under each top-level router's name: itself, `nested`, `nested.nested`. */
const LEVELS = 3;

/** The procedures every router holds: input type, handler body, output type, a valid argument. */
const KINDS = [
  {
    name: 'greet',
    input: '{ who: string }',
    body: '`hello ${input.who}`',
    output: 'string',
    arg: '{ who: "world" }',
    trpc: { define: 'query', call: 'query' },
  },
  {
    name: 'echo',
    input: '{ id: string }',
    body: '({ id: input.id })',
    output: '{ id: string }',
    arg: '{ id: "123" }',
    trpc: { define: 'mutation', call: 'mutate' },
  },
];

/** What differs between the libraries: how a procedure, a router and a client call are written. */
const LIBRARIES = {
  orpc: {
    packages: ['@orpc/server', '@orpc/client'],
    base: 'import { os } from "@orpc/server";\n\nexport const base = os;\n',
    routerImports: 'import { base } from "../base";',
    indexImports: [],
    open: '{',
    close: '}',
    procedure: (k) =>
      `base.input({} as StandardSchemaV1<${k.input}>).handler(({ input }) => ${k.body})`,
    client: [
      'import { createORPCClient } from "@orpc/client";',
      'import { RPCLink } from "@orpc/client/fetch";',
      'import type { RouterClient } from "@orpc/server";',
      'import type { appRouter } from "./router/index";',
      '',
      'export const client: RouterClient<typeof appRouter> = createORPCClient(',
      '  new RPCLink({ url: "http://127.0.0.1:3000/rpc" }),',
      ');',
    ],
    call: (p, k) => `client.${p}(${k.arg})`,
  },
  trpc: {
    packages: ['@trpc/server', '@trpc/client'],
    base: [
      'import { initTRPC } from "@trpc/server";',
      '',
      'const t = initTRPC.create();',
      '',
      'export const router = t.router;',
      'export const procedure = t.procedure;',
      '',
    ].join('\n'),
    routerImports: 'import { procedure, router } from "../base";',
    indexImports: ['import { router } from "../base";'],
    open: 'router({',
    close: '})',
    procedure: (k) =>
      `procedure.input({} as StandardSchemaV1<${k.input}>).${k.trpc.define}(({ input }) => ${k.body})`,
    client: [
      'import { createTRPCClient, httpBatchLink } from "@trpc/client";',
      'import type { appRouter } from "./router/index";',
      '',
      'export const client = createTRPCClient<typeof appRouter>({',
      '  links: [httpBatchLink({ url: "http://127.0.0.1:3000/trpc" })],',
      '});',
    ],
    call: (p, k) => `client.${p}.${k.trpc.call}(${k.arg})`,
  },
};

/** The compiler options of both projects (those of the reference's tsconfig.base.json that apply). */
const COMPILER_OPTIONS = {
  target: 'esnext',
  lib: ['esnext'],
  module: 'esnext',
  moduleResolution: 'bundler',
  moduleDetection: 'force',
  types: ['node'],
  strict: true,
  noUncheckedIndexedAccess: true,
  noImplicitOverride: true,
  noUncheckedSideEffectImports: true,
  useDefineForClassFields: true,
  esModuleInterop: true,
  resolveJsonModule: true,
  isolatedModules: true,
  skipLibCheck: true,
  noEmit: true,
};

/** The paths (`router_3.nested.echo`) and kinds of top-level router `i`'s procedures. */
function procedurePaths(i) {
  const paths = [];
  for (let level = 0; level < LEVELS; level++) {
    const prefix = [`router_${i}`, ...Array(level).fill('nested')].join('.');
    for (const kind of KINDS) paths.push({ path: `${prefix}.${kind.name}`, kind });
  }
  return paths;
}

/** src/router/router_<i>.ts: the top-level router and the routers nested in it. */
function routerFile(lib, i) {
  const lines = [
    'import type { StandardSchemaV1 } from "../schema";',
    lib.routerImports,
    '',
    `export const router_${i} = ${lib.open}`,
  ];
  const level = (depth, indent) => {
    for (const kind of KINDS) lines.push(`${indent}${kind.name}: ${lib.procedure(kind)},`);
    if (depth + 1 < LEVELS) {
      lines.push(`${indent}nested: ${lib.open}`);
      level(depth + 1, `${indent}  `);
      lines.push(`${indent}${lib.close},`);
    }
  };
  level(0, '  ');
  lines.push(`${lib.close};`, '');
  return lines.join('\n');
}

/** src/router/index.ts: the root router over every top-level router. */
function indexFile(lib, routers) {
  const names = Array.from({ length: routers }, (_, i) => `router_${i}`);
  return [
    ...lib.indexImports,
    ...names.map((n) => `import { ${n} } from "./${n}";`),
    '',
    `export const appRouter = ${lib.open}`,
    ...names.map((n) => `  ${n},`),
    `${lib.close};`,
    '',
  ].join('\n');
}

/** src/consume/router_<i>.ts: one typed client call per procedure of top-level router `i`. */
function consumeFile(lib, i) {
  const calls = procedurePaths(i).map(
    ({ path: p, kind }) =>
      `const ${p.replaceAll('.', '_')}: ${kind.output} = await ${lib.call(p, kind)};`,
  );
  return ['import { client } from "../client";', '', ...calls, ''].join('\n');
}

/**
 * checks.ts: calls that only a correctly inferred client rejects. Each line ends with the error
 * tsc must report on it (`// expect-error TS<code>`); an `any` anywhere lets one through.
 */
function checksFile(lib, routers) {
  const [greet, echo] = KINDS;
  const last = `router_${routers - 1}`;
  const wrong = { ...greet, arg: '{ who: 1 }' };
  const empty = { ...echo, arg: '{}' };
  return [
    '// The guard: every line below must fail to type-check with the error its comment names',
    "// (peers/javascript/test/typecheck.test.js compares them with tsc's output).",
    'import { client } from "./src/client";',
    '',
    `await ${lib.call('router_0.greet', wrong)}; // expect-error TS2322`,
    `await ${lib.call('router_0.nested.echo', empty)}; // expect-error TS2741`,
    `const wrongOutput: number = await ${lib.call('router_0.greet', greet)}; // expect-error TS2322`,
    `const wrongDeepOutput: { id: number } = await ${lib.call(`${last}.nested.nested.echo`, echo)}; // expect-error TS2322`,
    `await ${lib.call('router_0.nested.missing', greet)}; // expect-error TS2339`,
    `await ${lib.call('missing.greet', greet)}; // expect-error TS2339`,
    '',
  ].join('\n');
}

/** Writes one library's project into `dir` (emptied first), returning its file count. */
function writeProject(dir, lib, routers) {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, 'src', 'router'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'src', 'consume'), { recursive: true });
  const files = new Map([
    ['tsconfig.json', `${JSON.stringify({ compilerOptions: COMPILER_OPTIONS, include: ['src'] }, null, 2)}\n`],
    ['tsconfig.checks.json', `${JSON.stringify({ extends: './tsconfig.json', include: ['src', 'checks.ts'] }, null, 2)}\n`],
    ['src/schema.ts', fs.readFileSync(path.join(HERE, 'schema.ts'), 'utf8')],
    ['src/base.ts', lib.base],
    ['src/router/index.ts', indexFile(lib, routers)],
    ['src/client.ts', `${lib.client.join('\n')}\n`],
    ['checks.ts', checksFile(lib, routers)],
  ]);
  for (let i = 0; i < routers; i++) {
    files.set(`src/router/router_${i}.ts`, routerFile(lib, i));
    files.set(`src/consume/router_${i}.ts`, consumeFile(lib, i));
  }
  for (const [name, text] of files) fs.writeFileSync(path.join(dir, name), text);
  return files.size;
}

/** A package's installed version, or a message saying to run build.sh. */
function installed(name) {
  const file = path.join(PEER, 'node_modules', name, 'package.json');
  if (!fs.existsSync(file)) {
    throw new Error(`${name} is not installed in ${path.join(PEER, 'node_modules')}: run peers/javascript/build.sh`);
  }
  return JSON.parse(fs.readFileSync(file, 'utf8')).version;
}

/**
 * The installed versions of the libraries and of TypeScript (its native binary's package too),
 * each checked against the pin of package.json; and the native binary's path.
 */
function checkInstalled() {
  const pins = JSON.parse(fs.readFileSync(path.join(PEER, 'package.json'), 'utf8')).dependencies;
  const versions = {};
  for (const name of [...LIBRARIES.orpc.packages, ...LIBRARIES.trpc.packages, 'typescript']) {
    versions[name] = installed(name);
    if (versions[name] !== pins[name]) {
      throw new Error(`${name} ${versions[name]} is installed but package.json pins ${pins[name]}: run peers/javascript/build.sh`);
    }
  }
  const native = `@typescript/typescript-${process.platform}-${process.arch}`;
  versions[native] = installed(native);
  if (versions[native] !== versions.typescript) {
    throw new Error(`${native} ${versions[native]} does not match typescript ${versions.typescript}: run peers/javascript/build.sh`);
  }
  const tsc = path.join(PEER, 'node_modules', native, 'lib', 'tsc');
  if (!fs.existsSync(tsc)) throw new Error(`${tsc} is missing: run peers/javascript/build.sh`);
  return { versions, tsc };
}

/** The stamp of a generation: the generator's and schema's SHA-256, the size, the versions. */
function stampOf(routers, versions) {
  const hash = createHash('sha256');
  for (const file of ['gen.mjs', 'schema.ts']) hash.update(fs.readFileSync(path.join(HERE, file)));
  return {
    generator: hash.digest('hex'),
    routers,
    procedures: routers * LEVELS * KINDS.length,
    routers_total: routers * LEVELS + 1,
    client_calls: routers * LEVELS * KINDS.length,
    versions,
  };
}

/** Whether `out` holds exactly what `stamp` describes. */
function upToDate(out, stamp) {
  try {
    const old = fs.readFileSync(path.join(out, 'stamp.json'), 'utf8');
    const complete = ['orpc', 'trpc', 'bin/tsc'].every((p) => fs.existsSync(path.join(out, p)));
    return complete && old === `${JSON.stringify(stamp, null, 2)}\n`;
  } catch {
    return false;
  }
}

/** Writes both projects, the tsc link and, last, the stamp. */
function generate(out, stamp, tsc) {
  fs.mkdirSync(out, { recursive: true });
  fs.rmSync(path.join(out, 'stamp.json'), { force: true });
  let files = 0;
  for (const [name, lib] of Object.entries(LIBRARIES)) {
    files += writeProject(path.join(out, name), lib, stamp.routers);
  }
  fs.rmSync(path.join(out, 'bin'), { recursive: true, force: true });
  fs.mkdirSync(path.join(out, 'bin'));
  fs.symlinkSync(path.relative(path.join(out, 'bin'), tsc), path.join(out, 'bin', 'tsc'));
  fs.writeFileSync(path.join(out, 'stamp.json'), `${JSON.stringify(stamp, null, 2)}\n`);
  return files;
}

function options(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      out: { type: 'string', default: path.join(PEER, 'build', 'typecheck') },
      routers: { type: 'string', default: String(DEFAULT_ROUTERS) },
      'if-stale': { type: 'boolean', default: false },
    },
  });
  const routers = Number(values.routers);
  if (!Number.isInteger(routers) || routers < 1 || routers > 100000) {
    throw new Error(`--routers: expected a whole number from 1 to 100000, got ${JSON.stringify(values.routers)}`);
  }
  const out = path.resolve(values.out);
  if (!out.startsWith(`${PEER}${path.sep}`)) {
    throw new Error(`--out ${out}: expected a folder inside ${PEER}, whose node_modules/ the projects resolve their libraries from`);
  }
  return { out, routers, ifStale: values['if-stale'] };
}

function main() {
  const { out, routers, ifStale } = options(process.argv.slice(2));
  const { versions, tsc } = checkInstalled();
  const stamp = stampOf(routers, versions);
  const where = path.relative(process.cwd(), out) || '.';
  if (ifStale && upToDate(out, stamp)) {
    console.error(`gen.mjs: ${where} is up to date (${stamp.procedures} procedures in ${stamp.routers_total} routers)`);
    return;
  }
  const files = generate(out, stamp, tsc);
  console.error(
    `gen.mjs: wrote ${where}/{orpc,trpc}: ${stamp.procedures} procedures in ${stamp.routers_total} routers and ${stamp.client_calls} client calls each (${files} files in all)`,
  );
}

try {
  main();
} catch (e) {
  console.error(`gen.mjs: ${e.message}`);
  process.exit(1);
}
