/** Hashing shared by the stores (which stage inputs) and the slice (which verifies them before it commits). */
import { createHash, randomUUID } from 'node:crypto';
import type { StagedRef } from '../core/types';

export const sha256Hex = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

/**
 * A fresh reference for bytes about to be staged. A random id, not the hash: two inputs with equal content are staged
 * and removed independently, so a commit that consumes one never takes the other from a thread still waiting for it.
 */
export const newStagedRef = (data: Uint8Array): StagedRef => ({
  id: randomUUID(),
  sha256: sha256Hex(data),
  bytes: data.byteLength,
});
