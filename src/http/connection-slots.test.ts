import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ConnectionSlots, type SlotOutcome } from './connection-slots.js';

/** What ConnectionSlots reads of a socket: its peer, `close`, `destroy`. */
class Peer extends EventEmitter {
  destroyed = false;
  constructor(readonly remoteAddress: string) {
    super();
  }
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    queueMicrotask(() => this.emit('close'));
  }
}

function slots(max: number) {
  const outcomes: SlotOutcome[] = [];
  const cap = new ConnectionSlots(max, (outcome) => outcomes.push(outcome));
  const open = (address: string) => {
    const peer = new Peer(address);
    cap.admit(peer as unknown as Socket);
    return peer;
  };
  return { cap, open, outcomes };
}

describe('ConnectionSlots', () => {
  it('counts an IPv6 client as its /64: thousands of addresses inside one are one holder', () => {
    const { open, outcomes } = slots(4);
    const held = [1, 2, 3, 4].map((i) => open(`2001:db8:0:1::${i}`));
    const newcomer = open('2001:db8:0:2::1');
    expect(newcomer.destroyed).toBe(false);
    expect(held.filter((p) => p.destroyed)).toHaveLength(1);
    expect(outcomes).toEqual(['made_room']);
  });

  it('equal holders (distinct addresses, one connection each): the newcomer is refused', () => {
    const { open, outcomes } = slots(3);
    ['192.0.2.1', '192.0.2.2', '192.0.2.3'].forEach(open);
    expect(open('192.0.2.4').destroyed).toBe(true);
    expect(outcomes).toEqual(['refused']);
  });

  it('a slot freed by a close is counted free once, a connection closed to make room too', async () => {
    const { cap, open } = slots(2);
    const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
    const a = open('192.0.2.1');
    const b = open('192.0.2.1');
    const c = open('192.0.2.2'); // makes room: the largest holder's first idle connection goes
    expect(a.destroyed).toBe(true);
    await tick();
    expect(cap.size).toBe(2);
    b.destroy();
    await tick();
    expect(cap.size).toBe(1);
    c.destroy();
    await tick();
    expect(cap.size).toBe(0);
  });
});
