"""Writes clients/c/tests/schema_cases.json: the C client's own schema-document cases, in the
format of the kit's conformance/schema_cases.json ({"format": 1, "cases": [{"name", "hex", "ok",
"fingerprint"}]}), pinning the one reading of docs/schema-format.md (rules R1-R9): the tester's
repros (/work/scratch/probe-schema/min) and the edges around each rule as C reads them.

"ok" is what the rules say, written here by hand; the fingerprints of the accepted cases are the
Python package's (the reference), and this script stops when Python reads a case otherwise.

    python clients/c/tests/make_schema_cases.py [OUT]      (run from outside the source tree)
"""
import json
import os
import sys

import quantcodec as qc

HERE = os.path.dirname(os.path.abspath(__file__))


def doc(fields, name='"S"', version=None):
    v = "" if version is None else f'"version": {version}, '
    return f'{{"name": {name}, {v}"fields": {fields}}}'.encode()


def one(codec, fname='"f"', **kw):
    return doc(f'[{{"name": {fname}, "codec": {codec}}}]', **kw)


def nz(inner, t):
    return one(f'{{"kind": "NearlyZero", "threshold": {t}, "inner": {inner}}}')


BOOL = '{"kind": "Bool"}'
PLAIN = one(BOOL)
CASES = []


def case(name, data, ok):
    CASES.append((name, data if isinstance(data, bytes) else data.encode(), ok))


# R1: UTF-8, one BOM skipped, invalid bytes and encoded surrogates refused
case("r1_bom", b"\xef\xbb\xbf" + PLAIN, True)
case("r1_bom_twice", b"\xef\xbb\xbf\xef\xbb\xbf" + PLAIN, False)
case("r1_utf16le", PLAIN.decode().encode("utf-16-le"), False)
case("r1_utf16_bom", PLAIN.decode().encode("utf-16"), False)
for tag, raw, ok in [("ff", b"\xff", False), ("c0_80_overlong", b"\xc0\x80", False),
                     ("e0_80_af_overlong", b"\xe0\x80\xaf", False), ("f4_90_80_80_too_big", b"\xf4\x90\x80\x80", False),
                     ("lone_80", b"\x80", False), ("truncated_c3", b"\xc3", False),
                     ("truncated_e2_82", b"\xe2\x82", False),
                     ("surrogate_ed_a0_80", b"\xed\xa0\x80", False), ("surrogate_ed_bf_bf", b"\xed\xbf\xbf", False),
                     ("surrogate_pair_bytes", b"\xed\xa0\xbd\xed\xb8\x80", False),
                     ("ed_9f_bf_U_D7FF", b"\xed\x9f\xbf", True), ("ee_80_80_U_E000", b"\xee\x80\x80", True),
                     ("f4_8f_bf_bf_U_10FFFF", b"\xf4\x8f\xbf\xbf", True), ("emoji", "😀".encode(), True)]:
    case(f"r1_name_{tag}", b'{"name": "S' + raw + b'", "fields": [{"name": "f", "codec": {"kind": "Bool"}}]}', ok)
case("r1_label_surrogate_bytes",
     b'{"name": "S", "fields": [{"name": "f", "codec": {"kind": "Enum", "labels": ["a\xed\xa0\x80", "b"]}}]}', False)
case("r1_escaped_lone_surrogate", one(BOOL, name='"S\\ud800"'), False)      # R3: not text
case("r1_escaped_pair", one(BOOL, name='"S\\ud83d\\ude00"'), True)

# R2: field names are ASCII [A-Za-z_][A-Za-z0-9_]*
for tag, nm, ok in [("underscore", '"_"', True), ("underscore_digit", '"_9"', True), ("upper", '"Z"', True),
                    ("mixed", '"aZ_09"', True), ("escaped_ascii", '"\\u0041bc"', True),
                    ("digit_first", '"9a"', False), ("empty", '""', False), ("dash", '"a-b"', False),
                    ("space", '"a b"', False), ("del", '"a\x7f"', False), ("nul", '"a\\u0000"', False),
                    ("e_acute", '"\u00e9"', False), ("a_e_acute", '"a\u00e9"', False),
                    ("nbsp", '"a\u00a0"', False), ("c1_control", '"a\u0080"', False), ("emoji", '"x\U0001F600"', False),
                    ("cjk_extB", '"\U00020000"', False), ("math_bold_A", '"\U0001D400"', False),
                    ("greek_yot", '"\u037f"', False), ("middot", '"a\u00b7"', False), ("weierstrass", '"\u2118"', False),
                    ("arabic_digit_first", '"\u0663a"', False), ("bom_char", '"\ufeffa"', False),
                    ("escaped_e_acute", '"a\\u00e9"', False), ("escaped_lone_surrogate", '"a\\ud800"', False),
                    ("fullwidth_A", '"\uff21"', False), ("kelvin_sign", '"\u212a"', False)]:
    case(f"r2_field_{tag}", one(BOOL, fname=nm), ok)
