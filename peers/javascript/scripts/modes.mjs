#!/usr/bin/env node
// Official client against replay (docs/peer-protocol.md 1.4, "Client modes"), measured by hand over
// the peer protocol, for as long as the controller cannot pass --client-mode: for each repetition,
// stack and client mode (the two modes' order alternating between repetitions), a fresh server and
// client of this peer run one closed-loop sample on loopback. Like the controller on a 2-CPU
// machine, the server is pinned to one CPU and the client to the other (taskset), the server's
// WINDOW START and WINDOW END bracket the client's START and sample, and each process's CPU time
// over the window is read from /proc (the sum of its threads' schedstat run times, ns).
//
//   node scripts/modes.mjs [--stacks trpc-http,trpc-ws,orpc-http,orpc-ws] [--payload dated]
//     [--concurrency 10] [--warmup-ms 5000] [--window-ms 10000] [--repetitions 3] [--tls off]
//     [--out FILE.jsonl]
//
// Prints one line per sample and a table of medians (Markdown); --out keeps every sample's
// figures as JSON lines. Take the measurement lock around it.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import hdr from 'hdr-histogram-js';

const PEER = fileURLToPath(new URL('../bin/rpcarena-peer-javascript', import.meta.url));
const FIX = (name) => fileURLToPath(new URL(`../test/fixtures/${name}`, import.meta.url));

const DEFAULTS = {
  '--stacks': 'trpc-http,trpc-ws,orpc-http,orpc-ws', '--payload': 'dated', '--concurrency': '10',
  '--warmup-ms': '5000', '--window-ms': '10000', '--repetitions': '3', '--tls': 'off', '--out': '',
};

function options(argv) {
  const o = { ...DEFAULTS };
  for (let i = 0; i < argv.length; i += 2) {
    if (!(argv[i] in DEFAULTS) || argv[i + 1] === undefined) throw new Error(`unknown or valueless argument ${argv[i]}; expected ${Object.keys(DEFAULTS).join(', ')}`);
    o[argv[i]] = argv[i + 1];
  }
  return o;
}

/** CPU time of process `pid` so far, ns: the run time of every thread (schedstat). */
function cpuNs(pid) {
  let total = 0;
  for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
    total += Number(fs.readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
  }
  return total;
}

