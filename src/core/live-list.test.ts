import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LiveList, type LiveNode } from './live-list.js';

describe('LiveList', () => {
  it('holds what was added and not removed, whatever the order of adds and removes', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.nat(50)), { maxLength: 200 }), (steps) => {
        const list = new LiveList<number>();
        const nodes: LiveNode<number>[] = [];
        const expected = new Set<number>();
        let next = 0;
        for (const [add, pick] of steps) {
          if (add || nodes.length === 0) {
            nodes.push(list.add(next));
            expected.add(next);
            next += 1;
          } else {
            const node = nodes[pick % nodes.length]!;
            list.remove(node); // removing twice changes nothing
            expected.delete(node.value);
          }
        }
        expect(new Set(list)).toEqual(expected);
        expect(list.size).toBe(expected.size);
      }),
    );
  });

  it('ignores a node of another list', () => {
    const a = new LiveList<string>();
    const b = new LiveList<string>();
    const node = a.add('x');
    b.remove(node);
    expect([...a]).toEqual(['x']);
    expect(b.size).toBe(0);
  });

  it('iterates over a copy: members removed meanwhile do not cut the walk short', () => {
    const list = new LiveList<number>();
    const nodes = [1, 2, 3].map((n) => list.add(n));
    const seen: number[] = [];
    for (const value of list) {
      seen.push(value);
      for (const node of nodes) list.remove(node);
    }
    expect(seen).toEqual([3, 2, 1]);
    expect(list.size).toBe(0);
  });
});
