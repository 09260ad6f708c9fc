// src/rules.mjs: the delta layer's small rules (wire-format sections 7.3-7.4), each written once: the slot
// classes, the extrapolated reference, the zigzagged difference, the integer smallest-three test.
// The interpreted decoder (packet.mjs) calls them; the compiled fast path (fastpath.mjs) splices
// their bodies as written, so keep them plain: parameters, statements, `return X;` each on its own.
import { P2 } from './util.mjs';

export const C_FLAG = 0, C_ORD = 1, C_SMAG = 2, C_QUAT = 3, C_UVEC = 4, C_ABS = 5;
export const CLS = { flag: C_FLAG, ord: C_ORD, smag: C_SMAG, quat: C_QUAT, uvec: C_UVEC, abs: C_ABS };

/** The extrapolated reference of a component of width b <= 32 (section 7.3): B + t mod 2**b. */
export function extrapolate(B, P, b, num, den) {
  if (den === 1 && b < 32) return (B + Math.imul(((B - P) << (32 - b)) >> (32 - b), num)) & ((1 << b) - 1);   // (mod 2**32 is exact mod 2**b)
  let s = B - P;
  s = b === 32 ? (s | 0) : ((s << (32 - b)) >> (32 - b));
  let t;
  if (den === 1) t = s * num;
  else if (s >= 0) t = Math.floor((2 * s * num + den) / (2 * den));
  else t = -Math.floor((2 * -s * num + den) / (2 * den));
  // (B + t is an integer below 2**53 in magnitude: ToInt32 takes it mod 2**32 exactly)
  return b === 32 ? ((B + t) >>> 0) : (((B + t) & (P2[b] - 1)) >>> 0);
}

/** (ref + unzigzag(u)) mod 2**b, for b <= 32. */
export function addZz(ref, u, b) {
  if (b < 32) return (ref + ((u >>> 1) ^ -(u & 1))) & ((1 << b) - 1) & 0x7fffffff;   // u < 2**31
  const d = (u & 1) ? -((u - 1) / 2) - 1 : u / 2;
  return (ref + d) >>> 0;
}

/**
 * The integer test of a smallest-three code (the core's qc_quat_surely_valid): true only where
 * the exact test (PacketCoder.quatValidNum) is true, from q, an upper bound of each component
 * code's shrunk value squared in units of 2**-32 (PacketCoder.qsq): a sum of squares and the
 * largest square together at most 1 - 2**-24 leave sqrt(1 - s) above the largest kept value by
 * far more than the doubles' rounding; anything closer to the boundary takes the exact test.
 */
export function quatSurelyValid(q, a, b, c) {
  const x = q[a], y = q[b], z = q[c];
  let big = x > y ? x : y;
  big = big > z ? big : z;
  return x + y + z + big <= 4294967040;      // 2**32 - 2**8
}
