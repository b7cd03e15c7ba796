// Clients with one connection per lane (tcp, and the JSON RPC stacks): the connections opened
// together, and the free-lane list the backpressure model draws from.

export class ConnectionLanes {
  constructor(lanes) {
    this.lanes = lanes;
    this.conns = [];
    this.free = [];
    this.connections = lanes;
  }

  /** Opens one connection per lane concurrently (`open(lane)`); if any fails, closes the others. */
  async openLanes(open) {
    const opened = await Promise.allSettled(Array.from({ length: this.lanes }, (_, i) => open(i)));
    this.conns = opened.filter((r) => r.status === 'fulfilled').map((r) => r.value);
    const failed = opened.find((r) => r.status === 'rejected');
    if (failed) {
      await this.close();
      throw failed.reason;
    }
    for (let lane = this.lanes - 1; lane >= 0; lane--) this.free.push(lane);
  }

  /** Backpressure: a call starts when a lane's connection is free (-1: none is). */
  acquire() {
    return this.free.length > 0 ? this.free.pop() : -1;
  }

  release(lane) {
    this.free.push(lane);
  }
}
