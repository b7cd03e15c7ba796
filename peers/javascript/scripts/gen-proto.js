// Build step: compiles the workload contract (proto/rpcarena/bench/v1/bench.proto of this
// repository) into build/bench.json, the protobufjs reflection descriptor the peer loads at
// start. Generated at build time, never committed, so the peer always matches the repository's
// .proto. Usage: node scripts/gen-proto.js [PROTO_FILE] [OUT_FILE]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const proto = path.resolve(process.argv[2] ?? path.join(here, '../../../proto/rpcarena/bench/v1/bench.proto'));
const out = path.resolve(process.argv[3] ?? path.join(here, '../build/bench.json'));

if (!fs.existsSync(proto)) {
  console.error(`gen-proto: ${proto} does not exist; run this from a checkout of rpcarena (peers/javascript) or pass the .proto path`);
  process.exit(1);
}
const root = protobuf.loadSync(proto);
root.resolveAll();
for (const name of ['Request', 'Response', 'Summary', 'Status', 'Structured', 'Item', 'Empty', 'BenchService', 'BenchService.Command']) {
  if (!root.lookup(`rpcarena.bench.v1.${name}`)) {
    console.error(`gen-proto: ${proto} has no rpcarena.bench.v1.${name}`);
    process.exit(1);
  }
}
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, `${JSON.stringify(root.toJSON(), null, 1)}\n`);
console.error(`gen-proto: ${path.relative(process.cwd(), proto)} -> ${path.relative(process.cwd(), out)}`);
