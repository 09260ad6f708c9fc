// SipHash-2-4 and the key derivation of docs/wire-format.md section 17: the paper's 64 vectors
// (key 00..0f, message 00..n-1), the page's two, and derived keys computed by the plain-Python
// reference support/siphash_ref.py (`python3 support/siphash_ref.py` prints them again).
import test from 'node:test';
import assert from 'node:assert/strict';
import * as qc from '../quantcodec.mjs';
import { hexBytes, toHex } from '../support/helpers.mjs';

const KEY = Uint8Array.from({ length: 16 }, (_, i) => i);
const seq = (n) => Uint8Array.from({ length: n }, (_, i) => i & 0xff);

// SipHash-2-4(00..0f, 00..n-1) for n = 0..63, as u64 (the reference's vectors.h read little-endian)
const OFFICIAL = [
  '726fdb47dd0e0e31', '74f839c593dc67fd', '0d6c8009d9a94f5a', '85676696d7fb7e2d',
  'cf2794e0277187b7', '18765564cd99a68d', 'cbc9466e58fee3ce', 'ab0200f58b01d137',
  '93f5f5799a932462', '9e0082df0ba9e4b0', '7a5dbbc594ddb9f3', 'f4b32f46226bada7',
  '751e8fbc860ee5fb', '14ea5627c0843d90', 'f723ca908e7af2ee', 'a129ca6149be45e5',
  '3f2acc7f57c29bdb', '699ae9f52cbe4794', '4bc1b3f0968dd39c', 'bb6dc91da77961bd',
  'bed65cf21aa2ee98', 'd0f2cbb02e3b67c7', '93536795e3a33e88', 'a80c038ccd5ccec8',
  'b8ad50c6f649af94', 'bce192de8a85b8ea', '17d835b85bbb15f3', '2f2e6163076bcfad',
  'de4daaaca71dc9a5', 'a6a2506687956571', 'ad87a3535c49ef28', '32d892fad841c342',
  '7127512f72f27cce', 'a7f32346f95978e3', '12e0b01abb051238', '15e034d40fa197ae',
  '314dffbe0815a3b4', '027990f029623981', 'cadcd4e59ef40c4d', '9abfd8766a33735c',
  '0e3ea96b5304a7d0', 'ad0c42d6fc585992', '187306c89bc215a9', 'd4a60abcf3792b95',
  'f935451de4f21df2', 'a9538f0419755787', 'db9acddff56ca510', 'd06c98cd5c0975eb',
  'e612a3cb9ecba951', 'c766e62cfcadaf96', 'ee64435a9752fe72', 'a192d576b245165a',
  '0a8787bf8ecb74b2', '81b3e73d20b49b6f', '7fa8220ba3b2ecea', '245731c13ca42499',
  'b78dbfaf3a8d83bd', 'ea1ad565322a1a0b', '60e61c23a3795013', '6606d7e446282b93',
  '6ca4ecb15c5f91e1', '9f626da15c9625f3', 'e51b38608ef25f57', '958a324ceb064572',
];

// support/siphash_ref.py: mk of a shared key, sub(label) under it
const DERIVED = [
  {
    'key': '6b',
    'mk': 'cd9fd00f573a67067b982eaee6abfff9',
    'sub': {
      '7175616e74636f6465632068656c6c6f': 'e5ee09fdfdd74a4c9ec744be6c4c5bd3',
      '7175616e74636f6465632068656c6c6f2072657175657374': 'ff314aa43e7d6ac1b159c19c2e1764f0',
      '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262750': 'dd0499228fb10edb3f4f7c2468f65c62',
      '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262752': 'bc6347612e29e4655393b06be3bd950d'
    }
  },
  {
    'key': '000102030405060708090a0b0c0d0e0f',
    'mk': '13314e21ed015d7b7d9a9980d89475dc',
    'sub': {
      '7175616e74636f6465632068656c6c6f': '3f6cf6f197a49aa0709e58ad2e97abba',
      '7175616e74636f6465632068656c6c6f2072657175657374': '1d0b63e49683f4265e248f95d1c6ac1f',
      '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262750': '62a212aaa95f3715e8a82063d43b8e7e',
      '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262752': 'ae573e002bd01af27d3a6d932a098405'
    }
  },
  {
    'key': '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfe',
    'mk': '2754c2f3b53d8151ccbd2b4dab70bacd',
    'sub': {
      '7175616e74636f6465632068656c6c6f': 'ae3ee1fc52228e22c40df3cb85691291',
      '7175616e74636f6465632068656c6c6f2072657175657374': 'da4619b25e77fd953ba6f92d1bf9caf4',
      '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262750': '8cc979c650ea92e970b0cb701fed9e67',
      '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262752': '157e11eea3f8fa9968e93c0d705c7a28'
    }
  },
  {
    'key': '636f727265637420686f727365206261747465727920737461706c65',
    'mk': '838bacd34d51cc41e04a2e8d2d2bfba2',
    'sub': {
      '7175616e74636f6465632068656c6c6f': '18cf8004b68073d23dc045200cca5dce',
      '7175616e74636f6465632068656c6c6f2072657175657374': '2bf9a8cb9a89e25a501ecc6bcb220a2f',
      '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262750': 'c9438019385c3b8076cbf0be68b7281b',
      '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262752': '43a6ee6b64210d658cb190824ec360f3'
    }
  }
];

