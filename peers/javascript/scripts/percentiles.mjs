// Diagnosis only: every sample's window percentiles (decoded from its HdrHistogram) and the
// emulator's window counters per call, for run directories of `rpcarena run`:
//   node peers/javascript/scripts/percentiles.mjs DIR...
// (the report gives p50/p99; a tail made by a few lost packets needs p95-p99.9 beside the losses).
import fs from 'node:fs';
import hdr from 'hdr-histogram-js';

const PERCENTILES = [50, 90, 95, 97, 98, 99, 99.5, 99.9];
for (const dir of process.argv.slice(2)) {
  for (const line of fs.readFileSync(`${dir}/samples.jsonl`, 'utf8').split('\n').filter(Boolean)) {
    const d = JSON.parse(line);
    if (!d.client?.histogram) continue;
    const h = hdr.decodeFromCompressedBase64(d.client.histogram);
    const ops = d.client.completed;
    const w = d.network_window;
    const link = w
      ? ` packets/call c>s ${(w.client_to_server.arrived / ops).toFixed(2)} s>c ${(w.server_to_client.arrived / ops).toFixed(2)} lost ${w.client_to_server.lost}+${w.server_to_client.lost}`
      : '';
    const ms = (p) => (h.getValueAtPercentile(p) / 1e6).toFixed(1);
    console.log(`${d.config.cell} r${d.round} n=${ops} ${PERCENTILES.map((p) => `p${p} ${ms(p)}`).join(' ')} ms${link}`);
  }
}