case("r2_dict_key_non_ascii", doc('{"\u00e9": {"kind": "Bool"}}'), False)
case("r2_pair_non_ascii", doc('[["a\u00e9", {"kind": "Bool"}]]'), False)
case("r2_dict_key_ascii", doc('{"a_1": {"kind": "Bool"}}'), True)

# R3: the schema's name and Enum labels: any Unicode text without U+0000
case("r3_name_nul", one(BOOL, name='"S\\u0000"'), False)
case("r3_name_only_nul", one(BOOL, name='"\\u0000"'), False)
case("r3_label_nul", one('{"kind": "Enum", "labels": ["a\\u0000b", "a"]}'), False)
case("r3_name_control", one(BOOL, name='"S\\u0001\\u001f"'), True)
case("r3_name_unicode", one(BOOL, name='"\u00dcn\u00efc\u00f6d\u00e9 \U0001F600 \u00a0"'), True)
# ... nor a lone surrogate (a \u escape writes one; no UTF-8 text holds one)
case("r3_name_lone_low", one(BOOL, name='"a\\udc00b"'), False)
case("r3_name_reversed_pair", one(BOOL, name='"\\ude00\\ud83d"'), False)
case("r3_name_high_then_ascii", one(BOOL, name='"\\ud83dx"'), False)
case("r3_name_high_then_escaped_ascii", one(BOOL, name='"\\ud83d\\u0041"'), False)
case("r3_name_pair_then_lone", one(BOOL, name='"\\ud83d\\ude00\\udbff"'), False)
case("r3_label_lone", one('{"kind": "Enum", "labels": ["a", "\\udfff"]}'), False)
case("r3_label_pair", one('{"kind": "Enum", "labels": ["\\ud83d\\ude00", "\\uD83D\\uDE01"]}'), True)
case("r3_label_unicode", one('{"kind": "Enum", "labels": ["\u00e9", "e\u0301", "\\u0001", " "]}'), True)

# R4: -0.0 is 0.0 in the fingerprint's text; a version -0 is 0
case("r4_version_negzero", one(BOOL, version="-0"), True)
case("r4_version_zero", one(BOOL, version="0"), True)
for tag, lit in [("neg_zero", "-0"), ("neg_zero_float", "-0.0"), ("neg_zero_exp", "-0e5"), ("neg_underflow", "-1e-400"),
                 ("neg_half_subnormal", "-2.4703282292062327e-324"), ("neg_long_underflow", "-0." + "0" * 1000 + "1"),
                 ("zero", "0.0")]:
    case(f"r4_bounded_min_{tag}", one(f'{{"kind": "Bounded", "min": {lit}, "max": 1, "bits": 8}}'), True)
    case(f"r4_fixed_offset_{tag}", one(f'{{"kind": "Fixed", "step": 1, "bits": 8, "offset": {lit}}}'), True)
case("r4_nz_threshold_neg_zero", nz(BOOL, "-0"), True)
case("r4_nz_threshold_neg_zero_float", nz(BOOL, "-0.0"), True)
case("r4_bounded_max_neg_zero", one('{"kind": "Bounded", "min": -1, "max": -0.0, "bits": 8}'), True)

# R5: 0 <= version <= 2**63 - 1, an integer literal
for tag, v, ok in [("max", "9223372036854775807", True), ("max_plus_1", "9223372036854775808", False),
                   ("2_64", "18446744073709551616", False), ("20_digits", "10000000000000000000", False),
                   ("19_digits_above", "9999999999999999999", False), ("2_32", "4294967296", True),
                   ("401_digits", "1" + "0" * 400, False), ("5001_digits", "9" * 5001, False),
                   ("negative", "-1", False), ("float", "1.0", False), ("exp", "1e0", False), ("leading_zero", "01", False)]:
    case(f"r5_version_{tag}", one(BOOL, version=v), ok)

