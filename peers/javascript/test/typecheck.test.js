// The typecheck benchmark's generator (typecheck/gen.mjs, typecheck/README.md): the full-size
// projects hold the counts it claims (read back from the generated source, no tsc), and small
// projects type-check cleanly while their guard fails with exactly the errors it names; a client
// typed `any` makes the guard pass, which the comparison catches. Needs build.sh's node_modules.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const peer = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const gen = path.join(peer, 'typecheck', 'gen.mjs');
const outs = [];

/** A fresh output folder under build/ (the projects resolve node_modules/ from there). */
function outDir(name) {
  const dir = path.join(peer, 'build', `typecheck-test-${process.pid}-${name}`);
  fs.rmSync(dir, { recursive: true, force: true });
  outs.push(dir);
  return dir;
}

after(() => {
  for (const dir of outs) fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs gen.mjs with `args`; returns its exit status and standard error. */
function runGen(...args) {
  const r = spawnSync(process.execPath, [gen, ...args], { encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr };
}

function generate(out, ...args) {
  const r = runGen('--out', out, ...args);
  assert.equal(r.status, 0, r.stderr);
  return r.stderr;
}

/**
 * The routers and procedure paths of a generated project, read from src/router/ line by line:
 * a router opens with `name: {` (oRPC) or `name: router({` (tRPC), a procedure is
 * `name: base.input(` or `name: procedure.input(`; the indentation gives the nesting.
 */
function routerTree(project) {
  const dir = path.join(project, 'src', 'router');
  const procedures = [];
  let routers = 0;
  let exported = [];
  for (const file of fs.readdirSync(dir)) {
    const text = fs.readFileSync(path.join(dir, file), 'utf8');
    if (file === 'index.ts') {
      assert.match(text, /^export const appRouter = (\{|router\(\{)$/m);
      routers += 1;
      exported = [...text.matchAll(/^ {2}(router_\d+),$/gm)].map((m) => m[1]);
      continue;
    }
    const stack = [];
    for (const line of text.split('\n')) {
      let m = /^export const (router_\d+) = (\{|router\(\{)$/.exec(line);
      if (m) {
        assert.equal(`${m[1]}.ts`, file);
        stack.splice(0, stack.length, m[1]);
        routers += 1;
      } else if ((m = /^( +)(\w+): (\{|router\(\{)$/.exec(line))) {
        stack.splice(m[1].length / 2, stack.length, m[2]);
        routers += 1;
      } else if ((m = /^( +)(\w+): (base|procedure)\.input\(\{\} as StandardSchemaV1</.exec(line))) {
        procedures.push([...stack.slice(0, m[1].length / 2), m[2]].join('.'));
      }
    }
  }
  return { routers, procedures, exported };
}

/** The paths of the typed client calls of src/consume/ (`const x: T = await client.PATH(`). */
function clientCalls(project) {
  const dir = path.join(project, 'src', 'consume');
  const calls = [];
  for (const file of fs.readdirSync(dir)) {
    const text = fs.readFileSync(path.join(dir, file), 'utf8');
    const awaits = text.match(/await client\./g) ?? [];
    const typed = [...text.matchAll(/^const \w+: [^=]+ = await client\.([\w.]+)\(/gm)];
    assert.equal(typed.length, awaits.length, `${file}: every call is a typed const`);
    calls.push(...typed.map((m) => m[1].replace(/\.(query|mutate)$/, '')));
  }
  return calls;
}

test('the full-size projects hold 3,000 procedures in 1,501 routers and one typed client call per procedure', () => {
  const out = outDir('full');
  assert.match(generate(out), /3000 procedures in 1501 routers and 3000 client calls each/);
  const stamp = JSON.parse(fs.readFileSync(path.join(out, 'stamp.json'), 'utf8'));
  assert.deepEqual(
    [stamp.routers, stamp.procedures, stamp.routers_total, stamp.client_calls],
    [500, 3000, 1501, 3000],
  );
  for (const lib of ['orpc', 'trpc']) {
    const project = path.join(out, lib);
    const { routers, procedures, exported } = routerTree(project);
    assert.equal(routers, 1501, lib);
    assert.equal(procedures.length, 3000, lib);
    assert.equal(new Set(procedures).size, 3000, `${lib}: procedure paths are unique`);
    assert.equal(exported.length, 500, `${lib}: the root router lists every top-level router`);
    const calls = clientCalls(project);
    assert.equal(calls.length, 3000, lib);
    assert.deepEqual(new Set(calls), new Set(procedures), `${lib}: a call per procedure`);
    assert.equal(fs.readFileSync(path.join(project, 'src', 'schema.ts'), 'utf8'),
      fs.readFileSync(path.join(peer, 'typecheck', 'schema.ts'), 'utf8'));
  }
});

/** Runs the generated bin/tsc on a tsconfig; returns its status and the errors it printed. */
function tsc(out, tsconfig) {
  const r = spawnSync(path.join(out, 'bin', 'tsc'), ['-p', tsconfig, '--singleThreaded', '--pretty', 'false'],
    { encoding: 'utf8' });
  assert.equal(r.error, undefined);
  const errors = [...r.stdout.matchAll(/^(.+?)\((\d+),\d+\): error (TS\d+):/gm)]
    .map((m) => `${path.basename(m[1])}:${m[2]} ${m[3]}`);
  return { status: r.status, errors, stdout: r.stdout };
}

/** The errors checks.ts names, one per line with `// expect-error TS<code>`. */
function expectedErrors(project) {
  const lines = fs.readFileSync(path.join(project, 'checks.ts'), 'utf8').split('\n');
  return lines.flatMap((line, i) => {
    const m = / \/\/ expect-error (TS\d+)$/.exec(line);
    return m ? [`checks.ts:${i + 1} ${m[1]}`] : [];
  });
}

test('small projects type-check cleanly, and their guard fails with exactly the errors it names', () => {
  const out = outDir('small');
  assert.match(generate(out, '--routers', '3'), /18 procedures in 10 routers/);
  for (const lib of ['orpc', 'trpc']) {
    const project = path.join(out, lib);
    const clean = tsc(out, project);
    assert.equal(clean.status, 0, `${lib}: ${clean.stdout}`);
    const expected = expectedErrors(project);
    assert.equal(expected.length, 6, `${lib}: the guard names its errors`);
    const guard = tsc(out, path.join(project, 'tsconfig.checks.json'));
    assert.notEqual(guard.status, 0, `${lib}: the guard must fail`);
    assert.deepEqual(guard.errors, expected, `${lib}: ${guard.stdout}`);
  }
});

test('a client typed any lets the guard through, so the comparison fails', () => {
  const out = outDir('any');
  generate(out, '--routers', '1');
  for (const lib of ['orpc', 'trpc']) {
    const project = path.join(out, lib);
    const client = path.join(project, 'src', 'client.ts');
    const text = fs.readFileSync(client, 'utf8');
    const loose = text.replace(/export const client(: [^=]+)? =/, 'export const client: any =');
    assert.notEqual(loose, text, lib);
    fs.writeFileSync(client, loose);
    const guard = tsc(out, path.join(project, 'tsconfig.checks.json'));
    assert.equal(guard.status, 0, `${lib}: ${guard.stdout}`);
    assert.notDeepEqual(guard.errors, expectedErrors(project), lib);
  }
});

test('--if-stale keeps an up-to-date output and regenerates a stale one without leftovers', () => {
  const out = outDir('stale');
  generate(out, '--routers', '2');
  const router1 = path.join(out, 'orpc', 'src', 'router', 'router_1.ts');
  const before = fs.statSync(router1).mtimeMs;
  assert.match(generate(out, '--routers', '2', '--if-stale'), /is up to date \(12 procedures in 7 routers\)/);
  assert.equal(fs.statSync(router1).mtimeMs, before);
  assert.match(generate(out, '--routers', '1', '--if-stale'), /wrote .*6 procedures in 4 routers/);
  assert.equal(fs.existsSync(router1), false, 'the larger generation left router_1.ts');
  fs.rmSync(path.join(out, 'trpc'), { recursive: true });
  assert.match(generate(out, '--routers', '1', '--if-stale'), /wrote /);
});

test('gen.mjs refuses a bad size and an output outside peers/javascript, naming the option', () => {
  for (const bad of ['0', '-3', '2.5', 'many']) {
    const r = runGen('--out', path.join(peer, 'build', 'never'), `--routers=${bad}`);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /--routers: expected a whole number from 1 to 100000/);
  }
  const r = runGen('--out', '/tmp/typecheck-outside');
  assert.equal(r.status, 1);
  assert.match(r.stderr, /--out \/tmp\/typecheck-outside: expected a folder inside /);
  assert.equal(fs.existsSync(path.join(peer, 'build', 'never')), false);
});