test('siphash24: the 64 vectors of the SipHash paper (every tail length, 0 to 7 full words)', () => {
  for (let n = 0; n < 64; n++) assert.equal(qc.siphash24(KEY, seq(n)).toString(16).padStart(16, '0'), OFFICIAL[n], `message of ${n} bytes`);
});

test('siphash24: the two vectors of wire-format section 17', () => {
  assert.equal(qc.siphash24(KEY, seq(15)), 0xa129ca6149be45e5n);
  assert.equal(qc.siphash24(KEY, new Uint8Array(0)), 0x726fdb47dd0e0e31n);
});

test('siphash24: a subarray is hashed as its own bytes (offsets inside a larger buffer)', () => {
  const big = seq(100);
  for (const [a, b] of [[3, 3], [5, 20], [17, 80], [1, 64]]) {
    assert.equal(qc.siphash24(KEY, big.subarray(a, b)), qc.siphash24(KEY, big.slice(a, b)), `bytes ${a}..${b}`);
  }
});

test('siphash24: a long message, every bit of the key and of the message matters', () => {
  const msg = seq(1200), h = qc.siphash24(KEY, msg);
  for (const bit of [0, 7, 8 * 600 + 3, 8 * 1199 + 7]) {
    const m = msg.slice(); m[bit >> 3] ^= 1 << (bit & 7);
    assert.notEqual(qc.siphash24(KEY, m), h, `message bit ${bit}`);
  }
  for (let bit = 0; bit < 128; bit += 9) {
    const k = KEY.slice(); k[bit >> 3] ^= 1 << (bit & 7);
    assert.notEqual(qc.siphash24(k, msg), h, `key bit ${bit}`);
  }
});

test('siphash24: a key that is not 16 bytes is refused, naming its length', () => {
  assert.throws(() => qc.siphash24(new Uint8Array(15), seq(1)), /16 bytes, got 15/);
  assert.throws(() => qc.siphash24('0123456789abcdef0', seq(1)), /16 bytes, got 17/);
});

test('masterKey and macKey: the derivation of section 17 as the Python reference computes it', () => {
  for (const d of DERIVED) {
    const key = hexBytes(d.key);
    assert.equal(toHex(qc.masterKey(key)), d.mk, `mk of the ${key.length}-byte key ${d.key.slice(0, 16)}`);
    for (const [label, want] of Object.entries(d.sub)) assert.equal(toHex(qc.macKey(key, hexBytes(label))), want, `sub(${label})`);
  }
  // a label given as text is its ASCII bytes
  assert.equal(toHex(qc.macKey(hexBytes('6b'), 'quantcodec hello')), DERIVED[0].sub[toHex(new TextEncoder().encode('quantcodec hello'))]);
});

test('masterKey: a shared key of 0 or 256 bytes, or not bytes, is refused', () => {
  assert.throws(() => qc.masterKey(new Uint8Array(0)), /1 to 255 bytes, got 0/);
  assert.throws(() => qc.masterKey(new Uint8Array(256)), /1 to 255 bytes, got 256/);
  assert.throws(() => qc.masterKey(12), TypeError);
});
