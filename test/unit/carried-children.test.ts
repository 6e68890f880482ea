/**
 * The children a thread carries across continue-as-new are the most recent {@link CHILDREN_WINDOW} (release 0.10): a
 * thread that watched a subscription for long used to carry every event child it ever started, a list that grew
 * toward the server's payload limit. A run still reads every child its input holds, as recorded histories carry them.
 */
import { describe, expect, it } from 'vitest';
import { CHILDREN_WINDOW, carryState, DEDUP_WINDOW, restoreState } from '../../src/workflows/state';

const child = (i: number): [string, string] => [`child-${i}`, `call-${i}`];

describe('children carried across continue-as-new', () => {
  it('keeps the most recent ones, in order, and every one of a short list', () => {
    const many = Array.from({ length: CHILDREN_WINDOW + 500 }, (_, i) => child(i));
    const st = restoreState({ threadId: 't', kind: 'root', carried: { children: many } as never });
    // A run reads every child its input holds.
    expect(st.children.size).toBe(CHILDREN_WINDOW + 500);
    const carried = carryState(st, DEDUP_WINDOW).children;
    expect(carried).toHaveLength(CHILDREN_WINDOW);
    expect(carried[0]).toEqual(child(500));
    expect(carried.at(-1)).toEqual(child(CHILDREN_WINDOW + 499));

    const few = restoreState({ threadId: 't', kind: 'root', carried: { children: [child(1), child(2)] } as never });
    expect(carryState(few, DEDUP_WINDOW).children).toEqual([child(1), child(2)]);
  });
});