/** A peer process pinned to `cpu`: its events one by one, commands to its stdin. */
class Peer {
  constructor(cpu, args) {
    this.child = spawn('taskset', ['-c', String(cpu), PEER, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.stderr = '';
    this.child.stderr.on('data', (d) => { this.stderr = (this.stderr + d).slice(-4000); });
    this.queue = [];
    this.waiting = [];
    readline.createInterface({ input: this.child.stdout }).on('line', (line) => {
      const event = JSON.parse(line);
      const waiter = this.waiting.shift();
      if (waiter) waiter(event);
      else this.queue.push(event);
    });
    this.exited = new Promise((resolve) => this.child.on('exit', resolve));
  }

  next(kind, ms = 120_000) {
    const got = this.queue.length > 0 ? Promise.resolve(this.queue.shift()) : new Promise((resolve) => this.waiting.push(resolve));
    const late = new Promise((_, reject) => setTimeout(() => reject(new Error(`no ${kind} in ${ms} ms; stderr: ${this.stderr}`)), ms).unref());
    return Promise.race([got, late]).then((event) => {
      if (event.event !== kind) throw new Error(`expected ${kind}, got ${JSON.stringify(event).slice(0, 400)}; stderr: ${this.stderr}`);
      return event;
    });
  }

  send(line) {
    this.child.stdin.write(`${line}\n`);
  }
}

/** The latency percentiles (ms) of a sample's histogram. */
function percentiles(base64) {
  const h = hdr.decodeFromCompressedBase64(base64, 64, true);
  const ms = (p) => h.getValueAtPercentile(p) / 1e6;
  const out = { p50_ms: ms(50), p99_ms: ms(99) };
  h.destroy();
  return out;
}

function tlsArgs(o, role) {
  if (o['--tls'] === 'off') return ['--tls', 'off'];
  return role === 'server' ? ['--cert', FIX('ip.pem'), '--key', FIX('ip.key')] : ['--server-name', '127.0.0.1', '--ca', FIX('ca.pem')];
}

/** One sample of `stack` in client `mode`; resolves to its figures. */
async function sample(o, stack, mode) {
  const server = new Peer(1, ['server', '--stack', stack, '--listen', '127.0.0.1:0', ...tlsArgs(o, 'server')]);
  const { address } = await server.next('ready');
  const size = o['--payload'] === 'dated' ? '0' : '64';
  const client = new Peer(0, ['client', '--stack', stack, '--server', address, ...tlsArgs(o, 'client'), '--shape', 'unary',
    '--concurrency', o['--concurrency'], '--request-size', size, '--response-size', size, '--messages-per-stream', '1',
    '--load', 'closed', '--payload', o['--payload'], '--client-mode', mode, '--warmup-ms', o['--warmup-ms'],
    '--window-ms', o['--window-ms'], '--drain-ms', '5000']);
  const armed = await client.next('armed');
  server.send('WINDOW START');
  const start = await server.next('window');
  const c0 = cpuNs(client.child.pid);
  const s0 = cpuNs(server.child.pid);
  client.send('START');
  const result = await client.next('sample');
  const c1 = cpuNs(client.child.pid);
  const s1 = cpuNs(server.child.pid);
  server.send('WINDOW END');
  const end = await server.next('window');
  for (const peer of [client, server]) peer.send('SHUTDOWN');
  await Promise.all([client.exited, server.exited]);
  if (result.failed !== '0') throw new Error(`${stack} ${mode}: ${result.failed} failed: ${result.first_failure}`);
  const completed = Number(result.completed);
  const windowS = Number(o['--window-ms']) / 1000;
  const served = Number(end.counters.rpcs) - Number(start.counters.rpcs);
  return {
    stack, mode, payload: o['--payload'], lanes: armed.lanes, completed, served, rejected: Number(end.counters.rejected) - Number(start.counters.rejected),
    ops_per_s: completed / windowS, client_cpu_us_per_op: (c1 - c0) / 1e3 / completed, client_cores: (c1 - c0) / 1e9 / windowS,
    server_cpu_us_per_op: (s1 - s0) / 1e3 / served, server_cores: (s1 - s0) / 1e9 / windowS, ...percentiles(result.histogram),
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function table(rows) {
  const keys = ['ops_per_s', 'client_cpu_us_per_op', 'client_cores', 'server_cpu_us_per_op', 'server_cores', 'p50_ms', 'p99_ms'];
  const lines = [`| stack | mode | n | ${keys.join(' | ')} | ops/s (each) |`, `|---|---|--:|${keys.map(() => '--:').join('|')}|---|`];
  const groups = new Map();
  for (const r of rows) groups.set(`${r.stack} ${r.mode}`, [...(groups.get(`${r.stack} ${r.mode}`) ?? []), r]);
  for (const [key, rs] of groups) {
    const [stack, mode] = key.split(' ');
    const cells = keys.map((k) => median(rs.map((r) => r[k])).toFixed(k.endsWith('cores') ? 2 : k.endsWith('_ms') ? 3 : 1));
    lines.push(`| ${stack} | ${mode} | ${rs.length} | ${cells.join(' | ')} | ${rs.map((r) => r.ops_per_s.toFixed(0)).join(', ')} |`);
  }
  return lines.join('\n');
}

async function main() {
  const o = options(process.argv.slice(2));
  await hdr.initWebAssembly();
  const rows = [];
  for (let rep = 0; rep < Number(o['--repetitions']); rep++) {
    for (const stack of o['--stacks'].split(',')) {
      const modes = rep % 2 === 0 ? ['official', 'replay'] : ['replay', 'official'];
      for (const mode of modes) {
        const row = { repetition: rep + 1, ...(await sample(o, stack, mode)) };
        rows.push(row);
        process.stderr.write(`${JSON.stringify(row)}\n`);
        if (o['--out']) fs.appendFileSync(o['--out'], `${JSON.stringify(row)}\n`);
      }
    }
  }
  process.stdout.write(`${table(rows)}\n`);
}

main().catch((e) => {
  process.stderr.write(`modes.mjs: ${e.stack ?? e}\n`);
  process.exit(1);
});