# R6: NearlyZero refused when threshold >= the inner codec's reach (doubles)
fx_lo, fx_hi = -8 * 0.1 + 0.05, 7 * 0.1 + 0.05
fx_reach = max(abs(fx_lo), abs(fx_hi))
for tag, inner, below, at in [
        ("bounded", '{"kind": "Bounded", "min": 0, "max": 1, "bits": 8}', "0.99999", "1"),
        ("bounded_neg", '{"kind": "Bounded", "min": -3, "max": 1, "bits": 8}', "2.9", "3"),
        ("bounded_above", '{"kind": "Bounded", "min": 0, "max": 1, "bits": 8}', None, "5"),
        ("powercurve", '{"kind": "PowerCurve", "max": 50, "pow": 2, "bits": 10}', "49.9", "50"),
        ("fixed_signed", '{"kind": "Fixed", "step": 0.5, "bits": 8}', "63.99", "64"),
        ("fixed_unsigned_offset", '{"kind": "Fixed", "step": 1, "bits": 4, "signed": false, "offset": -100}', "99.5", "100"),
        ("fixed_unsigned_offset_hi", '{"kind": "Fixed", "step": 1, "bits": 4, "signed": false, "offset": 100}', "114.5", "115"),
        ("fixed_rounding", '{"kind": "Fixed", "step": 0.1, "bits": 4, "offset": 0.05}',
         repr(fx_reach - 2 ** -52 * fx_reach), repr(fx_reach)),
        ("fixed_u64", '{"kind": "Fixed", "step": 1, "bits": 64, "signed": false}', "18446744073709549568", "18446744073709551615"),
        ("uint4", '{"kind": "UInt", "bits": 4}', "14.5", "15"),
        ("uint64", '{"kind": "UInt", "bits": 64}', "1.844674407370955e19", "18446744073709551616"),
        ("int8", '{"kind": "Int", "bits": 8}', "127.5", "128"),
        ("int64", '{"kind": "Int", "bits": 64}', "9.223372036854775e18", "9223372036854775808"),
        ("bool", BOOL, "0.5", "1"),
        ("intrange", '{"kind": "IntRange", "lo": -5, "hi": 3}', "4.9", "5"),
        ("intrange_min64", '{"kind": "IntRange", "lo": -9223372036854775808, "hi": -1}', "9.223372036854775e18", "9223372036854775808"),
        ("vector", '{"kind": "Vector", "codecs": [{"kind": "Bounded", "min": 0, "max": 1, "bits": 8}, {"kind": "UInt", "bits": 8}]}',
         "254.9", "255"),
        ("vector_first_largest", '{"kind": "Vector", "codecs": [{"kind": "Int", "bits": 10}, {"kind": "Bool"}]}', "511", "512")]:
    if below is not None:
        case(f"r6_nz_{tag}_below", nz(inner, below), True)
    case(f"r6_nz_{tag}_at", nz(inner, at), False)
case("r6_nz_bool_above", nz(BOOL, "1.5"), False)
for tag, inner in [("enum", '{"kind": "Enum", "count": 4}'), ("angle", '{"kind": "Angle", "bits": 8}'),
                   ("half", '{"kind": "Half"}'),
                   ("grid", '{"kind": "Grid", "cell_size": 1, "cell_bits": 4, "offset_bits": 4}'),
                   ("vector_with_angle", '{"kind": "Vector", "codecs": [{"kind": "Bool"}, {"kind": "Angle", "bits": 8}]}')]:
    case(f"r6_nz_{tag}_no_reach", nz(inner, "1e300"), True)
case("r6_nz_threshold_negative", nz(BOOL, "-0.5"), False)
case("r6_nz_threshold_zero", nz(BOOL, "0"), True)

# R8: number literals of any length, correctly rounded
case("r8_long_fraction", one('{"kind": "Bounded", "min": 0.' + "0" * 400 + '1, "max": 1, "bits": 8}'), True)
case("r8_exact_tenth", one('{"kind": "Bounded", "min": 0.1000000000000000055511151231257827021181583404541015625, '
                           '"max": 1, "bits": 8}'), True)
case("r8_tie_even", one('{"kind": "Fixed", "step": 1, "bits": 8, "offset": 9007199254740993}'), True)
case("r8_tie_broken_up", one('{"kind": "Fixed", "step": 1, "bits": 8, "offset": 9007199254740993.' + "0" * 300 + '1}'), True)
case("r8_long_integer_float", one('{"kind": "Bounded", "min": 0, "max": 1' + "0" * 300 + ', "bits": 8}'), True)
case("r8_long_integer_inf", one('{"kind": "Bounded", "min": 0, "max": 1' + "0" * 400 + ', "bits": 8}'), False)

# R9: an unknown kind, whatever it names
for k in ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf", "bool", "", "Bool "]:
    case(f"r9_kind_{k or 'empty'}".replace(" ", "_"), one(json.dumps({"kind": k})), False)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "schema_cases.json")
    rows, wrong = [], []
    names = set()
    for name, data, ok in CASES:
        assert name not in names, name
        names.add(name)
        try:
            fp = qc.Schema.from_json(data).fingerprint
        except qc.SchemaError as e:
            fp, err = None, str(e)
        if (fp is not None) != ok:
            wrong.append(f"{name}: the rules say {'ok' if ok else 'refused'}, Python "
                         f"{'accepts' if fp else 'refuses: ' + err[:100]}")
        rows.append({"name": name, "hex": data.hex(), "ok": ok, "fingerprint": fp if ok else None})
    if wrong:
        sys.exit("Python reads these otherwise than the rules:\n  " + "\n  ".join(wrong))
    with open(out, "w") as fh:
        json.dump({"format": 1, "cases": rows}, fh, indent=0)
        fh.write("\n")
    print(f"{out}: {len(rows)} cases")


if __name__ == "__main__":
    main()
