/* quantcodec.h - a single-header C99 client of the quantcodec wire format (docs/wire-format.md).

   (Assembled from its parts in clients/c/src/ by clients/c/assemble: edit those, then run it.)

   Schemas from their JSON, the fingerprint, every codec's dequantize (and quantize for the scalar,
   vector and quaternion codecs), valid(), one-record encode/decode, and the snapshot stream
   decoder with the datagram layer (CRC-32C check keyed with the stream, or SipHash-2-4 tags under
   a shared key; hello, fragments, history window, extrapolation, duplicates and ambiguous numbers,
   the max_bytes limits of wire-format 19), the session client (qc_client: the decoder plus
   the acks and hello requests it owes the server, and its keep-alives, wire-format 18), and
   snapshot interpolation (qc_interp, docs/interpolation.md).

   Use: in ONE C or C++ file

       #define QUANTCODEC_IMPLEMENTATION
       #include "quantcodec.h"

   and include it plainly everywhere else. C99, the C standard library only, no global state.

   Arguments, lifetimes, threads (README: "Arguments, lifetimes, threads"). Every qc_*_free takes
   NULL (nothing done, as free(NULL)), a zero-filled struct, one whose init/parse failed, or
   one freed already. NULL is allowed for err, an allocator (malloc/free), qc_decoder_init's
   cfg, a key with key_len 0, clamped/nclamped, a datagram's data when len is 0, and
   qc_schema_slot_table's buf when cap is 0. ANY OTHER NULL POINTER IS THE CALLER'S ERROR
   (undefined behaviour, not checked), and so is any use of a freed object except freeing it
   again or initializing it again. A parsed qc_schema is read-only: one may be shared by any
   number of threads, decoders, clients and buffers, and must outlive them. A qc_decoder,
   qc_client or qc_interp belongs to one thread at a time (no locks inside). The functions that
   only read a schema or codec (dequantize, quantize, qc_field_values, records, checks) may run
   in any number of threads at once.
   Every byte the library holds comes from the allocator the caller gives (qc_allocator; NULL
   members: malloc/free), counted against the caller's alloc_limit; see
   qc_decoder_worst_case_bytes for the bound of a decoder, and max_bytes for the wire format's
   bound (256 MiB by default) that every client refuses alike. No FMA contraction may happen in the
   codecs' arithmetic: the header turns it off for its own functions under GCC (any
   -ffp-contract) and Clang (except -ffp-contract=fast); -ffp-contract=off is the safe build
   flag everywhere. Decoded doubles are then bit for bit those of the Python package, except
   PowerCurve with a `pow` other than 1 or 2, which calls the C library's pow() (as the Python
   package's C core does): a C library whose pow() is not correctly rounded may differ there in
   the last bit. Parsing a schema uses strtod() (correctly rounded in glibc, musl, and the
   Microsoft CRT since 2015) in the "C" locale: a program that calls setlocale() with a decimal
   comma must parse schemas before it does, or in the "C" locale.

   Licence: the repository's LICENSE. */
#ifndef QUANTCODEC_H
#define QUANTCODEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
   Codec kinds (the numbers are the hello's kind bytes, wire-format section 13). */
enum {
    QC_BOUNDED = 1, QC_FIXED = 2, QC_ANGLE = 3, QC_POWERCURVE = 4, QC_HALF = 5, QC_UINT = 6,
    QC_INT = 7, QC_BOOL = 8, QC_ENUM = 9, QC_QUAT = 10, QC_UNITVECTOR = 11, QC_VECTOR = 12,
    QC_GRID = 13, QC_NEARLYZERO = 14, QC_INTRANGE = 15
};

/* Results of the datagram decoder (qc_result.status) and error kinds (wire-format section 14). */
enum {
    QC_SNAPSHOT = 1,        /* a packet completed and decoded: qc_result.snapshot */
    QC_PENDING = 0,         /* a fragment that completes nothing, or a hello adopted / ignored */
    QC_E_NO_HELLO = -1,
    QC_E_CHECK = -2,
    QC_E_HELLO = -3,
    QC_E_SCHEMA = -4,
    QC_E_FRAGMENT = -5,
    QC_E_BASELINE = -6,
    QC_E_MALFORMED = -7,
    QC_E_MEMORY = -8,       /* the caller's allocator or alloc_limit refused (not a wire kind) */
    QC_E_LIMITS = -9        /* the hello or packet would pass max_bytes (wire-format section 19) */
};

/* wire-format section 19: the default bound on what a client holds (256 MiB, in its cost model) */
#define QC_MAX_BYTES_DEFAULT ((size_t)268435456u)
/* the fast path's Exp-Golomb look-up tables a decoder keeps: how many, the bits they look at
   (1 to 11; define QC_EG_TABLE_BITS before including to change it), the bytes of one. On the
   bench, 10 bits: one tick decoded over and over was fastest with 8 (the tables staying in L1
   beside the rows), the whole stream with 9 or 10 (fewer codes the long way, whose branch a
   stream mispredicts); 11 was slower at both */
#define QC_EG_TABLES 16
#ifndef QC_EG_TABLE_BITS
#define QC_EG_TABLE_BITS 10
#endif
#if QC_EG_TABLE_BITS < 1 || QC_EG_TABLE_BITS > 11
#error "QC_EG_TABLE_BITS: 1 to 11"
#endif
#define QC_EG_TABLE_BYTES (2 << QC_EG_TABLE_BITS)
/* the longest reply a client makes (a keyed hello request: 26 + 8 bytes; wire-format 18) */
#define QC_REPLY_MAX 34
/* qc_client_init's nonce: draw one (see qc_client_init) */
#define QC_NONCE_RANDOM (-1)
/* wire-format 18's keep-alives: qc_client_reply makes a reply every QC_KEEPALIVE_CALLS-th call
   while none is due (the 31 calls before it returned 0) */
#define QC_KEEPALIVE_CALLS 32

/* Quantize status (quat / unit vector) */
enum { QC_Q_OK = 0, QC_Q_ZERO = 1, QC_Q_NONFINITE = 2, QC_Q_RANGE = 3 };

/* Memory: every allocation goes through this. alloc returns memory aligned for any type, or
   NULL; free gets the size that was asked. NULL alloc/free: malloc/free. */
typedef struct qc_allocator {
    void *(*alloc)(void *ud, size_t size);
    void (*free)(void *ud, void *ptr, size_t size);
    void *ud;
} qc_allocator;

/* An error: a message naming what and where. */
typedef struct qc_error {
    int kind;               /* QC_E_* for the decoder, -1 for schema and record errors */
    char message[320];
} qc_error;

/* One codec (a node of the schema's codec tree). Parameters as in docs/codecs.md. */
typedef struct qc_codec {
    int kind;               /* QC_BOUNDED .. QC_INTRANGE */
    int bits;               /* bits of one value on the wire (NearlyZero: 1 + inner, the most) */
    int mode;               /* Bounded/Quat: 0 endpoints, 1 bins, 2 midpoint; Fixed/Angle: 1 if signed */
    int cbits;              /* Quat/UnitVector: bits per coordinate; Grid: offset_bits */
    int cell_bits;          /* Grid */
    int deg;                /* Angle: 1 for unit "deg" */
    double lo, hi, R, L;    /* the kernel's descriptor (quantcodec/_kernels.pxd qdesc) */
    uint64_t maxcode;
    int64_t smin, smax;     /* Int, signed Fixed, Grid; IntRange: lo, hi (maxcode = hi - lo) */
    double fmin, fmax;
    double p1, p2;          /* the spec's float parameters: Bounded min,max; Fixed step,offset;
                               PowerCurve max,pow; Grid cell_size; NearlyZero threshold (p1) */
    uint64_t count;         /* Enum: the number of variants */
    char **labels;          /* Enum with labels (count of them), else NULL */
    int ninner;             /* Vector: components; NearlyZero: 1 */
    struct qc_codec *inner; /* Vector: its components; NearlyZero: its inner codec */
} qc_codec;

/* Slot roles (wire-format section 2) */
enum { QC_ROLE_FLAG = 1, QC_ROLE_ORD = 2, QC_ROLE_QUAT = 3, QC_ROLE_UVEC = 4, QC_ROLE_ABS = 5 };

typedef struct qc_slot {
    const qc_codec *codec;  /* NULL for a NearlyZero flag */
    int bits;               /* wire width (a flag: 1) */
    int field;
    int span;               /* a flag: how many slots it governs */
    int sign;               /* codes are two's complement (Int, signed Fixed) */
    int role;               /* QC_ROLE_* */
    int comp;               /* first delta component, or -1 */
    int vclass;             /* (internal) how its codes are checked: see qc__slot_ok */
    const double *qtab;     /* (internal) Quat of <= 12 bits: each component code's shrunk value */
    const uint32_t *qsq;    /* (internal) the same: an upper bound of its square, in units of 2**-32 */
} qc_slot;

typedef struct qc_comp {    /* a delta component (wire-format section 2) */
    int slot, shift, b, smag;
    uint64_t mask;          /* 2**b - 1 */
    uint64_t smt;           /* smag: 2**(b-1) - 1 (the magnitude bits), else 0 */
} qc_comp;

typedef struct qc_field {
    const char *name;
    const qc_codec *codec;
    int first_slot, nslots; /* its slots: first_slot .. first_slot + nslots - 1 */
    int first_comp, ncomps; /* its delta components */
    int nvalues;            /* doubles qc_field_values writes: 1, k (Vector), 3 (UnitVector), 4 */
    int implied_flag;       /* the field is one NearlyZero */
    int implied_flip;       /* the field is one 1-bit unordered slot */
    uint32_t h;             /* first 4 bytes (LE) of the SHA-256 of its codec's canonical JSON */
} qc_field;

typedef struct qc_schema {
    const char *name;
    const char *version_text;   /* the version as decimal text (0 .. 2**63 - 1; -0 written 0) */
    uint32_t version32;         /* the version mod 2**32 (the hello's) */
    int nfields, nslots, ncomps, ncodecs;
    qc_field *fields;
    qc_slot *slots;
    qc_comp *comps;
    qc_codec *codecs;
    int max_bits, min_bits;     /* the most / fewest bits of one record */
    char fingerprint[17];       /* 16 lowercase hex digits */
    char *canonical;            /* the canonical JSON the fingerprint hashes */
    size_t canonical_len;
    qc_allocator al;
    void *chunks;               /* (internal) its memory */
} qc_schema;

/* A decoded snapshot: ids ascending, one row of nslots codes per entity (signed codes as two's
   complement in uint64; a flag 0's governed slots hold 0). Read-only, ids and rows included: the
   decoder decodes later packets against the snapshots it returned. */
typedef struct qc_snapshot {
    uint16_t seq;
    size_t n;
    uint64_t *ids;
    uint64_t *rows;         /* n * schema->nslots */
    size_t bytes;           /* (internal) its allocation */
} qc_snapshot;

typedef struct qc_decoder_config {
    qc_allocator allocator;     /* NULL members: malloc/free */
    size_t max_bytes;           /* wire-format 19: the bound in its cost model, kind `limits`
                                   past it (0: QC_MAX_BYTES_DEFAULT, 256 MiB; SIZE_MAX: none) */
    const uint8_t *key;         /* wire-format 17: the shared key (1..255 bytes), or NULL */
    size_t key_len;
    size_t alloc_limit;         /* every byte allocated, at most: kind `memory` past it (0: none) */
    size_t max_entities;        /* entities of one snapshot, at most (0: 1 << 24) */
    int max_history;            /* a hello with a larger history is refused, kind hello (0: 32767;
                                   negative: qc_decoder_init refuses it) */
    int max_partials;           /* partial packets held at once (0: 1024); beyond, they give way as
                                   when their chunks pass 256 * max_datagram (wire-format 12, rule
                                   4): the furthest behind latest first, then the one begun earliest */
} qc_decoder_config;

typedef struct qc_result {
    int status;                     /* QC_SNAPSHOT, QC_PENDING or QC_E_* */
    const qc_snapshot *snapshot;    /* QC_SNAPSHOT: valid until the next qc_decoder_* call */
    int ack;                        /* 1: send ack_seq to the server now (wire-format 15) */
    uint16_t ack_seq;
    int adopted;                    /* 1: this datagram was a hello of a new stream, adopted */
    const char *kind;               /* "no-hello", ..., "malformed", "limits", "memory"; NULL if not refused */
    char message[320];              /* what and where, for a refusal or a hello */
} qc_result;

typedef struct qc_partial qc_partial;

typedef struct qc_decoder {
    const qc_schema *schema;
    qc_allocator al;
    size_t alloc_limit, max_entities, bytes;
    uint64_t max_bytes;             /* wire-format 19's bound */
    uint64_t held_cost;             /* wire-format 19's cost of the held snapshots */
    int max_history, max_partials, npartials;
    /* the checks: T bytes, CRC-32C seeds or SipHash keys (wire-format 11, 17) */
    int keyed, tlen;
    uint8_t mk[16], k_h[16], k_q[16], k_p[16], k_f[16], k_r[16];
    /* the stream (the adopted hello) */
    int adopted;
    int history, keep, predict, max_datagram;
    size_t chunk;                   /* the fragments' chunk size C = max_datagram - 8 - T */
    uint64_t stream_id, started;
    uint8_t stream_key[40];         /* K (wire-format 11) */
    uint32_t seed_p, seed_f, seed_r;
    uint8_t *hello_bytes;           /* the adopted hello */
    size_t hello_len;
    /* the snapshots held: seq -> snapshot, at most keep of them */
    int latest;                     /* -1: none */
    int nheld, held_cap;
    uint16_t *held_seq;
    qc_snapshot **held;
    int nambiguous;
    uint64_t ambiguous[1024];       /* one bit per sequence number */
    qc_snapshot *loose;             /* the last snapshot returned and not held */
    /* reassembly */
    qc_partial *partials;           /* in the order begun */
    size_t chunk_bytes;
    uint64_t begun;
    /* scratch of the packet decoder (grown on demand, counted in bytes) */
    void *scratch;
    size_t scratch_size;
    /* the fast path's Exp-Golomb look-up tables, one per (k, b) met, at most QC_EG_TABLES of
       QC_EG_TABLE_BYTES each, kept across packets (counted in bytes) */
    uint16_t *egt[QC_EG_TABLES];
    uint16_t egt_key[QC_EG_TABLES];
    int negt, egt_next;
    uint32_t egt_used;              /* the tables the current packet uses */
} qc_decoder;

/* ---- schemas -------------------------------------------------------------------------------
   qc_schema_parse: the schema from its JSON text (docs/schema-format.md and its "one reading",
   as every client reads it: strict JSON in well-formed UTF-8, one leading BOM skipped; field
   names ASCII [A-Za-z_][A-Za-z0-9_]*; no U+0000 in the name or a label; version 0 .. 2**63 - 1;
   at most 65,535 fields and Vector components). 0, or -1 with err set (what and where).
   qc_schema_free releases it. */
int qc_schema_parse(qc_schema *s, const char *json, size_t len, const qc_allocator *al, qc_error *err);
void qc_schema_free(qc_schema *s);
/* The slot table as text ("slot 0: position[0] Bounded 18 bits ord\n..."), into buf. */
size_t qc_schema_slot_table(const qc_schema *s, char *buf, size_t cap);

/* ---- codecs --------------------------------------------------------------------------------
   A scalar code is carried as uint64_t; signed codes (Int, signed Fixed) as their two's
   complement. Vector: one code per component; NearlyZero: flag then the inner's codes. */
int qc_valid(const qc_codec *c, uint64_t code);                 /* scalar, Quat, UnitVector */
int qc_valid_codes(const qc_codec *c, const uint64_t *codes);   /* any codec: its code tuple */
/* Dequantize: scalars write 1 double, Quat 4, UnitVector 3, Vector k, NearlyZero its inner's
   count. 0 ok, -1 invalid code (nothing meaningful written). */
int qc_dequantize(const qc_codec *c, uint64_t code, double *out);
int qc_dequantize_codes(const qc_codec *c, const uint64_t *codes, double *out);
/* Quantize a float scalar (Bounded, Fixed, Angle, PowerCurve, Half, Grid): the code; *clamped
   (may be NULL) is set when the value was clamped or substituted (NaN, inf). */
uint64_t qc_quantize(const qc_codec *c, double x, int *clamped);
/* Exact scalars (UInt, Int, Bool, Enum, IntRange: value - lo): 0 ok, QC_Q_RANGE if the value does not fit. */
int qc_quantize_int(const qc_codec *c, int64_t value, uint64_t *code);
int qc_quantize_uint(const qc_codec *c, uint64_t value, uint64_t *code);
/* Quat (4 doubles x, y, z, w) and UnitVector (3 doubles): QC_Q_OK, QC_Q_ZERO or QC_Q_NONFINITE. */
int qc_quantize_quat(const qc_codec *c, const double *q, uint64_t *code);
int qc_quantize_uvec(const qc_codec *c, const double *v, uint64_t *code);
/* Any float codec from its values (Vector: k values; NearlyZero: its inner's): codes written as
   qc_dequantize_codes reads them. QC_Q_OK or the failure. Exact kinds take the value's integer. */
int qc_quantize_values(const qc_codec *c, const double *x, uint64_t *codes, int *nclamped);
/* Number of codes of a codec's code tuple (Vector k, NearlyZero 1 + inner's, else 1) and of
   doubles of its value. */
int qc_ncodes(const qc_codec *c);
int qc_nvalues(const qc_codec *c);
/* One field's values from a decoded snapshot's row (the entity's nslots codes, valid: the
   decoder checked them; they are not checked again): nvalues doubles. 0, or -1 (nothing
   written) when field is not 0 .. nfields - 1, e.g. qc_field_index's -1. */
int qc_field_values(const qc_schema *s, int field, const uint64_t *row, double *out);
/* The index of the field of that name, or -1 when the schema has none (check it: a schema of
   another version may lack or rename a field). */
int qc_field_index(const qc_schema *s, const char *name);

/* ---- records (wire-format section 3) -------------------------------------------------------
   row: nslots codes. encode: padded to a byte, *outlen bytes written: 0, or -1 with err (an
   invalid code, or cap too small). decode: 0 ok or -1 with err (invalid code, short, long). */
int qc_record_encode(const qc_schema *s, const uint64_t *row, uint8_t *out, size_t cap, size_t *outlen, qc_error *err);
int qc_record_decode(const qc_schema *s, const uint8_t *buf, size_t len, uint64_t *row, qc_error *err);

/* ---- the stream decoder --------------------------------------------------------------------- */
int qc_decoder_init(qc_decoder *d, const qc_schema *s, const qc_decoder_config *cfg, qc_error *err);
void qc_decoder_free(qc_decoder *d);
/* One datagram, as it arrived. The result says what it was; a refusal changes nothing. */
int qc_decoder_datagram(qc_decoder *d, const uint8_t *data, size_t len, qc_result *res);
/* A bare packet (sections 6-7) whose integrity the transport already checked: decoded and kept
   as a datagram's packet is. Before a hello, the window is that of history 64. */
int qc_decoder_packet(qc_decoder *d, const uint8_t *packet, size_t len, qc_result *res);
int qc_decoder_latest(const qc_decoder *d);                    /* -1 before the first */
const qc_snapshot *qc_decoder_get(const qc_decoder *d, int seq);  /* a held baseline, or NULL */
/* The most bytes a decoder can hold for this schema, history, entity count and datagram budget
   (every held snapshot of max_entities, the decode scratch, the reassembly buffers, the
   Exp-Golomb look-up tables). history 1..32767 and max_datagram 64..65507 (a hello's ranges,
   wire-format 13), max_partials >= 0 (0: 1024, as in qc_decoder_config): outside them, 0 (an
   error: no real bound is 0). SIZE_MAX when the bound does not fit a size_t (saturated). */
size_t qc_decoder_worst_case_bytes(const qc_schema *s, int history, size_t max_entities, int max_datagram, int max_partials);
/* Memory a snapshot of n entities takes: sizeof(qc_snapshot) rounded up to 16 (48 on 64-bit
   platforms) + 8 * n * (1 + nslots); SIZE_MAX when that does not fit a size_t (saturated). */
size_t qc_snapshot_bytes(const qc_schema *s, size_t n);
/* wire-format 19's cost model: a held snapshot of n entities (256 + n * (8 + 8 * nslots);
   UINT64_MAX when that does not fit, saturated), and what the held snapshots cost now (their
   sum) plus reassembly's bound (256 * max_datagram). */
uint64_t qc_snapshot_cost(const qc_schema *s, uint64_t n);
uint64_t qc_decoder_cost(const qc_decoder *d);

/* ---- the session client (wire-format 18): a decoder, and the replies it owes the server ------
   qc_client_init: key NULL (key_len 0) or the shared key (1..255 bytes); max_bytes 0 for the
   default (256 MiB); nonce: the client's 32-bit incarnation id (0 .. 2**32 - 1), or
   QC_NONCE_RANDOM to draw one from what portable C offers (time, clock, addresses,
   /dev/urandom where it exists): a game should pass its own random number (from the OS's
   CSPRNG), since two clients started in the same second on a platform without /dev/urandom
   may draw alike. 0, or -1 with err (a key of 0 or over 255 bytes, a nonce out of range). */
typedef struct qc_client {
    qc_decoder dec;
    uint32_t nonce, rseq;
    int due;                        /* a reply is owed (the due rule of wire-format 18; 1 at the start) */
    int idle;                       /* the calls of qc_client_reply in a row that returned 0 (0 .. 31):
                                       the next call makes a keep-alive when it is 31 */
} qc_client;
int qc_client_init(qc_client *c, const qc_schema *s, const uint8_t *key, size_t key_len, size_t max_bytes, int64_t nonce, qc_error *err);
/* The same with a decoder config (allocator, limits, key). */
int qc_client_init_config(qc_client *c, const qc_schema *s, const qc_decoder_config *cfg, int64_t nonce, qc_error *err);
void qc_client_free(qc_client *c);
/* One datagram from the server: as qc_decoder_datagram (the result, a refusal changes nothing),
   and marks a reply due after a view, an adopted hello, or a refusal of kind no-hello or
   baseline. (A new client has one due already: its first reply, a hello request, asks the
   server to connect it, before anything has arrived.) */
int qc_client_receive(qc_client *c, const uint8_t *data, size_t len, qc_result *res);
/* The reply to send now: its length (at most QC_REPLY_MAX) written to out, an ack when a stream
   is adopted, a hello request otherwise, when a reply is due or it is a keep-alive's turn; else
   0. Keep-alives (wire-format 18): a call that would return 0 makes the reply all the same when
   the 31 calls before it, in a row, returned 0 (every QC_KEEPALIVE_CALLS-th call while none is
   due), so that a restarted server, which knows no client, hears of this one. A reply made
   clears the due mark, starts that count again (idle = 0) and counts rseq up. Call it once at
   the start (to say hello), then ONCE A TICK OR A FRAME, whether datagrams arrived or not (and
   after every datagram if you like): a client that calls it only after datagrams sends nothing
   when none arrive, and a restarted server never hears of it. */
size_t qc_client_reply(qc_client *c, uint8_t *out);

/* ---- keyed checks (wire-format 17) ----------------------------------------------------------
   SipHash-2-4 of data under a 16-byte key; the master key of a shared key (-1 unless 1..255
   bytes); a label's sub key. */
uint64_t qc_siphash(const uint8_t key[16], const uint8_t *data, size_t len);
int qc_mac_master(const uint8_t *key, size_t key_len, uint8_t mk[16]);
void qc_mac_sub(const uint8_t mk[16], const uint8_t *label, size_t len, uint8_t out[16]);

/* ---- snapshot interpolation (docs/interpolation.md) -----------------------------------------
   A buffer of at most `capacity` views (their values, dequantized), sorted by tick (the views'
   seq unwrapped against the newest pushed), sampled at a render time t in ticks: linear fields
   interpolated, angles along the shortest arc, Quat (q and -q alike) and UnitVector by nlerp,
   exact data held; past the newest view a bounded extrapolation (max_extrapolation ticks),
   before the oldest the oldest held. Every operation a correctly rounded +, -, *, /, sqrt or
   floor in the doc's order: the same bits as Python's quantcodec.interpolation. */
typedef struct qc_interp_stats {
    uint64_t pushed, dropped, late, extrapolated, early;
} qc_interp_stats;

/* What qc_interp_sample gives (valid until the next qc_interp_* call on the buffer). */
typedef struct qc_interp_frame {
    size_t n;               /* entities: view a's */
    const uint64_t *ids;    /* ascending */
    const double *values;   /* n rows of ip->nvalues doubles; a field's at ip->offset[field] */
    int64_t a, b;           /* the ticks blended; b valid when has_b */
    int has_b;              /* 0: held or extrapolated */
    double alpha;           /* the blend (extrapolating: the x of the doc; 0 when held) */
} qc_interp_frame;

typedef struct qc_interp_view { int64_t tick; size_t n; uint64_t *ids; double *values; size_t bytes; } qc_interp_view;

typedef struct qc_interp {
    const qc_schema *schema;
    qc_allocator al;
    int capacity;
    double max_extrapolation;
    int nvalues;                /* doubles per entity: every field's qc_nvalues */
    int *offset;                /* per field: its first column */
    int *frule;                 /* (internal) per field: 0 per column, 1 Quat, 2 UnitVector */
    int *crule;                 /* (internal) per column: 0 linear, 1 angle, 2 held */
    double *cfull, *clo;        /* (internal) per column: an angle's turn and low end */
    int nviews;
    qc_interp_view *views;      /* ascending by tick */
    int has_newest, has_last;
    int64_t newest;             /* the newest tick pushed */
    double last_t;              /* the latest render time sampled */
    qc_interp_stats stats;
    double *out;                /* (internal) the frame's values */
    size_t out_cap;
    size_t bytes;               /* what the buffer holds now, from the allocator */
} qc_interp;

/* capacity >= 2, 0 <= max_extrapolation < inf; al NULL: malloc/free. 0, or -1 with err. */
int qc_interp_init(qc_interp *ip, const qc_schema *s, int capacity, double max_extrapolation, const qc_allocator *al, qc_error *err);
void qc_interp_free(qc_interp *ip);
/* The unwrapped tick of a 16-bit seq, relative to the newest view pushed. */
int64_t qc_interp_tick(const qc_interp *ip, uint16_t seq);
/* A decoded view: 1 kept, 0 dropped (a tick held already, or older than every view of a full
   buffer), -1 when the allocator refused (nothing changed), -2 when the view's rows are not
   this schema's width (nothing changed).
   THE VIEW MUST COME FROM A DECODER OR CLIENT OF THIS BUFFER'S SCHEMA (res.snapshot of
   qc_client_receive / qc_decoder_*). Its rows are read as n * schema->nslots valid codes of
   this schema, unchecked: a view of another width is refused (-2, known from its `bytes`), but
   one of another schema of the same slot count is not detectable and gives meaningless values.
   A view built by the caller must set bytes to 0 and hold valid codes of this schema, ids
   ascending. */
int qc_interp_push(qc_interp *ip, const qc_snapshot *view);
/* The frame at render time t: 0, or -1 (nothing pushed yet, or the allocator refused). */
int qc_interp_sample(qc_interp *ip, double t, qc_interp_frame *out);
/* Every view and the latest render time forgotten (stats go on counting; the views' memory
   freed): the next view pushed starts a new timeline, its tick its seq (docs/interpolation.md,
   reset()). Call it when the client adopts a new stream (res.adopted of qc_client_receive is 1):
   a restarted server counts its ticks from its own start, and its views, unwrapped against the
   old stream's newest, would be older than every view of a full buffer and dropped. A frame
   sampled before is invalid after it. A zero-filled or freed buffer: nothing done. */
void qc_interp_reset(qc_interp *ip);

/* ---- pieces, exposed for tests and tools ---------------------------------------------------- */
uint32_t qc_crc32c(const uint8_t *data, size_t len, uint32_t seed);
void qc_sha256(const uint8_t *data, size_t len, uint8_t out[32]);
/* Python's float.hex() of x into buf (at least 32 bytes); returns the length. */
int qc_float_hex(double x, char *buf);

/* A small strict JSON reader (the one schemas use), for tools and tests. */
typedef struct qc_json {
    int type;               /* QC_JSON_* */
    int is_int;             /* a number written without fraction or exponent */
    int int_ok;             /* is_int and it fits int64 (neg) or uint64 */
    int neg;
    uint64_t u;             /* |value| of an integer that fits */
    double num;             /* the number as a double (strtod of its text) */
    const char *text;       /* a number's text / a string's UTF-8 bytes (NUL-terminated) */
    size_t len;             /* length of text */
    const char *key;        /* a member of an object: its key */
    size_t nkids;
    struct qc_json *kids;   /* array or object members */
} qc_json;
enum { QC_JSON_NULL, QC_JSON_FALSE, QC_JSON_TRUE, QC_JSON_NUMBER, QC_JSON_STRING, QC_JSON_ARRAY, QC_JSON_OBJECT };
/* Parse: the tree in memory from `al` (free with qc_json_free). NULL with err on an error. */
qc_json *qc_json_parse(const char *text, size_t len, const qc_allocator *al, void **mem, qc_error *err);
void qc_json_free(void *mem, const qc_allocator *al);
const qc_json *qc_json_get(const qc_json *obj, const char *key);
/* Python's float.fromhex / float() of "inf", "-inf", "nan" strings as in the goldens. */
int qc_parse_hex_double(const char *s, double *out);

#ifdef __cplusplus
}
#endif
#endif /* QUANTCODEC_H */

/* =============================================================================================
   Implementation
   ============================================================================================= */
#ifdef QUANTCODEC_IMPLEMENTATION
#ifndef QUANTCODEC_IMPLEMENTATION_DONE
#define QUANTCODEC_IMPLEMENTATION_DONE

#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <math.h>
#include <stdarg.h>
#include <time.h>
#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(QUANTCODEC_NO_BMI2)
#include <immintrin.h>  /* the packet decoder's BMI2 and AVX2 copies (target attributes) */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* No FMA contraction in the codecs' arithmetic, whatever the build's -ffp-contract: a fused
   a * b + c rounds once where Python's core rounds twice. GCC: the implementation is compiled
   with fp-contract=off (push/pop around it); Clang: each function with float arithmetic starts
   with the C99 pragma, which holds to the end of that function (Clang's -ffp-contract=fast
   disregards pragmas: do not build this file with it, nor with -ffast-math). Other compilers:
   build with contraction off (MSVC's default /fp:precise does not contract). */
#if defined(__clang__)
#define QC__NOFMA _Pragma("STDC FP_CONTRACT OFF")
#else
#define QC__NOFMA
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize ("fp-contract=off")
#define QC__GCC_OPTIONS_PUSHED 1
#endif

/* ---- memory ---------------------------------------------------------------------------------- */

static void *qc__malloc_cb(void *ud, size_t n) { (void)ud; return malloc(n ? n : 1); }
static void qc__free_cb(void *ud, void *p, size_t n) { (void)ud; (void)n; free(p); }

static qc_allocator qc__allocator_of(const qc_allocator *al) {
    qc_allocator a;
    if (al != NULL && al->alloc != NULL && al->free != NULL) return *al;
    a.alloc = qc__malloc_cb;
    a.free = qc__free_cb;
    a.ud = NULL;
    return a;
}

/* An arena: chunks from the allocator, freed together (schemas and JSON trees). */
typedef struct qc__chunk { struct qc__chunk *next; size_t size, used; } qc__chunk;
#define QC__ALIGN 16
#define QC__CHUNK_HEAD ((sizeof(qc__chunk) + QC__ALIGN - 1) / QC__ALIGN * QC__ALIGN)

typedef struct qc__arena { qc_allocator al; qc__chunk *head; } qc__arena;

static void *qc__arena_alloc(qc__arena *a, size_t n) {
    qc__chunk *c = a->head;
    void *p;
    n = (n + QC__ALIGN - 1) / QC__ALIGN * QC__ALIGN;
    if (n == 0) n = QC__ALIGN;
    if (c == NULL || c->size - c->used < n) {
        size_t sz = n > 8192 ? n : 8192;
        c = (qc__chunk *)a->al.alloc(a->al.ud, QC__CHUNK_HEAD + sz);
        if (c == NULL) return NULL;
        c->size = sz;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    p = (char *)c + QC__CHUNK_HEAD + c->used;
    c->used += n;
    return p;
}

static void qc__arena_free(qc_allocator al, qc__chunk *c) {
    while (c != NULL) {
        qc__chunk *nx = c->next;
        al.free(al.ud, c, QC__CHUNK_HEAD + c->size);
        c = nx;
    }
}

static char *qc__arena_strdup(qc__arena *a, const char *s, size_t n) {
    char *p = (char *)qc__arena_alloc(a, n + 1);
    if (p == NULL) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = 0;
    return p;
}

static int qc__fail(qc_error *err, const char *fmt, ...) {
    va_list ap;
    if (err != NULL) {
        err->kind = -1;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* ---- bits ------------------------------------------------------------------------------------ */

#if defined(__GNUC__) || defined(__clang__)
#define QC__HOT static inline __attribute__((always_inline))
#define QC__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define QC__LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define QC__HOT static inline
#define QC__UNLIKELY(x) (x)
#define QC__LIKELY(x) (x)
#endif

static uint64_t qc__mask(int b) { return b >= 64 ? ~(uint64_t)0 : (((uint64_t)1) << b) - 1; }

static int qc__bitlen(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return x ? 64 - __builtin_clzll(x) : 0;
#else
    int n = 0;
    while (x) { x >>= 1; n++; }
    return n;
#endif
}

static int qc__ctz(uint64_t x) {     /* x != 0 */
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int n = 0;
    while (!(x & 1)) { x >>= 1; n++; }
    return n;
#endif
}

QC__HOT uint64_t qc__load_le64(const uint8_t *p) {
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
#endif
}
static uint32_t qc__le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static unsigned qc__le16(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

/* LSB-first bit reader over nbytes bytes. */
typedef struct qc__br { const uint8_t *buf; size_t nbytes, pos, nbits; } qc__br;

static void qc__br_init(qc__br *r, const uint8_t *buf, size_t n) {
    r->buf = buf; r->nbytes = n; r->pos = 0; r->nbits = n * 8;
}
static size_t qc__br_left(const qc__br *r) { return r->nbits - r->pos; }

/* n (0..64) bits at bit position p, which must be available. */
static uint64_t qc__peek_at(const qc__br *r, size_t p, int n) {
    size_t idx = p >> 3;
    int sh = (int)(p & 7);
    uint64_t x;
    if (n == 0) return 0;
    if (idx + 8 <= r->nbytes) {
        x = qc__load_le64(r->buf + idx) >> sh;
        if (n + sh > 64) x |= (uint64_t)r->buf[idx + 8] << (64 - sh);
    } else {
        int i, got = -sh;
        x = 0;
        for (i = 0; idx + (size_t)i < r->nbytes && got < n; i++) {
            uint64_t byte = r->buf[idx + (size_t)i];
            if (got < 0) x = byte >> sh;
            else x |= byte << got;
            got += 8;
        }
    }
    return n >= 64 ? x : x & ((((uint64_t)1) << n) - 1);
}

QC__HOT int qc__get(qc__br *r, int n, uint64_t *v) {
    size_t idx = r->pos >> 3;
    if (n <= 56 && idx + 8 <= r->nbytes) {
        *v = (qc__load_le64(r->buf + idx) >> (r->pos & 7)) & ((((uint64_t)1) << n) - 1);
        r->pos += (size_t)n;
        return 0;
    }
    if ((size_t)n > r->nbits - r->pos) return -1;
    *v = qc__peek_at(r, r->pos, n);
    r->pos += (size_t)n;
    return 0;
}

/* LSB-first bit writer */
typedef struct qc__bw { uint8_t *buf; size_t cap, pos; int overflow; } qc__bw;

static void qc__put(qc__bw *w, uint64_t v, int n) {
    int i;
    for (i = 0; i < n; i++) {
        size_t byte = w->pos >> 3;
        if (byte >= w->cap) { w->overflow = 1; return; }
        if ((w->pos & 7) == 0) w->buf[byte] = 0;
        if ((v >> i) & 1) w->buf[byte] |= (uint8_t)(1u << (w->pos & 7));
        w->pos++;
    }
}

/* ---- CRC-32C and SHA-256 --------------------------------------------------------------------- */

/* slicing-by-8 tables: qc__crc_table[0] is the classic byte table */
static const uint32_t qc__crc_table[8][256] = {
    {
        0x00000000u, 0xf26b8303u, 0xe13b70f7u, 0x1350f3f4u, 0xc79a971fu, 0x35f1141cu, 0x26a1e7e8u, 0xd4ca64ebu,
        0x8ad958cfu, 0x78b2dbccu, 0x6be22838u, 0x9989ab3bu, 0x4d43cfd0u, 0xbf284cd3u, 0xac78bf27u, 0x5e133c24u,
        0x105ec76fu, 0xe235446cu, 0xf165b798u, 0x030e349bu, 0xd7c45070u, 0x25afd373u, 0x36ff2087u, 0xc494a384u,
        0x9a879fa0u, 0x68ec1ca3u, 0x7bbcef57u, 0x89d76c54u, 0x5d1d08bfu, 0xaf768bbcu, 0xbc267848u, 0x4e4dfb4bu,
        0x20bd8edeu, 0xd2d60dddu, 0xc186fe29u, 0x33ed7d2au, 0xe72719c1u, 0x154c9ac2u, 0x061c6936u, 0xf477ea35u,
        0xaa64d611u, 0x580f5512u, 0x4b5fa6e6u, 0xb93425e5u, 0x6dfe410eu, 0x9f95c20du, 0x8cc531f9u, 0x7eaeb2fau,
        0x30e349b1u, 0xc288cab2u, 0xd1d83946u, 0x23b3ba45u, 0xf779deaeu, 0x05125dadu, 0x1642ae59u, 0xe4292d5au,
        0xba3a117eu, 0x4851927du, 0x5b016189u, 0xa96ae28au, 0x7da08661u, 0x8fcb0562u, 0x9c9bf696u, 0x6ef07595u,
        0x417b1dbcu, 0xb3109ebfu, 0xa0406d4bu, 0x522bee48u, 0x86e18aa3u, 0x748a09a0u, 0x67dafa54u, 0x95b17957u,
        0xcba24573u, 0x39c9c670u, 0x2a993584u, 0xd8f2b687u, 0x0c38d26cu, 0xfe53516fu, 0xed03a29bu, 0x1f682198u,
        0x5125dad3u, 0xa34e59d0u, 0xb01eaa24u, 0x42752927u, 0x96bf4dccu, 0x64d4cecfu, 0x77843d3bu, 0x85efbe38u,
        0xdbfc821cu, 0x2997011fu, 0x3ac7f2ebu, 0xc8ac71e8u, 0x1c661503u, 0xee0d9600u, 0xfd5d65f4u, 0x0f36e6f7u,
        0x61c69362u, 0x93ad1061u, 0x80fde395u, 0x72966096u, 0xa65c047du, 0x5437877eu, 0x4767748au, 0xb50cf789u,
        0xeb1fcbadu, 0x197448aeu, 0x0a24bb5au, 0xf84f3859u, 0x2c855cb2u, 0xdeeedfb1u, 0xcdbe2c45u, 0x3fd5af46u,
        0x7198540du, 0x83f3d70eu, 0x90a324fau, 0x62c8a7f9u, 0xb602c312u, 0x44694011u, 0x5739b3e5u, 0xa55230e6u,
        0xfb410cc2u, 0x092a8fc1u, 0x1a7a7c35u, 0xe811ff36u, 0x3cdb9bddu, 0xceb018deu, 0xdde0eb2au, 0x2f8b6829u,
        0x82f63b78u, 0x709db87bu, 0x63cd4b8fu, 0x91a6c88cu, 0x456cac67u, 0xb7072f64u, 0xa457dc90u, 0x563c5f93u,
        0x082f63b7u, 0xfa44e0b4u, 0xe9141340u, 0x1b7f9043u, 0xcfb5f4a8u, 0x3dde77abu, 0x2e8e845fu, 0xdce5075cu,
        0x92a8fc17u, 0x60c37f14u, 0x73938ce0u, 0x81f80fe3u, 0x55326b08u, 0xa759e80bu, 0xb4091bffu, 0x466298fcu,
        0x1871a4d8u, 0xea1a27dbu, 0xf94ad42fu, 0x0b21572cu, 0xdfeb33c7u, 0x2d80b0c4u, 0x3ed04330u, 0xccbbc033u,
        0xa24bb5a6u, 0x502036a5u, 0x4370c551u, 0xb11b4652u, 0x65d122b9u, 0x97baa1bau, 0x84ea524eu, 0x7681d14du,
        0x2892ed69u, 0xdaf96e6au, 0xc9a99d9eu, 0x3bc21e9du, 0xef087a76u, 0x1d63f975u, 0x0e330a81u, 0xfc588982u,
        0xb21572c9u, 0x407ef1cau, 0x532e023eu, 0xa145813du, 0x758fe5d6u, 0x87e466d5u, 0x94b49521u, 0x66df1622u,
        0x38cc2a06u, 0xcaa7a905u, 0xd9f75af1u, 0x2b9cd9f2u, 0xff56bd19u, 0x0d3d3e1au, 0x1e6dcdeeu, 0xec064eedu,
        0xc38d26c4u, 0x31e6a5c7u, 0x22b65633u, 0xd0ddd530u, 0x0417b1dbu, 0xf67c32d8u, 0xe52cc12cu, 0x1747422fu,
        0x49547e0bu, 0xbb3ffd08u, 0xa86f0efcu, 0x5a048dffu, 0x8ecee914u, 0x7ca56a17u, 0x6ff599e3u, 0x9d9e1ae0u,
        0xd3d3e1abu, 0x21b862a8u, 0x32e8915cu, 0xc083125fu, 0x144976b4u, 0xe622f5b7u, 0xf5720643u, 0x07198540u,
        0x590ab964u, 0xab613a67u, 0xb831c993u, 0x4a5a4a90u, 0x9e902e7bu, 0x6cfbad78u, 0x7fab5e8cu, 0x8dc0dd8fu,
        0xe330a81au, 0x115b2b19u, 0x020bd8edu, 0xf0605beeu, 0x24aa3f05u, 0xd6c1bc06u, 0xc5914ff2u, 0x37faccf1u,
        0x69e9f0d5u, 0x9b8273d6u, 0x88d28022u, 0x7ab90321u, 0xae7367cau, 0x5c18e4c9u, 0x4f48173du, 0xbd23943eu,
        0xf36e6f75u, 0x0105ec76u, 0x12551f82u, 0xe03e9c81u, 0x34f4f86au, 0xc69f7b69u, 0xd5cf889du, 0x27a40b9eu,
        0x79b737bau, 0x8bdcb4b9u, 0x988c474du, 0x6ae7c44eu, 0xbe2da0a5u, 0x4c4623a6u, 0x5f16d052u, 0xad7d5351u,
    },
    {
        0x00000000u, 0x13a29877u, 0x274530eeu, 0x34e7a899u, 0x4e8a61dcu, 0x5d28f9abu, 0x69cf5132u, 0x7a6dc945u,
        0x9d14c3b8u, 0x8eb65bcfu, 0xba51f356u, 0xa9f36b21u, 0xd39ea264u, 0xc03c3a13u, 0xf4db928au, 0xe7790afdu,
        0x3fc5f181u, 0x2c6769f6u, 0x1880c16fu, 0x0b225918u, 0x714f905du, 0x62ed082au, 0x560aa0b3u, 0x45a838c4u,
        0xa2d13239u, 0xb173aa4eu, 0x859402d7u, 0x96369aa0u, 0xec5b53e5u, 0xfff9cb92u, 0xcb1e630bu, 0xd8bcfb7cu,
        0x7f8be302u, 0x6c297b75u, 0x58ced3ecu, 0x4b6c4b9bu, 0x310182deu, 0x22a31aa9u, 0x1644b230u, 0x05e62a47u,
        0xe29f20bau, 0xf13db8cdu, 0xc5da1054u, 0xd6788823u, 0xac154166u, 0xbfb7d911u, 0x8b507188u, 0x98f2e9ffu,
        0x404e1283u, 0x53ec8af4u, 0x670b226du, 0x74a9ba1au, 0x0ec4735fu, 0x1d66eb28u, 0x298143b1u, 0x3a23dbc6u,
        0xdd5ad13bu, 0xcef8494cu, 0xfa1fe1d5u, 0xe9bd79a2u, 0x93d0b0e7u, 0x80722890u, 0xb4958009u, 0xa737187eu,
        0xff17c604u, 0xecb55e73u, 0xd852f6eau, 0xcbf06e9du, 0xb19da7d8u, 0xa23f3fafu, 0x96d89736u, 0x857a0f41u,
        0x620305bcu, 0x71a19dcbu, 0x45463552u, 0x56e4ad25u, 0x2c896460u, 0x3f2bfc17u, 0x0bcc548eu, 0x186eccf9u,
        0xc0d23785u, 0xd370aff2u, 0xe797076bu, 0xf4359f1cu, 0x8e585659u, 0x9dface2eu, 0xa91d66b7u, 0xbabffec0u,
        0x5dc6f43du, 0x4e646c4au, 0x7a83c4d3u, 0x69215ca4u, 0x134c95e1u, 0x00ee0d96u, 0x3409a50fu, 0x27ab3d78u,
        0x809c2506u, 0x933ebd71u, 0xa7d915e8u, 0xb47b8d9fu, 0xce1644dau, 0xddb4dcadu, 0xe9537434u, 0xfaf1ec43u,
        0x1d88e6beu, 0x0e2a7ec9u, 0x3acdd650u, 0x296f4e27u, 0x53028762u, 0x40a01f15u, 0x7447b78cu, 0x67e52ffbu,
        0xbf59d487u, 0xacfb4cf0u, 0x981ce469u, 0x8bbe7c1eu, 0xf1d3b55bu, 0xe2712d2cu, 0xd69685b5u, 0xc5341dc2u,
        0x224d173fu, 0x31ef8f48u, 0x050827d1u, 0x16aabfa6u, 0x6cc776e3u, 0x7f65ee94u, 0x4b82460du, 0x5820de7au,
        0xfbc3faf9u, 0xe861628eu, 0xdc86ca17u, 0xcf245260u, 0xb5499b25u, 0xa6eb0352u, 0x920cabcbu, 0x81ae33bcu,
        0x66d73941u, 0x7575a136u, 0x419209afu, 0x523091d8u, 0x285d589du, 0x3bffc0eau, 0x0f186873u, 0x1cbaf004u,
        0xc4060b78u, 0xd7a4930fu, 0xe3433b96u, 0xf0e1a3e1u, 0x8a8c6aa4u, 0x992ef2d3u, 0xadc95a4au, 0xbe6bc23du,
        0x5912c8c0u, 0x4ab050b7u, 0x7e57f82eu, 0x6df56059u, 0x1798a91cu, 0x043a316bu, 0x30dd99f2u, 0x237f0185u,
        0x844819fbu, 0x97ea818cu, 0xa30d2915u, 0xb0afb162u, 0xcac27827u, 0xd960e050u, 0xed8748c9u, 0xfe25d0beu,
        0x195cda43u, 0x0afe4234u, 0x3e19eaadu, 0x2dbb72dau, 0x57d6bb9fu, 0x447423e8u, 0x70938b71u, 0x63311306u,
        0xbb8de87au, 0xa82f700du, 0x9cc8d894u, 0x8f6a40e3u, 0xf50789a6u, 0xe6a511d1u, 0xd242b948u, 0xc1e0213fu,
        0x26992bc2u, 0x353bb3b5u, 0x01dc1b2cu, 0x127e835bu, 0x68134a1eu, 0x7bb1d269u, 0x4f567af0u, 0x5cf4e287u,
        0x04d43cfdu, 0x1776a48au, 0x23910c13u, 0x30339464u, 0x4a5e5d21u, 0x59fcc556u, 0x6d1b6dcfu, 0x7eb9f5b8u,
        0x99c0ff45u, 0x8a626732u, 0xbe85cfabu, 0xad2757dcu, 0xd74a9e99u, 0xc4e806eeu, 0xf00fae77u, 0xe3ad3600u,
        0x3b11cd7cu, 0x28b3550bu, 0x1c54fd92u, 0x0ff665e5u, 0x759baca0u, 0x663934d7u, 0x52de9c4eu, 0x417c0439u,
        0xa6050ec4u, 0xb5a796b3u, 0x81403e2au, 0x92e2a65du, 0xe88f6f18u, 0xfb2df76fu, 0xcfca5ff6u, 0xdc68c781u,
        0x7b5fdfffu, 0x68fd4788u, 0x5c1aef11u, 0x4fb87766u, 0x35d5be23u, 0x26772654u, 0x12908ecdu, 0x013216bau,
        0xe64b1c47u, 0xf5e98430u, 0xc10e2ca9u, 0xd2acb4deu, 0xa8c17d9bu, 0xbb63e5ecu, 0x8f844d75u, 0x9c26d502u,
        0x449a2e7eu, 0x5738b609u, 0x63df1e90u, 0x707d86e7u, 0x0a104fa2u, 0x19b2d7d5u, 0x2d557f4cu, 0x3ef7e73bu,
        0xd98eedc6u, 0xca2c75b1u, 0xfecbdd28u, 0xed69455fu, 0x97048c1au, 0x84a6146du, 0xb041bcf4u, 0xa3e32483u,
    },
    {
        0x00000000u, 0xa541927eu, 0x4f6f520du, 0xea2ec073u, 0x9edea41au, 0x3b9f3664u, 0xd1b1f617u, 0x74f06469u,
        0x38513ec5u, 0x9d10acbbu, 0x773e6cc8u, 0xd27ffeb6u, 0xa68f9adfu, 0x03ce08a1u, 0xe9e0c8d2u, 0x4ca15aacu,
        0x70a27d8au, 0xd5e3eff4u, 0x3fcd2f87u, 0x9a8cbdf9u, 0xee7cd990u, 0x4b3d4beeu, 0xa1138b9du, 0x045219e3u,
        0x48f3434fu, 0xedb2d131u, 0x079c1142u, 0xa2dd833cu, 0xd62de755u, 0x736c752bu, 0x9942b558u, 0x3c032726u,
        0xe144fb14u, 0x4405696au, 0xae2ba919u, 0x0b6a3b67u, 0x7f9a5f0eu, 0xdadbcd70u, 0x30f50d03u, 0x95b49f7du,
        0xd915c5d1u, 0x7c5457afu, 0x967a97dcu, 0x333b05a2u, 0x47cb61cbu, 0xe28af3b5u, 0x08a433c6u, 0xade5a1b8u,
        0x91e6869eu, 0x34a714e0u, 0xde89d493u, 0x7bc846edu, 0x0f382284u, 0xaa79b0fau, 0x40577089u, 0xe516e2f7u,
        0xa9b7b85bu, 0x0cf62a25u, 0xe6d8ea56u, 0x43997828u, 0x37691c41u, 0x92288e3fu, 0x78064e4cu, 0xdd47dc32u,
        0xc76580d9u, 0x622412a7u, 0x880ad2d4u, 0x2d4b40aau, 0x59bb24c3u, 0xfcfab6bdu, 0x16d476ceu, 0xb395e4b0u,
        0xff34be1cu, 0x5a752c62u, 0xb05bec11u, 0x151a7e6fu, 0x61ea1a06u, 0xc4ab8878u, 0x2e85480bu, 0x8bc4da75u,
        0xb7c7fd53u, 0x12866f2du, 0xf8a8af5eu, 0x5de93d20u, 0x29195949u, 0x8c58cb37u, 0x66760b44u, 0xc337993au,
        0x8f96c396u, 0x2ad751e8u, 0xc0f9919bu, 0x65b803e5u, 0x1148678cu, 0xb409f5f2u, 0x5e273581u, 0xfb66a7ffu,
        0x26217bcdu, 0x8360e9b3u, 0x694e29c0u, 0xcc0fbbbeu, 0xb8ffdfd7u, 0x1dbe4da9u, 0xf7908ddau, 0x52d11fa4u,
        0x1e704508u, 0xbb31d776u, 0x511f1705u, 0xf45e857bu, 0x80aee112u, 0x25ef736cu, 0xcfc1b31fu, 0x6a802161u,
        0x56830647u, 0xf3c29439u, 0x19ec544au, 0xbcadc634u, 0xc85da25du, 0x6d1c3023u, 0x8732f050u, 0x2273622eu,
        0x6ed23882u, 0xcb93aafcu, 0x21bd6a8fu, 0x84fcf8f1u, 0xf00c9c98u, 0x554d0ee6u, 0xbf63ce95u, 0x1a225cebu,
        0x8b277743u, 0x2e66e53du, 0xc448254eu, 0x6109b730u, 0x15f9d359u, 0xb0b84127u, 0x5a968154u, 0xffd7132au,
        0xb3764986u, 0x1637dbf8u, 0xfc191b8bu, 0x595889f5u, 0x2da8ed9cu, 0x88e97fe2u, 0x62c7bf91u, 0xc7862defu,
        0xfb850ac9u, 0x5ec498b7u, 0xb4ea58c4u, 0x11abcabau, 0x655baed3u, 0xc01a3cadu, 0x2a34fcdeu, 0x8f756ea0u,
        0xc3d4340cu, 0x6695a672u, 0x8cbb6601u, 0x29faf47fu, 0x5d0a9016u, 0xf84b0268u, 0x1265c21bu, 0xb7245065u,
        0x6a638c57u, 0xcf221e29u, 0x250cde5au, 0x804d4c24u, 0xf4bd284du, 0x51fcba33u, 0xbbd27a40u, 0x1e93e83eu,
        0x5232b292u, 0xf77320ecu, 0x1d5de09fu, 0xb81c72e1u, 0xccec1688u, 0x69ad84f6u, 0x83834485u, 0x26c2d6fbu,
        0x1ac1f1ddu, 0xbf8063a3u, 0x55aea3d0u, 0xf0ef31aeu, 0x841f55c7u, 0x215ec7b9u, 0xcb7007cau, 0x6e3195b4u,
        0x2290cf18u, 0x87d15d66u, 0x6dff9d15u, 0xc8be0f6bu, 0xbc4e6b02u, 0x190ff97cu, 0xf321390fu, 0x5660ab71u,
        0x4c42f79au, 0xe90365e4u, 0x032da597u, 0xa66c37e9u, 0xd29c5380u, 0x77ddc1feu, 0x9df3018du, 0x38b293f3u,
        0x7413c95fu, 0xd1525b21u, 0x3b7c9b52u, 0x9e3d092cu, 0xeacd6d45u, 0x4f8cff3bu, 0xa5a23f48u, 0x00e3ad36u,
        0x3ce08a10u, 0x99a1186eu, 0x738fd81du, 0xd6ce4a63u, 0xa23e2e0au, 0x077fbc74u, 0xed517c07u, 0x4810ee79u,
        0x04b1b4d5u, 0xa1f026abu, 0x4bdee6d8u, 0xee9f74a6u, 0x9a6f10cfu, 0x3f2e82b1u, 0xd50042c2u, 0x7041d0bcu,
        0xad060c8eu, 0x08479ef0u, 0xe2695e83u, 0x4728ccfdu, 0x33d8a894u, 0x96993aeau, 0x7cb7fa99u, 0xd9f668e7u,
        0x9557324bu, 0x3016a035u, 0xda386046u, 0x7f79f238u, 0x0b899651u, 0xaec8042fu, 0x44e6c45cu, 0xe1a75622u,
        0xdda47104u, 0x78e5e37au, 0x92cb2309u, 0x378ab177u, 0x437ad51eu, 0xe63b4760u, 0x0c158713u, 0xa954156du,
        0xe5f54fc1u, 0x40b4ddbfu, 0xaa9a1dccu, 0x0fdb8fb2u, 0x7b2bebdbu, 0xde6a79a5u, 0x3444b9d6u, 0x91052ba8u,
    },
    {
        0x00000000u, 0xdd45aab8u, 0xbf672381u, 0x62228939u, 0x7b2231f3u, 0xa6679b4bu, 0xc4451272u, 0x1900b8cau,
        0xf64463e6u, 0x2b01c95eu, 0x49234067u, 0x9466eadfu, 0x8d665215u, 0x5023f8adu, 0x32017194u, 0xef44db2cu,
        0xe964b13du, 0x34211b85u, 0x560392bcu, 0x8b463804u, 0x924680ceu, 0x4f032a76u, 0x2d21a34fu, 0xf06409f7u,
        0x1f20d2dbu, 0xc2657863u, 0xa047f15au, 0x7d025be2u, 0x6402e328u, 0xb9474990u, 0xdb65c0a9u, 0x06206a11u,
        0xd725148bu, 0x0a60be33u, 0x6842370au, 0xb5079db2u, 0xac072578u, 0x71428fc0u, 0x136006f9u, 0xce25ac41u,
        0x2161776du, 0xfc24ddd5u, 0x9e0654ecu, 0x4343fe54u, 0x5a43469eu, 0x8706ec26u, 0xe524651fu, 0x3861cfa7u,
        0x3e41a5b6u, 0xe3040f0eu, 0x81268637u, 0x5c632c8fu, 0x45639445u, 0x98263efdu, 0xfa04b7c4u, 0x27411d7cu,
        0xc805c650u, 0x15406ce8u, 0x7762e5d1u, 0xaa274f69u, 0xb327f7a3u, 0x6e625d1bu, 0x0c40d422u, 0xd1057e9au,
        0xaba65fe7u, 0x76e3f55fu, 0x14c17c66u, 0xc984d6deu, 0xd0846e14u, 0x0dc1c4acu, 0x6fe34d95u, 0xb2a6e72du,
        0x5de23c01u, 0x80a796b9u, 0xe2851f80u, 0x3fc0b538u, 0x26c00df2u, 0xfb85a74au, 0x99a72e73u, 0x44e284cbu,
        0x42c2eedau, 0x9f874462u, 0xfda5cd5bu, 0x20e067e3u, 0x39e0df29u, 0xe4a57591u, 0x8687fca8u, 0x5bc25610u,
        0xb4868d3cu, 0x69c32784u, 0x0be1aebdu, 0xd6a40405u, 0xcfa4bccfu, 0x12e11677u, 0x70c39f4eu, 0xad8635f6u,
        0x7c834b6cu, 0xa1c6e1d4u, 0xc3e468edu, 0x1ea1c255u, 0x07a17a9fu, 0xdae4d027u, 0xb8c6591eu, 0x6583f3a6u,
        0x8ac7288au, 0x57828232u, 0x35a00b0bu, 0xe8e5a1b3u, 0xf1e51979u, 0x2ca0b3c1u, 0x4e823af8u, 0x93c79040u,
        0x95e7fa51u, 0x48a250e9u, 0x2a80d9d0u, 0xf7c57368u, 0xeec5cba2u, 0x3380611au, 0x51a2e823u, 0x8ce7429bu,
        0x63a399b7u, 0xbee6330fu, 0xdcc4ba36u, 0x0181108eu, 0x1881a844u, 0xc5c402fcu, 0xa7e68bc5u, 0x7aa3217du,
        0x52a0c93fu, 0x8fe56387u, 0xedc7eabeu, 0x30824006u, 0x2982f8ccu, 0xf4c75274u, 0x96e5db4du, 0x4ba071f5u,
        0xa4e4aad9u, 0x79a10061u, 0x1b838958u, 0xc6c623e0u, 0xdfc69b2au, 0x02833192u, 0x60a1b8abu, 0xbde41213u,
        0xbbc47802u, 0x6681d2bau, 0x04a35b83u, 0xd9e6f13bu, 0xc0e649f1u, 0x1da3e349u, 0x7f816a70u, 0xa2c4c0c8u,
        0x4d801be4u, 0x90c5b15cu, 0xf2e73865u, 0x2fa292ddu, 0x36a22a17u, 0xebe780afu, 0x89c50996u, 0x5480a32eu,
        0x8585ddb4u, 0x58c0770cu, 0x3ae2fe35u, 0xe7a7548du, 0xfea7ec47u, 0x23e246ffu, 0x41c0cfc6u, 0x9c85657eu,
        0x73c1be52u, 0xae8414eau, 0xcca69dd3u, 0x11e3376bu, 0x08e38fa1u, 0xd5a62519u, 0xb784ac20u, 0x6ac10698u,
        0x6ce16c89u, 0xb1a4c631u, 0xd3864f08u, 0x0ec3e5b0u, 0x17c35d7au, 0xca86f7c2u, 0xa8a47efbu, 0x75e1d443u,
        0x9aa50f6fu, 0x47e0a5d7u, 0x25c22ceeu, 0xf8878656u, 0xe1873e9cu, 0x3cc29424u, 0x5ee01d1du, 0x83a5b7a5u,
        0xf90696d8u, 0x24433c60u, 0x4661b559u, 0x9b241fe1u, 0x8224a72bu, 0x5f610d93u, 0x3d4384aau, 0xe0062e12u,
        0x0f42f53eu, 0xd2075f86u, 0xb025d6bfu, 0x6d607c07u, 0x7460c4cdu, 0xa9256e75u, 0xcb07e74cu, 0x16424df4u,
        0x106227e5u, 0xcd278d5du, 0xaf050464u, 0x7240aedcu, 0x6b401616u, 0xb605bcaeu, 0xd4273597u, 0x09629f2fu,
        0xe6264403u, 0x3b63eebbu, 0x59416782u, 0x8404cd3au, 0x9d0475f0u, 0x4041df48u, 0x22635671u, 0xff26fcc9u,
        0x2e238253u, 0xf36628ebu, 0x9144a1d2u, 0x4c010b6au, 0x5501b3a0u, 0x88441918u, 0xea669021u, 0x37233a99u,
        0xd867e1b5u, 0x05224b0du, 0x6700c234u, 0xba45688cu, 0xa345d046u, 0x7e007afeu, 0x1c22f3c7u, 0xc167597fu,
        0xc747336eu, 0x1a0299d6u, 0x782010efu, 0xa565ba57u, 0xbc65029du, 0x6120a825u, 0x0302211cu, 0xde478ba4u,
        0x31035088u, 0xec46fa30u, 0x8e647309u, 0x5321d9b1u, 0x4a21617bu, 0x9764cbc3u, 0xf54642fau, 0x2803e842u,
    },
    {
        0x00000000u, 0x38116facu, 0x7022df58u, 0x4833b0f4u, 0xe045beb0u, 0xd854d11cu, 0x906761e8u, 0xa8760e44u,
        0xc5670b91u, 0xfd76643du, 0xb545d4c9u, 0x8d54bb65u, 0x2522b521u, 0x1d33da8du, 0x55006a79u, 0x6d1105d5u,
        0x8f2261d3u, 0xb7330e7fu, 0xff00be8bu, 0xc711d127u, 0x6f67df63u, 0x5776b0cfu, 0x1f45003bu, 0x27546f97u,
        0x4a456a42u, 0x725405eeu, 0x3a67b51au, 0x0276dab6u, 0xaa00d4f2u, 0x9211bb5eu, 0xda220baau, 0xe2336406u,
        0x1ba8b557u, 0x23b9dafbu, 0x6b8a6a0fu, 0x539b05a3u, 0xfbed0be7u, 0xc3fc644bu, 0x8bcfd4bfu, 0xb3debb13u,
        0xdecfbec6u, 0xe6ded16au, 0xaeed619eu, 0x96fc0e32u, 0x3e8a0076u, 0x069b6fdau, 0x4ea8df2eu, 0x76b9b082u,
        0x948ad484u, 0xac9bbb28u, 0xe4a80bdcu, 0xdcb96470u, 0x74cf6a34u, 0x4cde0598u, 0x04edb56cu, 0x3cfcdac0u,
        0x51eddf15u, 0x69fcb0b9u, 0x21cf004du, 0x19de6fe1u, 0xb1a861a5u, 0x89b90e09u, 0xc18abefdu, 0xf99bd151u,
        0x37516aaeu, 0x0f400502u, 0x4773b5f6u, 0x7f62da5au, 0xd714d41eu, 0xef05bbb2u, 0xa7360b46u, 0x9f2764eau,
        0xf236613fu, 0xca270e93u, 0x8214be67u, 0xba05d1cbu, 0x1273df8fu, 0x2a62b023u, 0x625100d7u, 0x5a406f7bu,
        0xb8730b7du, 0x806264d1u, 0xc851d425u, 0xf040bb89u, 0x5836b5cdu, 0x6027da61u, 0x28146a95u, 0x10050539u,
        0x7d1400ecu, 0x45056f40u, 0x0d36dfb4u, 0x3527b018u, 0x9d51be5cu, 0xa540d1f0u, 0xed736104u, 0xd5620ea8u,
        0x2cf9dff9u, 0x14e8b055u, 0x5cdb00a1u, 0x64ca6f0du, 0xccbc6149u, 0xf4ad0ee5u, 0xbc9ebe11u, 0x848fd1bdu,
        0xe99ed468u, 0xd18fbbc4u, 0x99bc0b30u, 0xa1ad649cu, 0x09db6ad8u, 0x31ca0574u, 0x79f9b580u, 0x41e8da2cu,
        0xa3dbbe2au, 0x9bcad186u, 0xd3f96172u, 0xebe80edeu, 0x439e009au, 0x7b8f6f36u, 0x33bcdfc2u, 0x0badb06eu,
        0x66bcb5bbu, 0x5eadda17u, 0x169e6ae3u, 0x2e8f054fu, 0x86f90b0bu, 0xbee864a7u, 0xf6dbd453u, 0xcecabbffu,
        0x6ea2d55cu, 0x56b3baf0u, 0x1e800a04u, 0x269165a8u, 0x8ee76becu, 0xb6f60440u, 0xfec5b4b4u, 0xc6d4db18u,
        0xabc5decdu, 0x93d4b161u, 0xdbe70195u, 0xe3f66e39u, 0x4b80607du, 0x73910fd1u, 0x3ba2bf25u, 0x03b3d089u,
        0xe180b48fu, 0xd991db23u, 0x91a26bd7u, 0xa9b3047bu, 0x01c50a3fu, 0x39d46593u, 0x71e7d567u, 0x49f6bacbu,
        0x24e7bf1eu, 0x1cf6d0b2u, 0x54c56046u, 0x6cd40feau, 0xc4a201aeu, 0xfcb36e02u, 0xb480def6u, 0x8c91b15au,
        0x750a600bu, 0x4d1b0fa7u, 0x0528bf53u, 0x3d39d0ffu, 0x954fdebbu, 0xad5eb117u, 0xe56d01e3u, 0xdd7c6e4fu,
        0xb06d6b9au, 0x887c0436u, 0xc04fb4c2u, 0xf85edb6eu, 0x5028d52au, 0x6839ba86u, 0x200a0a72u, 0x181b65deu,
        0xfa2801d8u, 0xc2396e74u, 0x8a0ade80u, 0xb21bb12cu, 0x1a6dbf68u, 0x227cd0c4u, 0x6a4f6030u, 0x525e0f9cu,
        0x3f4f0a49u, 0x075e65e5u, 0x4f6dd511u, 0x777cbabdu, 0xdf0ab4f9u, 0xe71bdb55u, 0xaf286ba1u, 0x9739040du,
        0x59f3bff2u, 0x61e2d05eu, 0x29d160aau, 0x11c00f06u, 0xb9b60142u, 0x81a76eeeu, 0xc994de1au, 0xf185b1b6u,
        0x9c94b463u, 0xa485dbcfu, 0xecb66b3bu, 0xd4a70497u, 0x7cd10ad3u, 0x44c0657fu, 0x0cf3d58bu, 0x34e2ba27u,
        0xd6d1de21u, 0xeec0b18du, 0xa6f30179u, 0x9ee26ed5u, 0x36946091u, 0x0e850f3du, 0x46b6bfc9u, 0x7ea7d065u,
        0x13b6d5b0u, 0x2ba7ba1cu, 0x63940ae8u, 0x5b856544u, 0xf3f36b00u, 0xcbe204acu, 0x83d1b458u, 0xbbc0dbf4u,
        0x425b0aa5u, 0x7a4a6509u, 0x3279d5fdu, 0x0a68ba51u, 0xa21eb415u, 0x9a0fdbb9u, 0xd23c6b4du, 0xea2d04e1u,
        0x873c0134u, 0xbf2d6e98u, 0xf71ede6cu, 0xcf0fb1c0u, 0x6779bf84u, 0x5f68d028u, 0x175b60dcu, 0x2f4a0f70u,
        0xcd796b76u, 0xf56804dau, 0xbd5bb42eu, 0x854adb82u, 0x2d3cd5c6u, 0x152dba6au, 0x5d1e0a9eu, 0x650f6532u,
        0x081e60e7u, 0x300f0f4bu, 0x783cbfbfu, 0x402dd013u, 0xe85bde57u, 0xd04ab1fbu, 0x9879010fu, 0xa0686ea3u,
    },
    {
        0x00000000u, 0xef306b19u, 0xdb8ca0c3u, 0x34bccbdau, 0xb2f53777u, 0x5dc55c6eu, 0x697997b4u, 0x8649fcadu,
        0x6006181fu, 0x8f367306u, 0xbb8ab8dcu, 0x54bad3c5u, 0xd2f32f68u, 0x3dc34471u, 0x097f8fabu, 0xe64fe4b2u,
        0xc00c303eu, 0x2f3c5b27u, 0x1b8090fdu, 0xf4b0fbe4u, 0x72f90749u, 0x9dc96c50u, 0xa975a78au, 0x4645cc93u,
        0xa00a2821u, 0x4f3a4338u, 0x7b8688e2u, 0x94b6e3fbu, 0x12ff1f56u, 0xfdcf744fu, 0xc973bf95u, 0x2643d48cu,
        0x85f4168du, 0x6ac47d94u, 0x5e78b64eu, 0xb148dd57u, 0x370121fau, 0xd8314ae3u, 0xec8d8139u, 0x03bdea20u,
        0xe5f20e92u, 0x0ac2658bu, 0x3e7eae51u, 0xd14ec548u, 0x570739e5u, 0xb83752fcu, 0x8c8b9926u, 0x63bbf23fu,
        0x45f826b3u, 0xaac84daau, 0x9e748670u, 0x7144ed69u, 0xf70d11c4u, 0x183d7addu, 0x2c81b107u, 0xc3b1da1eu,
        0x25fe3eacu, 0xcace55b5u, 0xfe729e6fu, 0x1142f576u, 0x970b09dbu, 0x783b62c2u, 0x4c87a918u, 0xa3b7c201u,
        0x0e045bebu, 0xe13430f2u, 0xd588fb28u, 0x3ab89031u, 0xbcf16c9cu, 0x53c10785u, 0x677dcc5fu, 0x884da746u,
        0x6e0243f4u, 0x813228edu, 0xb58ee337u, 0x5abe882eu, 0xdcf77483u, 0x33c71f9au, 0x077bd440u, 0xe84bbf59u,
        0xce086bd5u, 0x213800ccu, 0x1584cb16u, 0xfab4a00fu, 0x7cfd5ca2u, 0x93cd37bbu, 0xa771fc61u, 0x48419778u,
        0xae0e73cau, 0x413e18d3u, 0x7582d309u, 0x9ab2b810u, 0x1cfb44bdu, 0xf3cb2fa4u, 0xc777e47eu, 0x28478f67u,
        0x8bf04d66u, 0x64c0267fu, 0x507ceda5u, 0xbf4c86bcu, 0x39057a11u, 0xd6351108u, 0xe289dad2u, 0x0db9b1cbu,
        0xebf65579u, 0x04c63e60u, 0x307af5bau, 0xdf4a9ea3u, 0x5903620eu, 0xb6330917u, 0x828fc2cdu, 0x6dbfa9d4u,
        0x4bfc7d58u, 0xa4cc1641u, 0x9070dd9bu, 0x7f40b682u, 0xf9094a2fu, 0x16392136u, 0x2285eaecu, 0xcdb581f5u,
        0x2bfa6547u, 0xc4ca0e5eu, 0xf076c584u, 0x1f46ae9du, 0x990f5230u, 0x763f3929u, 0x4283f2f3u, 0xadb399eau,
        0x1c08b7d6u, 0xf338dccfu, 0xc7841715u, 0x28b47c0cu, 0xaefd80a1u, 0x41cdebb8u, 0x75712062u, 0x9a414b7bu,
        0x7c0eafc9u, 0x933ec4d0u, 0xa7820f0au, 0x48b26413u, 0xcefb98beu, 0x21cbf3a7u, 0x1577387du, 0xfa475364u,
        0xdc0487e8u, 0x3334ecf1u, 0x0788272bu, 0xe8b84c32u, 0x6ef1b09fu, 0x81c1db86u, 0xb57d105cu, 0x5a4d7b45u,
        0xbc029ff7u, 0x5332f4eeu, 0x678e3f34u, 0x88be542du, 0x0ef7a880u, 0xe1c7c399u, 0xd57b0843u, 0x3a4b635au,
        0x99fca15bu, 0x76ccca42u, 0x42700198u, 0xad406a81u, 0x2b09962cu, 0xc439fd35u, 0xf08536efu, 0x1fb55df6u,
        0xf9fab944u, 0x16cad25du, 0x22761987u, 0xcd46729eu, 0x4b0f8e33u, 0xa43fe52au, 0x90832ef0u, 0x7fb345e9u,
        0x59f09165u, 0xb6c0fa7cu, 0x827c31a6u, 0x6d4c5abfu, 0xeb05a612u, 0x0435cd0bu, 0x308906d1u, 0xdfb96dc8u,
        0x39f6897au, 0xd6c6e263u, 0xe27a29b9u, 0x0d4a42a0u, 0x8b03be0du, 0x6433d514u, 0x508f1eceu, 0xbfbf75d7u,
        0x120cec3du, 0xfd3c8724u, 0xc9804cfeu, 0x26b027e7u, 0xa0f9db4au, 0x4fc9b053u, 0x7b757b89u, 0x94451090u,
        0x720af422u, 0x9d3a9f3bu, 0xa98654e1u, 0x46b63ff8u, 0xc0ffc355u, 0x2fcfa84cu, 0x1b736396u, 0xf443088fu,
        0xd200dc03u, 0x3d30b71au, 0x098c7cc0u, 0xe6bc17d9u, 0x60f5eb74u, 0x8fc5806du, 0xbb794bb7u, 0x544920aeu,
        0xb206c41cu, 0x5d36af05u, 0x698a64dfu, 0x86ba0fc6u, 0x00f3f36bu, 0xefc39872u, 0xdb7f53a8u, 0x344f38b1u,
        0x97f8fab0u, 0x78c891a9u, 0x4c745a73u, 0xa344316au, 0x250dcdc7u, 0xca3da6deu, 0xfe816d04u, 0x11b1061du,
        0xf7fee2afu, 0x18ce89b6u, 0x2c72426cu, 0xc3422975u, 0x450bd5d8u, 0xaa3bbec1u, 0x9e87751bu, 0x71b71e02u,
        0x57f4ca8eu, 0xb8c4a197u, 0x8c786a4du, 0x63480154u, 0xe501fdf9u, 0x0a3196e0u, 0x3e8d5d3au, 0xd1bd3623u,
        0x37f2d291u, 0xd8c2b988u, 0xec7e7252u, 0x034e194bu, 0x8507e5e6u, 0x6a378effu, 0x5e8b4525u, 0xb1bb2e3cu,
    },
    {
        0x00000000u, 0x68032cc8u, 0xd0065990u, 0xb8057558u, 0xa5e0c5d1u, 0xcde3e919u, 0x75e69c41u, 0x1de5b089u,
        0x4e2dfd53u, 0x262ed19bu, 0x9e2ba4c3u, 0xf628880bu, 0xebcd3882u, 0x83ce144au, 0x3bcb6112u, 0x53c84ddau,
        0x9c5bfaa6u, 0xf458d66eu, 0x4c5da336u, 0x245e8ffeu, 0x39bb3f77u, 0x51b813bfu, 0xe9bd66e7u, 0x81be4a2fu,
        0xd27607f5u, 0xba752b3du, 0x02705e65u, 0x6a7372adu, 0x7796c224u, 0x1f95eeecu, 0xa7909bb4u, 0xcf93b77cu,
        0x3d5b83bdu, 0x5558af75u, 0xed5dda2du, 0x855ef6e5u, 0x98bb466cu, 0xf0b86aa4u, 0x48bd1ffcu, 0x20be3334u,
        0x73767eeeu, 0x1b755226u, 0xa370277eu, 0xcb730bb6u, 0xd696bb3fu, 0xbe9597f7u, 0x0690e2afu, 0x6e93ce67u,
        0xa100791bu, 0xc90355d3u, 0x7106208bu, 0x19050c43u, 0x04e0bccau, 0x6ce39002u, 0xd4e6e55au, 0xbce5c992u,
        0xef2d8448u, 0x872ea880u, 0x3f2bddd8u, 0x5728f110u, 0x4acd4199u, 0x22ce6d51u, 0x9acb1809u, 0xf2c834c1u,
        0x7ab7077au, 0x12b42bb2u, 0xaab15eeau, 0xc2b27222u, 0xdf57c2abu, 0xb754ee63u, 0x0f519b3bu, 0x6752b7f3u,
        0x349afa29u, 0x5c99d6e1u, 0xe49ca3b9u, 0x8c9f8f71u, 0x917a3ff8u, 0xf9791330u, 0x417c6668u, 0x297f4aa0u,
        0xe6ecfddcu, 0x8eefd114u, 0x36eaa44cu, 0x5ee98884u, 0x430c380du, 0x2b0f14c5u, 0x930a619du, 0xfb094d55u,
        0xa8c1008fu, 0xc0c22c47u, 0x78c7591fu, 0x10c475d7u, 0x0d21c55eu, 0x6522e996u, 0xdd279cceu, 0xb524b006u,
        0x47ec84c7u, 0x2fefa80fu, 0x97eadd57u, 0xffe9f19fu, 0xe20c4116u, 0x8a0f6ddeu, 0x320a1886u, 0x5a09344eu,
        0x09c17994u, 0x61c2555cu, 0xd9c72004u, 0xb1c40cccu, 0xac21bc45u, 0xc422908du, 0x7c27e5d5u, 0x1424c91du,
        0xdbb77e61u, 0xb3b452a9u, 0x0bb127f1u, 0x63b20b39u, 0x7e57bbb0u, 0x16549778u, 0xae51e220u, 0xc652cee8u,
        0x959a8332u, 0xfd99affau, 0x459cdaa2u, 0x2d9ff66au, 0x307a46e3u, 0x58796a2bu, 0xe07c1f73u, 0x887f33bbu,
        0xf56e0ef4u, 0x9d6d223cu, 0x25685764u, 0x4d6b7bacu, 0x508ecb25u, 0x388de7edu, 0x808892b5u, 0xe88bbe7du,
        0xbb43f3a7u, 0xd340df6fu, 0x6b45aa37u, 0x034686ffu, 0x1ea33676u, 0x76a01abeu, 0xcea56fe6u, 0xa6a6432eu,
        0x6935f452u, 0x0136d89au, 0xb933adc2u, 0xd130810au, 0xccd53183u, 0xa4d61d4bu, 0x1cd36813u, 0x74d044dbu,
        0x27180901u, 0x4f1b25c9u, 0xf71e5091u, 0x9f1d7c59u, 0x82f8ccd0u, 0xeafbe018u, 0x52fe9540u, 0x3afdb988u,
        0xc8358d49u, 0xa036a181u, 0x1833d4d9u, 0x7030f811u, 0x6dd54898u, 0x05d66450u, 0xbdd31108u, 0xd5d03dc0u,
        0x8618701au, 0xee1b5cd2u, 0x561e298au, 0x3e1d0542u, 0x23f8b5cbu, 0x4bfb9903u, 0xf3feec5bu, 0x9bfdc093u,
        0x546e77efu, 0x3c6d5b27u, 0x84682e7fu, 0xec6b02b7u, 0xf18eb23eu, 0x998d9ef6u, 0x2188ebaeu, 0x498bc766u,
        0x1a438abcu, 0x7240a674u, 0xca45d32cu, 0xa246ffe4u, 0xbfa34f6du, 0xd7a063a5u, 0x6fa516fdu, 0x07a63a35u,
        0x8fd9098eu, 0xe7da2546u, 0x5fdf501eu, 0x37dc7cd6u, 0x2a39cc5fu, 0x423ae097u, 0xfa3f95cfu, 0x923cb907u,
        0xc1f4f4ddu, 0xa9f7d815u, 0x11f2ad4du, 0x79f18185u, 0x6414310cu, 0x0c171dc4u, 0xb412689cu, 0xdc114454u,
        0x1382f328u, 0x7b81dfe0u, 0xc384aab8u, 0xab878670u, 0xb66236f9u, 0xde611a31u, 0x66646f69u, 0x0e6743a1u,
        0x5daf0e7bu, 0x35ac22b3u, 0x8da957ebu, 0xe5aa7b23u, 0xf84fcbaau, 0x904ce762u, 0x2849923au, 0x404abef2u,
        0xb2828a33u, 0xda81a6fbu, 0x6284d3a3u, 0x0a87ff6bu, 0x17624fe2u, 0x7f61632au, 0xc7641672u, 0xaf673abau,
        0xfcaf7760u, 0x94ac5ba8u, 0x2ca92ef0u, 0x44aa0238u, 0x594fb2b1u, 0x314c9e79u, 0x8949eb21u, 0xe14ac7e9u,
        0x2ed97095u, 0x46da5c5du, 0xfedf2905u, 0x96dc05cdu, 0x8b39b544u, 0xe33a998cu, 0x5b3fecd4u, 0x333cc01cu,
        0x60f48dc6u, 0x08f7a10eu, 0xb0f2d456u, 0xd8f1f89eu, 0xc5144817u, 0xad1764dfu, 0x15121187u, 0x7d113d4fu,
    },
    {
        0x00000000u, 0x493c7d27u, 0x9278fa4eu, 0xdb448769u, 0x211d826du, 0x6821ff4au, 0xb3657823u, 0xfa590504u,
        0x423b04dau, 0x0b0779fdu, 0xd043fe94u, 0x997f83b3u, 0x632686b7u, 0x2a1afb90u, 0xf15e7cf9u, 0xb86201deu,
        0x847609b4u, 0xcd4a7493u, 0x160ef3fau, 0x5f328eddu, 0xa56b8bd9u, 0xec57f6feu, 0x37137197u, 0x7e2f0cb0u,
        0xc64d0d6eu, 0x8f717049u, 0x5435f720u, 0x1d098a07u, 0xe7508f03u, 0xae6cf224u, 0x7528754du, 0x3c14086au,
        0x0d006599u, 0x443c18beu, 0x9f789fd7u, 0xd644e2f0u, 0x2c1de7f4u, 0x65219ad3u, 0xbe651dbau, 0xf759609du,
        0x4f3b6143u, 0x06071c64u, 0xdd439b0du, 0x947fe62au, 0x6e26e32eu, 0x271a9e09u, 0xfc5e1960u, 0xb5626447u,
        0x89766c2du, 0xc04a110au, 0x1b0e9663u, 0x5232eb44u, 0xa86bee40u, 0xe1579367u, 0x3a13140eu, 0x732f6929u,
        0xcb4d68f7u, 0x827115d0u, 0x593592b9u, 0x1009ef9eu, 0xea50ea9au, 0xa36c97bdu, 0x782810d4u, 0x31146df3u,
        0x1a00cb32u, 0x533cb615u, 0x8878317cu, 0xc1444c5bu, 0x3b1d495fu, 0x72213478u, 0xa965b311u, 0xe059ce36u,
        0x583bcfe8u, 0x1107b2cfu, 0xca4335a6u, 0x837f4881u, 0x79264d85u, 0x301a30a2u, 0xeb5eb7cbu, 0xa262caecu,
        0x9e76c286u, 0xd74abfa1u, 0x0c0e38c8u, 0x453245efu, 0xbf6b40ebu, 0xf6573dccu, 0x2d13baa5u, 0x642fc782u,
        0xdc4dc65cu, 0x9571bb7bu, 0x4e353c12u, 0x07094135u, 0xfd504431u, 0xb46c3916u, 0x6f28be7fu, 0x2614c358u,
        0x1700aeabu, 0x5e3cd38cu, 0x857854e5u, 0xcc4429c2u, 0x361d2cc6u, 0x7f2151e1u, 0xa465d688u, 0xed59abafu,
        0x553baa71u, 0x1c07d756u, 0xc743503fu, 0x8e7f2d18u, 0x7426281cu, 0x3d1a553bu, 0xe65ed252u, 0xaf62af75u,
        0x9376a71fu, 0xda4ada38u, 0x010e5d51u, 0x48322076u, 0xb26b2572u, 0xfb575855u, 0x2013df3cu, 0x692fa21bu,
        0xd14da3c5u, 0x9871dee2u, 0x4335598bu, 0x0a0924acu, 0xf05021a8u, 0xb96c5c8fu, 0x6228dbe6u, 0x2b14a6c1u,
        0x34019664u, 0x7d3deb43u, 0xa6796c2au, 0xef45110du, 0x151c1409u, 0x5c20692eu, 0x8764ee47u, 0xce589360u,
        0x763a92beu, 0x3f06ef99u, 0xe44268f0u, 0xad7e15d7u, 0x572710d3u, 0x1e1b6df4u, 0xc55fea9du, 0x8c6397bau,
        0xb0779fd0u, 0xf94be2f7u, 0x220f659eu, 0x6b3318b9u, 0x916a1dbdu, 0xd856609au, 0x0312e7f3u, 0x4a2e9ad4u,
        0xf24c9b0au, 0xbb70e62du, 0x60346144u, 0x29081c63u, 0xd3511967u, 0x9a6d6440u, 0x4129e329u, 0x08159e0eu,
        0x3901f3fdu, 0x703d8edau, 0xab7909b3u, 0xe2457494u, 0x181c7190u, 0x51200cb7u, 0x8a648bdeu, 0xc358f6f9u,
        0x7b3af727u, 0x32068a00u, 0xe9420d69u, 0xa07e704eu, 0x5a27754au, 0x131b086du, 0xc85f8f04u, 0x8163f223u,
        0xbd77fa49u, 0xf44b876eu, 0x2f0f0007u, 0x66337d20u, 0x9c6a7824u, 0xd5560503u, 0x0e12826au, 0x472eff4du,
        0xff4cfe93u, 0xb67083b4u, 0x6d3404ddu, 0x240879fau, 0xde517cfeu, 0x976d01d9u, 0x4c2986b0u, 0x0515fb97u,
        0x2e015d56u, 0x673d2071u, 0xbc79a718u, 0xf545da3fu, 0x0f1cdf3bu, 0x4620a21cu, 0x9d642575u, 0xd4585852u,
        0x6c3a598cu, 0x250624abu, 0xfe42a3c2u, 0xb77edee5u, 0x4d27dbe1u, 0x041ba6c6u, 0xdf5f21afu, 0x96635c88u,
        0xaa7754e2u, 0xe34b29c5u, 0x380faeacu, 0x7133d38bu, 0x8b6ad68fu, 0xc256aba8u, 0x19122cc1u, 0x502e51e6u,
        0xe84c5038u, 0xa1702d1fu, 0x7a34aa76u, 0x3308d751u, 0xc951d255u, 0x806daf72u, 0x5b29281bu, 0x1215553cu,
        0x230138cfu, 0x6a3d45e8u, 0xb179c281u, 0xf845bfa6u, 0x021cbaa2u, 0x4b20c785u, 0x906440ecu, 0xd9583dcbu,
        0x613a3c15u, 0x28064132u, 0xf342c65bu, 0xba7ebb7cu, 0x4027be78u, 0x091bc35fu, 0xd25f4436u, 0x9b633911u,
        0xa777317bu, 0xee4b4c5cu, 0x350fcb35u, 0x7c33b612u, 0x866ab316u, 0xcf56ce31u, 0x14124958u, 0x5d2e347fu,
        0xe54c35a1u, 0xac704886u, 0x7734cfefu, 0x3e08b2c8u, 0xc451b7ccu, 0x8d6dcaebu, 0x56294d82u, 0x1f1530a5u,
    },
};

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__)) && !defined(QUANTCODEC_NO_HW_CRC)
#include <nmmintrin.h>
#define QC__HW_CRC 1
/* the SSE 4.2 crc32 instruction (the same polynomial), where the CPU has it: same values */
__attribute__((target("sse4.2"))) static uint32_t qc__crc32c_hw(const uint8_t *p, size_t n, uint32_t seed) {
    uint64_t crc = (uint32_t)~seed;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        crc = _mm_crc32_u64(crc, v);
        p += 8;
        n -= 8;
    }
    while (n--) crc = _mm_crc32_u8((uint32_t)crc, *p++);
    return ~(uint32_t)crc;
}
#endif

/* the portable form: slicing by 8 */
static uint32_t qc__crc32c_sw(const uint8_t *data, size_t len, uint32_t seed) {
    uint32_t crc = ~seed;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint32_t lo = crc ^ ((uint32_t)data[i] | (uint32_t)data[i + 1] << 8 | (uint32_t)data[i + 2] << 16 | (uint32_t)data[i + 3] << 24);
        crc = qc__crc_table[7][lo & 0xFF] ^ qc__crc_table[6][(lo >> 8) & 0xFF] ^ qc__crc_table[5][(lo >> 16) & 0xFF] ^
              qc__crc_table[4][lo >> 24] ^ qc__crc_table[3][data[i + 4]] ^ qc__crc_table[2][data[i + 5]] ^
              qc__crc_table[1][data[i + 6]] ^ qc__crc_table[0][data[i + 7]];
    }
    for (; i < len; i++) crc = qc__crc_table[0][(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

uint32_t qc_crc32c(const uint8_t *data, size_t len, uint32_t seed) {
#ifdef QC__HW_CRC
    if (__builtin_cpu_supports("sse4.2")) return qc__crc32c_hw(data, len, seed);
#endif
    return qc__crc32c_sw(data, len, seed);
}

/* ---- SipHash-2-4 (Aumasson and Bernstein 2012) and the key derivation (wire-format 17) ---------- */

#define QC__ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define QC__SIPROUND                                                            \
    do {                                                                        \
        v0 += v1; v1 = QC__ROTL(v1, 13); v1 ^= v0; v0 = QC__ROTL(v0, 32);       \
        v2 += v3; v3 = QC__ROTL(v3, 16); v3 ^= v2;                              \
        v0 += v3; v3 = QC__ROTL(v3, 21); v3 ^= v0;                              \
        v2 += v1; v1 = QC__ROTL(v1, 17); v1 ^= v2; v2 = QC__ROTL(v2, 32);       \
    } while (0)

uint64_t qc_siphash(const uint8_t key[16], const uint8_t *data, size_t len) {
    uint64_t k0 = qc__load_le64(key), k1 = qc__load_le64(key + 8);
    uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
    uint64_t b = (uint64_t)(len & 0xFF) << 56, m;
    size_t i, full = len & ~(size_t)7;
    for (i = 0; i < full; i += 8) {
        m = qc__load_le64(data + i);
        v3 ^= m;
        QC__SIPROUND; QC__SIPROUND;
        v0 ^= m;
    }
    for (i = 0; i < (len & 7); i++) b |= (uint64_t)data[full + i] << (8 * i);
    v3 ^= b;
    QC__SIPROUND; QC__SIPROUND;
    v0 ^= b;
    v2 ^= 0xFF;
    QC__SIPROUND; QC__SIPROUND; QC__SIPROUND; QC__SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

static void qc__put_le64(uint8_t *p, uint64_t v) {
    int i;
    for (i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* mk = u64le(SipHash(Z, 0x01 || key)) || u64le(SipHash(Z, 0x02 || key)), Z = "quantcodec mac k" */
int qc_mac_master(const uint8_t *key, size_t key_len, uint8_t mk[16]) {
    uint8_t msg[256];
    if (key == NULL || key_len < 1 || key_len > 255) return -1;
    memcpy(msg + 1, key, key_len);
    msg[0] = 1;
    qc__put_le64(mk, qc_siphash((const uint8_t *)"quantcodec mac k", msg, key_len + 1));
    msg[0] = 2;
    qc__put_le64(mk + 8, qc_siphash((const uint8_t *)"quantcodec mac k", msg, key_len + 1));
    return 0;
}

/* sub(L) = u64le(SipHash(mk, L || 0x00)) || u64le(SipHash(mk, L || 0x01)) (labels: at most 64 bytes) */
void qc_mac_sub(const uint8_t mk[16], const uint8_t *label, size_t len, uint8_t out[16]) {
    uint8_t msg[65];
    if (len > 64) len = 64;
    memcpy(msg, label, len);
    msg[len] = 0;
    qc__put_le64(out, qc_siphash(mk, msg, len + 1));
    msg[len] = 1;
    qc__put_le64(out + 8, qc_siphash(mk, msg, len + 1));
}

static const uint32_t qc__sha_k[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
    0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
    0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
    0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
    0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
    0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
    0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u
};

static uint32_t qc__ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void qc__sha_block(uint32_t h[8], const uint8_t *p) {
    uint32_t w[64], a, b, c, d, e, f, g, hh, t1, t2;
    int i;
    for (i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (i = 16; i < 64; i++) {
        uint32_t s0 = qc__ror(w[i - 15], 7) ^ qc__ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = qc__ror(w[i - 2], 17) ^ qc__ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = h[0]; b = h[1]; c = h[2]; d = h[3]; e = h[4]; f = h[5]; g = h[6]; hh = h[7];
    for (i = 0; i < 64; i++) {
        t1 = hh + (qc__ror(e, 6) ^ qc__ror(e, 11) ^ qc__ror(e, 25)) + ((e & f) ^ (~e & g)) + qc__sha_k[i] + w[i];
        t2 = (qc__ror(a, 2) ^ qc__ror(a, 13) ^ qc__ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void qc_sha256(const uint8_t *data, size_t len, uint8_t out[32]) {
    uint32_t h[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                     0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
    uint8_t tail[128];
    size_t i, full = len / 64 * 64, rest = len - full, tl;
    uint64_t bits = (uint64_t)len * 8;
    for (i = 0; i < full; i += 64) qc__sha_block(h, data + i);
    memset(tail, 0, sizeof tail);
    if (rest) memcpy(tail, data + full, rest);
    tail[rest] = 0x80;
    tl = rest + 1 + 8 <= 64 ? 64 : 128;
    for (i = 0; i < 8; i++) tail[tl - 1 - i] = (uint8_t)(bits >> (8 * i));
    qc__sha_block(h, tail);
    if (tl == 128) qc__sha_block(h, tail + 64);
    for (i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(h[i] >> 24); out[4 * i + 1] = (uint8_t)(h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(h[i] >> 8); out[4 * i + 3] = (uint8_t)h[i];
    }
}

/* ---- float.hex ------------------------------------------------------------------------------- */

int qc_float_hex(double x, char *buf) {
    uint64_t u, mant;
    int neg, e, n = 0, i;
    static const char hx[] = "0123456789abcdef";
    memcpy(&u, &x, 8);
    neg = (int)(u >> 63);
    e = (int)((u >> 52) & 0x7FF);
    mant = u & 0xFFFFFFFFFFFFFull;
    if (e == 0x7FF) {
        if (mant) { strcpy(buf, "nan"); return 3; }
        strcpy(buf, neg ? "-inf" : "inf");
        return neg ? 4 : 3;
    }
    if (neg) buf[n++] = '-';
    if (e == 0 && mant == 0) { strcpy(buf + n, "0x0.0p+0"); return n + 8; }
    buf[n++] = '0'; buf[n++] = 'x'; buf[n++] = e ? '1' : '0'; buf[n++] = '.';
    for (i = 12; i >= 0; i--) buf[n++] = hx[(mant >> (4 * i)) & 0xF];
    n += sprintf(buf + n, "p%+d", e ? e - 1023 : -1022);
    return n;
}

int qc_parse_hex_double(const char *s, double *out) {
    char *end;
    if (s == NULL || *s == 0) return -1;
    *out = strtod(s, &end);
    return *end == 0 ? 0 : -1;
}

/* ---- JSON ------------------------------------------------------------------------------------ */

#define QC__JSON_DEPTH 64

typedef struct qc__jp {
    const char *s; size_t n, i; qc__arena *a; qc_error *err; int depth;
} qc__jp;

static void qc__jline(const qc__jp *p, size_t at, int *line, int *col) {
    size_t k;
    *line = 1; *col = 1;
    for (k = 0; k < at && k < p->n; k++) {
        if (p->s[k] == '\n') { (*line)++; *col = 1; } else (*col)++;
    }
}

static int qc__jfail(qc__jp *p, const char *what) {
    int line, col;
    qc__jline(p, p->i, &line, &col);
    return qc__fail(p->err, "not valid JSON: %s at line %d column %d (char %lu)", what, line, col,
                    (unsigned long)p->i);
}

static void qc__jws(qc__jp *p) {
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')) p->i++;
}

static int qc__hex4(const char *s, unsigned *v) {
    int k;
    *v = 0;
    for (k = 0; k < 4; k++) {
        char c = s[k];
        *v <<= 4;
        if (c >= '0' && c <= '9') *v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') *v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') *v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    return 0;
}

static size_t qc__utf8_put(char *o, unsigned cp) {   /* (lone surrogates as 3 bytes, as WTF-8) */
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* One UTF-8 sequence at s (n bytes left): its length and code point, or 0 if not well-formed
   UTF-8 (RFC 3629: overlongs, past U+10FFFF, truncated, and the encoded surrogates ED A0 80 ..
   ED BF BF refused). */
static size_t qc__utf8_get(const unsigned char *s, size_t n, unsigned *cp) {
    unsigned c = s[0];
    size_t len, k;
    unsigned v, min;
    if (c < 0x80) { *cp = c; return 1; }
    if (c >= 0xC2 && c <= 0xDF) { len = 2; v = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; v = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; v = c & 0x07; min = 0x10000; }
    else return 0;
    if (len > n) return 0;
    for (k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[k] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

static int qc__jstring(qc__jp *p, const char **out, size_t *olen) {
    size_t start = ++p->i, k, cap = 0, n = 0;
    char *buf;
    /* the decoded text is never longer than the source */
    for (k = start; k < p->n && p->s[k] != '"'; k++) {
        if (p->s[k] == '\\') k++;
    }
    if (k >= p->n) { p->i = start - 1; return qc__jfail(p, "unterminated string"); }
    cap = k - start;
    buf = (char *)qc__arena_alloc(p->a, cap + 1);
    if (buf == NULL) return qc__fail(p->err, "out of memory reading JSON");
    while (p->s[p->i] != '"') {
        unsigned char c = (unsigned char)p->s[p->i];
        if (c < 0x20) return qc__jfail(p, "control character in a string");
        if (c == '\\') {
            char e = p->s[p->i + 1];
            p->i += 2;
            switch (e) {
            case '"': buf[n++] = '"'; break;
            case '\\': buf[n++] = '\\'; break;
            case '/': buf[n++] = '/'; break;
            case 'b': buf[n++] = '\b'; break;
            case 'f': buf[n++] = '\f'; break;
            case 'n': buf[n++] = '\n'; break;
            case 'r': buf[n++] = '\r'; break;
            case 't': buf[n++] = '\t'; break;
            case 'u': {
                unsigned cp, lo;
                if (p->i + 4 > p->n || qc__hex4(p->s + p->i, &cp) < 0) return qc__jfail(p, "bad \\u escape");
                p->i += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF && p->i + 6 <= p->n && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u'
                    && qc__hex4(p->s + p->i + 2, &lo) == 0 && lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p->i += 6;
                }
                n += qc__utf8_put(buf + n, cp);
                break;
            }
            default:
                p->i -= 2;
                return qc__jfail(p, "bad escape in a string");
            }
            continue;
        }
        {
            unsigned cp;
            size_t l = qc__utf8_get((const unsigned char *)p->s + p->i, p->n - p->i, &cp);
            if (l == 0) return qc__jfail(p, "invalid UTF-8 in a string (a bad, overlong or truncated sequence, or an encoded surrogate)");
            memcpy(buf + n, p->s + p->i, l);
            n += l;
            p->i += l;
        }
    }
    p->i++;
    buf[n] = 0;
    *out = buf;
    *olen = n;
    return 0;
}

static int qc__jvalue(qc__jp *p, qc_json *v);

static int qc__jnumber(qc__jp *p, qc_json *v) {
    size_t st = p->i, k;
    int frac = 0;
    char *txt;
    const char *s = p->s;
    if (p->i < p->n && s[p->i] == '-') p->i++;
    if (p->i >= p->n) return qc__jfail(p, "bad number");
    if (s[p->i] == '0') p->i++;
    else if (s[p->i] >= '1' && s[p->i] <= '9') { while (p->i < p->n && s[p->i] >= '0' && s[p->i] <= '9') p->i++; }
    else return qc__jfail(p, "bad number");
    if (p->i < p->n && s[p->i] == '.') {
        frac = 1;
        p->i++;
        if (p->i >= p->n || !(s[p->i] >= '0' && s[p->i] <= '9')) return qc__jfail(p, "bad number");
        while (p->i < p->n && s[p->i] >= '0' && s[p->i] <= '9') p->i++;
    }
    if (p->i < p->n && (s[p->i] == 'e' || s[p->i] == 'E')) {
        frac = 1;
        p->i++;
        if (p->i < p->n && (s[p->i] == '+' || s[p->i] == '-')) p->i++;
        if (p->i >= p->n || !(s[p->i] >= '0' && s[p->i] <= '9')) return qc__jfail(p, "bad number");
        while (p->i < p->n && s[p->i] >= '0' && s[p->i] <= '9') p->i++;
    }
    txt = qc__arena_strdup(p->a, s + st, p->i - st);
    if (txt == NULL) return qc__fail(p->err, "out of memory reading JSON");
    v->type = QC_JSON_NUMBER;
    v->text = txt;
    v->len = p->i - st;
    v->num = strtod(txt, NULL);
    v->is_int = !frac;
    v->neg = txt[0] == '-';
    v->int_ok = 0;
    if (!frac) {
        uint64_t u = 0;
        int ok = 1;
        for (k = (size_t)v->neg; k < v->len; k++) {
            unsigned dg = (unsigned)(txt[k] - '0');
            if (u > (UINT64_MAX - dg) / 10) { ok = 0; break; }
            u = u * 10 + dg;
        }
        if (u == 0) v->neg = 0;
        if (ok && v->neg && u > ((uint64_t)1 << 63)) ok = 0;
        v->u = ok ? u : 0;
        v->int_ok = ok;
    }
    return 0;
}

static int qc__jlit(qc__jp *p, const char *lit, int type, qc_json *v) {
    size_t l = strlen(lit);
    if (p->n - p->i < l || memcmp(p->s + p->i, lit, l) != 0) return qc__jfail(p, "unexpected character");
    p->i += l;
    v->type = type;
    return 0;
}

static int qc__jcontainer(qc__jp *p, qc_json *v, int obj) {
    size_t cap = 8, n = 0, k;
    qc_json *kids;
    if (++p->depth > QC__JSON_DEPTH) return qc__jfail(p, "nested too deeply");
    kids = (qc_json *)qc__arena_alloc(p->a, cap * sizeof *kids);
    if (kids == NULL) return qc__fail(p->err, "out of memory reading JSON");
    p->i++;
    qc__jws(p);
    if (p->i < p->n && p->s[p->i] == (obj ? '}' : ']')) {
        p->i++;
    } else {
        for (;;) {
            qc_json *kid;
            if (n == cap) {
                qc_json *nk = (qc_json *)qc__arena_alloc(p->a, 2 * cap * sizeof *kids);
                if (nk == NULL) return qc__fail(p->err, "out of memory reading JSON");
                memcpy(nk, kids, n * sizeof *kids);
                kids = nk;
                cap *= 2;
            }
            kid = &kids[n];
            memset(kid, 0, sizeof *kid);
            qc__jws(p);
            if (obj) {
                const char *key;
                size_t kl;
                if (p->i >= p->n || p->s[p->i] != '"') return qc__jfail(p, "expected a key in quotes");
                if (qc__jstring(p, &key, &kl) < 0) return -1;
                if (strlen(key) != kl) return qc__jfail(p, "NUL character in a key");
                for (k = 0; k < n; k++)
                    if (strcmp(kids[k].key, key) == 0) return qc__jfail(p, "duplicate key");
                qc__jws(p);
                if (p->i >= p->n || p->s[p->i] != ':') return qc__jfail(p, "expected ':'");
                p->i++;
                if (qc__jvalue(p, kid) < 0) return -1;
                kid->key = key;
            } else {
                if (qc__jvalue(p, kid) < 0) return -1;
            }
            n++;
            qc__jws(p);
            if (p->i < p->n && p->s[p->i] == ',') { p->i++; continue; }
            if (p->i < p->n && p->s[p->i] == (obj ? '}' : ']')) { p->i++; break; }
            return qc__jfail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    p->depth--;
    v->type = obj ? QC_JSON_OBJECT : QC_JSON_ARRAY;
    v->kids = kids;
    v->nkids = n;
    return 0;
}

static int qc__jvalue(qc__jp *p, qc_json *v) {
    char c;
    qc__jws(p);
    if (p->i >= p->n) return qc__jfail(p, "unexpected end of the document");
    c = p->s[p->i];
    switch (c) {
    case '{': return qc__jcontainer(p, v, 1);
    case '[': return qc__jcontainer(p, v, 0);
    case '"': v->type = QC_JSON_STRING; return qc__jstring(p, &v->text, &v->len);
    case 't': return qc__jlit(p, "true", QC_JSON_TRUE, v);
    case 'f': return qc__jlit(p, "false", QC_JSON_FALSE, v);
    case 'n': return qc__jlit(p, "null", QC_JSON_NULL, v);
    default:
        if (c == '-' || (c >= '0' && c <= '9')) return qc__jnumber(p, v);
        return qc__jfail(p, "unexpected character");
    }
}

static qc_json *qc__json_parse_arena(const char *text, size_t len, qc__arena *a, qc_error *err) {
    qc__jp p;
    qc_json *root = (qc_json *)qc__arena_alloc(a, sizeof *root);
    if (root == NULL) { qc__fail(err, "out of memory reading JSON"); return NULL; }
    memset(root, 0, sizeof *root);
    p.s = text; p.n = len; p.i = 0; p.a = a; p.err = err; p.depth = 0;
    if (len >= 3 && (unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB && (unsigned char)text[2] == 0xBF)
        p.i = 3;
    if (qc__jvalue(&p, root) < 0) return NULL;
    qc__jws(&p);
    if (p.i != p.n) { qc__jfail(&p, "extra data after the document"); return NULL; }
    return root;
}

qc_json *qc_json_parse(const char *text, size_t len, const qc_allocator *al, void **mem, qc_error *err) {
    qc__arena a;
    qc_json *r;
    a.al = qc__allocator_of(al);
    a.head = NULL;
    r = qc__json_parse_arena(text, len, &a, err);
    if (r == NULL) { qc__arena_free(a.al, a.head); *mem = NULL; return NULL; }
    *mem = a.head;
    return r;
}

void qc_json_free(void *mem, const qc_allocator *al) { qc__arena_free(qc__allocator_of(al), (qc__chunk *)mem); }

const qc_json *qc_json_get(const qc_json *obj, const char *key) {
    size_t k;
    if (obj == NULL || obj->type != QC_JSON_OBJECT) return NULL;
    for (k = 0; k < obj->nkids; k++)
        if (strcmp(obj->kids[k].key, key) == 0) return &obj->kids[k];
    return NULL;
}

/* ---- the codecs' rules (quantcodec/_kernels.pxd, operation for operation) --------------------- */

#define QC__SQRT1_2 0.70710678118654752440

static uint64_t qc__dbits(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }
static double qc__bitsd(uint64_t u) { double x; memcpy(&x, &u, 8); return x; }

/* Bounded modes: 0 endpoints (L = 2**b - 1), 1 bins (L = 2**b), 2 midpoint (the endpoints rule with
   L = 2**b - 2: the middle code L / 2 decodes to exactly the centre; 2**b - 1 is not a code). */
static double qc__bounded_qt(double t, double L, int mode) {
    QC__NOFMA
    if (mode != 1) {
        t = t > 0.0 ? t : 0.0;
        t = t < 1.0 ? t : 1.0;
        return t * L + 0.5;
    }
    t = t * L;
    t = t > 0.0 ? t : 0.0;
    return t < L ? t : L - 1.0;
}

static double qc__bounded_dqd(double cd, double lo, double hi, double R, double L, int mode) {
    QC__NOFMA
    double v;
    if (mode != 1) {
        v = lo + (cd * R) / L;
        if (mode == 2 && cd + cd == L) v = (lo + hi) * 0.5;
        v = cd == L ? hi : v;
        return cd == 0.0 ? lo : v;
    }
    return lo + ((cd + 0.5) * R) / L;
}

static uint64_t qc__fixed_q(const qc_codec *d, double x, int *nc) {
    QC__NOFMA
    double v = (x - d->lo) / d->hi, r;
    if (v != v) { (*nc)++; return 0; }
    r = round(v);
    if (r < d->fmin) { (*nc)++; return (uint64_t)d->smin; }
    if (r >= d->fmax) { (*nc)++; return d->mode ? (uint64_t)d->smax : d->maxcode; }
    if (d->mode) return (uint64_t)(int64_t)r;
    return (uint64_t)r;
}

static double qc__fixed_dq(const qc_codec *d, uint64_t c) {
    QC__NOFMA
    if (d->mode) return d->lo + ((double)(int64_t)c) * d->hi;
    return d->lo + ((double)c) * d->hi;
}

static int qc__isfinite(double x) { return x - x == 0.0; }

static uint64_t qc__angle_q(const qc_codec *d, double x, int *nc) {
    QC__NOFMA
    double w;
    if (!qc__isfinite(x)) { (*nc)++; return 0; }
    w = fabs(x) < d->lo ? x : fmod(x, d->lo);
    if (w < 0.0) w = w + d->lo;
    return ((uint64_t)(w / d->lo * d->L + 0.5)) & d->maxcode;
}

static double qc__angle_dq(const qc_codec *d, uint64_t c) {
    QC__NOFMA
    int64_t sc = (int64_t)c;
    if (d->mode && c > (d->maxcode >> 1)) sc = sc - (int64_t)d->maxcode - 1;
    return ((double)sc * d->lo) / d->L;
}

static double qc__power_root(double t, double p, double inv_p) {
    QC__NOFMA
    if (p == 1.0) return t;
    if (p == 2.0) return sqrt(t);
    return pow(t, inv_p);
}

static double qc__power_raise(double r, double p) {
    QC__NOFMA
    if (p == 1.0) return r;
    if (p == 2.0) return r * r;
    return pow(r, p);
}

static uint64_t qc__power_q(const qc_codec *d, double x, int *nc) {
    QC__NOFMA
    double a = fabs(x);
    uint64_t m;
    if (a != a) { (*nc)++; return 0; }
    if (a > d->lo) { (*nc)++; a = d->lo; }
    m = (uint64_t)(qc__power_root(a / d->lo, d->hi, d->R) * d->L + 0.5);
    if (m == 0) return 0;
    if (x < 0.0) return (((uint64_t)1) << (d->bits - 1)) | m;
    return m;
}

static double qc__power_dq(const qc_codec *d, uint64_t c) {
    QC__NOFMA
    uint64_t m = c & (d->maxcode >> 1);
    double v;
    if (m == 0) return 0.0;
    v = d->lo * qc__power_raise((double)m / d->L, d->hi);
    if (c >> (d->bits - 1)) return -v;
    return v;
}

static uint64_t qc__half_q(double x) {
    uint64_t d = qc__dbits(x);
    uint64_t h_sgn = (d & 0x8000000000000000ull) >> 48;
    uint64_t d_exp = d & 0x7ff0000000000000ull;
    uint64_t d_sig, ret, h_exp;
    if (d_exp >= 0x40f0000000000000ull) {
        if (d_exp == 0x7ff0000000000000ull) {
            d_sig = d & 0x000fffffffffffffull;
            if (d_sig != 0) {
                ret = 0x7c00 + (d_sig >> 42);
                if (ret == 0x7c00) ret += 1;
                return h_sgn + ret;
            }
        }
        return h_sgn + 0x7c00;
    }
    if (d_exp <= 0x3f00000000000000ull) {
        if (d_exp < 0x3e60000000000000ull) return h_sgn;
        d_exp >>= 52;
        d_sig = 0x0010000000000000ull + (d & 0x000fffffffffffffull);
        d_sig <<= (d_exp - 998);
        if ((d_sig & 0x003fffffffffffffull) != 0x0010000000000000ull) d_sig += 0x0010000000000000ull;
        return h_sgn + (d_sig >> 53);
    }
    h_exp = (d_exp - 0x3f00000000000000ull) >> 42;
    d_sig = d & 0x000fffffffffffffull;
    if ((d_sig & 0x000007ffffffffffull) != 0x0000020000000000ull) d_sig += 0x0000020000000000ull;
    return h_sgn + h_exp + (d_sig >> 42);
}

static double qc__half_dq(uint64_t h) {
    uint64_t h_exp = h & 0x7c00, d_sgn = (h & 0x8000) << 48, h_sig;
    int e;
    if (h_exp == 0) {
        h_sig = h & 0x03ff;
        if (h_sig == 0) return qc__bitsd(d_sgn);
        h_sig <<= 1;
        e = 0;
        while ((h_sig & 0x0400) == 0) { h_sig <<= 1; e++; }
        return qc__bitsd(d_sgn + (((uint64_t)(1023 - 15 - e)) << 52) + ((h_sig & 0x03ff) << 42));
    }
    if (h_exp == 0x7c00) return qc__bitsd(d_sgn + 0x7ff0000000000000ull + ((h & 0x03ff) << 42));
    return qc__bitsd(d_sgn + (((h & 0x7fff) + 0xfc000) << 42));
}

static uint64_t qc__grid_q(const qc_codec *d, double x, int *nc) {
    QC__NOFMA
    double u = x / d->lo, cell, t, v;
    uint64_t off, cmask;
    if (u != u) { (*nc)++; return 0; }
    cmask = d->maxcode >> d->cbits;
    if (u < d->fmin) { (*nc)++; return (((uint64_t)d->smin) & cmask) << d->cbits; }
    cell = floor(u);
    if (cell >= d->fmax) { (*nc)++; return ((((uint64_t)d->smax) & cmask) << d->cbits) | ((((uint64_t)1) << d->cbits) - 1); }
    t = u - cell;
    v = t * d->L;
    if (v >= d->L) off = (((uint64_t)1) << d->cbits) - 1;
    else off = (uint64_t)v;
    return ((((uint64_t)(int64_t)cell) & cmask) << d->cbits) | off;
}

static double qc__grid_dq(const qc_codec *d, uint64_t c) {
    QC__NOFMA
    int up = 64 - d->bits;
    int64_t cell = (int64_t)(c << up);
    uint64_t off = c & ((((uint64_t)1) << d->cbits) - 1);
    /* an arithmetic shift, written portably */
    cell = cell >= 0 ? cell >> (up + d->cbits) : -(int64_t)((~(uint64_t)cell) >> (up + d->cbits)) - 1;
    return ((double)cell + ((double)off + 0.5) / d->L) * d->lo;
}

static int qc__scalar_valid(const qc_codec *d, uint64_t c) {
    int64_t s;
    if (d->kind == QC_INT || (d->kind == QC_FIXED && d->mode)) {
        s = (int64_t)c;
        return s >= d->smin && s <= d->smax;
    }
    if (c > d->maxcode) return 0;
    if (d->kind == QC_POWERCURVE) return !((c >> (d->bits - 1)) && (c & (d->maxcode >> 1)) == 0);
    return 1;
}

/* Quat */
static double qc__quat_kept(const qc_codec *d, uint64_t c, int k) {
    QC__NOFMA
    uint64_t mask = (((uint64_t)1) << d->cbits) - 1;
    return qc__bounded_dqd((double)(int32_t)((c >> ((2 - k) * d->cbits)) & mask), d->lo, d->hi, d->R, d->L, d->mode);
}

static void qc__quat_rebuild(int idx, double a, double b, double c, double *out) {
    QC__NOFMA
    double s = (a * a + b * b) + c * c;
    double w = sqrt(1.0 - s > 0.0 ? 1.0 - s : 0.0);
    double q0 = a, q1 = b, q2 = c, q3 = w, n;
    int u = idx <= 2;
    q3 = u ? c : q3;
    q2 = u ? w : q2;
    u = idx <= 1;
    q2 = u ? b : q2;
    q1 = u ? w : q1;
    u = idx == 0;
    q1 = u ? a : q1;
    q0 = u ? w : q0;
    n = sqrt(((q0 * q0 + q1 * q1) + q2 * q2) + q3 * q3);
    out[0] = q0 / n; out[1] = q1 / n; out[2] = q2 / n; out[3] = q3 / n;
}

static double qc__quat_shrunk(double x, double st) {
    QC__NOFMA
    x = fabs(x) - st;
    return x < 0.0 ? 0.0 : x;
}

static int qc__quat_valid(const qc_codec *d, uint64_t code) {
    QC__NOFMA
    double st, a, b, c, s, big;
    if (code > d->maxcode) return 0;
    st = d->R / d->L;
    if (qc__quat_kept(d, code, 0) > d->hi || qc__quat_kept(d, code, 1) > d->hi || qc__quat_kept(d, code, 2) > d->hi)
        return 0;           /* midpoint: a component code 2**cbits - 1 is no level (the only one above hi) */
    a = qc__quat_shrunk(qc__quat_kept(d, code, 0), st);
    b = qc__quat_shrunk(qc__quat_kept(d, code, 1), st);
    c = qc__quat_shrunk(qc__quat_kept(d, code, 2), st);
    s = (a * a + b * b) + c * c;
    big = c > 0.0 ? c : 0.0;
    big = b > big ? b : big;
    big = a > big ? a : big;
    return (!(s > 1.0)) & (sqrt(1.0 - s) >= big);
}

static int qc__quat_q(const qc_codec *d, const double *q, uint64_t *code) {
    QC__NOFMA
    double x0 = q[0], x1 = q[1], x2 = q[2], x3 = q[3], m, n, best, big, a, b, c;
    int idx, u;
    uint64_t ka, kb, kc;
    if (!(qc__isfinite(x0) && qc__isfinite(x1) && qc__isfinite(x2) && qc__isfinite(x3))) return QC_Q_NONFINITE;
    if (x0 == 0.0 && x1 == 0.0 && x2 == 0.0 && x3 == 0.0) return QC_Q_ZERO;
    m = fabs(x0) > 0.0 ? fabs(x0) : 0.0;
    m = fabs(x1) > m ? fabs(x1) : m;
    m = fabs(x2) > m ? fabs(x2) : m;
    m = fabs(x3) > m ? fabs(x3) : m;
    x0 = x0 / m; x1 = x1 / m; x2 = x2 / m; x3 = x3 / m;
    n = sqrt(((x0 * x0 + x1 * x1) + x2 * x2) + x3 * x3);
    x0 = x0 / n; x1 = x1 / n; x2 = x2 / n; x3 = x3 / n;
    best = fabs(x0); big = x0; a = x1; b = x2; c = x3; idx = 0;
    u = fabs(x1) > best;
    best = u ? fabs(x1) : best; big = u ? x1 : big; a = u ? x0 : a; idx = u ? 1 : idx;
    u = fabs(x2) > best;
    best = u ? fabs(x2) : best; big = u ? x2 : big; a = u ? x0 : a; b = u ? x1 : b; idx = u ? 2 : idx;
    u = fabs(x3) > best;
    big = u ? x3 : big; a = u ? x0 : a; b = u ? x1 : b; c = u ? x2 : c; idx = u ? 3 : idx;
    u = big < 0.0;
    a = u ? -a : a; b = u ? -b : b; c = u ? -c : c;
    ka = (uint64_t)(int32_t)qc__bounded_qt((a - d->lo) / d->R, d->L, d->mode);
    kb = (uint64_t)(int32_t)qc__bounded_qt((b - d->lo) / d->R, d->L, d->mode);
    kc = (uint64_t)(int32_t)qc__bounded_qt((c - d->lo) / d->R, d->L, d->mode);
    *code = ((((((((uint64_t)idx) << d->cbits) | ka) << d->cbits) | kb) << d->cbits) | kc);
    return QC_Q_OK;
}

/* UnitVector */
static double qc__sgn_nn(double t) { return t >= 0.0 ? 1.0 : -1.0; }

static int qc__uvec_q(const qc_codec *d, const double *v, uint64_t *code) {
    QC__NOFMA
    double x = v[0], y = v[1], z = v[2], m, s, p, q, p2, q2;
    int u;
    if (!(qc__isfinite(x) && qc__isfinite(y) && qc__isfinite(z))) return QC_Q_NONFINITE;
    if (x == 0.0 && y == 0.0 && z == 0.0) return QC_Q_ZERO;
    m = fabs(x);
    m = fabs(y) > m ? fabs(y) : m;
    m = fabs(z) > m ? fabs(z) : m;
    x = x / m; y = y / m; z = z / m;
    s = (fabs(x) + fabs(y)) + fabs(z);
    p = x / s;
    q = y / s;
    u = z < 0.0;
    p2 = (1.0 - fabs(q)) * qc__sgn_nn(p);
    q2 = (1.0 - fabs(p)) * qc__sgn_nn(q);
    p = u ? p2 : p;
    q = u ? q2 : q;
    *code = (((uint64_t)qc__bounded_qt((p - d->lo) / d->R, d->L, 0)) << d->cbits) |
            (uint64_t)qc__bounded_qt((q - d->lo) / d->R, d->L, 0);
    return QC_Q_OK;
}

static void qc__uvec_dq(const qc_codec *d, uint64_t c, double *out) {
    QC__NOFMA
    uint64_t mask = d->cbits < 64 ? (((uint64_t)1) << d->cbits) - 1 : ~(uint64_t)0;
    double p = qc__bounded_dqd((double)((c >> d->cbits) & mask), d->lo, d->hi, d->R, d->L, 0);
    double q = qc__bounded_dqd((double)(c & mask), d->lo, d->hi, d->R, d->L, 0);
    double z = (1.0 - fabs(p)) - fabs(q), p2, q2, n;
    int u = z < 0.0;
    p2 = (1.0 - fabs(q)) * qc__sgn_nn(p);
    q2 = (1.0 - fabs(p)) * qc__sgn_nn(q);
    p = u ? p2 : p;
    q = u ? q2 : q;
    n = sqrt((p * p + q * q) + z * z);
    out[0] = p / n; out[1] = q / n; out[2] = z / n;
}

/* ---- the public codec calls ------------------------------------------------------------------ */

int qc_valid(const qc_codec *c, uint64_t code) {
    switch (c->kind) {
    case QC_QUAT: return qc__quat_valid(c, code);
    case QC_UNITVECTOR: return code <= c->maxcode;
    case QC_VECTOR: case QC_NEARLYZERO: return 0;
    default: return qc__scalar_valid(c, code);
    }
}

int qc_ncodes(const qc_codec *c) {
    if (c->kind == QC_VECTOR) return c->ninner;
    if (c->kind == QC_NEARLYZERO) return 1 + qc_ncodes(c->inner);
    return 1;
}

int qc_nvalues(const qc_codec *c) {
    if (c->kind == QC_VECTOR) return c->ninner;
    if (c->kind == QC_NEARLYZERO) return qc_nvalues(c->inner);
    if (c->kind == QC_QUAT) return 4;
    if (c->kind == QC_UNITVECTOR) return 3;
    return 1;
}

int qc_valid_codes(const qc_codec *c, const uint64_t *codes) {
    int i, k;
    if (c->kind == QC_VECTOR) {
        for (i = 0; i < c->ninner; i++) if (!qc_valid(&c->inner[i], codes[i])) return 0;
        return 1;
    }
    if (c->kind == QC_NEARLYZERO) {
        k = qc_ncodes(c->inner);
        if (codes[0] == 0) {
            for (i = 0; i < k; i++) if (codes[1 + i] != 0) return 0;
            return 1;
        }
        return codes[0] == 1 && qc_valid_codes(c->inner, codes + 1);
    }
    return qc_valid(c, codes[0]);
}

/* the value of a code known to be valid */
static void qc__dq1(const qc_codec *c, uint64_t code, double *out) {
    switch (c->kind) {
    case QC_BOUNDED: out[0] = qc__bounded_dqd((double)code, c->lo, c->hi, c->R, c->L, c->mode); break;
    case QC_FIXED: out[0] = qc__fixed_dq(c, code); break;
    case QC_ANGLE: out[0] = qc__angle_dq(c, code); break;
    case QC_POWERCURVE: out[0] = qc__power_dq(c, code); break;
    case QC_HALF: out[0] = qc__half_dq(code); break;
    case QC_GRID: out[0] = qc__grid_dq(c, code); break;
    case QC_INT: out[0] = (double)(int64_t)code; break;
    case QC_INTRANGE: out[0] = (double)(int64_t)((uint64_t)c->smin + code); break;
    case QC_QUAT:
        qc__quat_rebuild((int)((code >> (3 * c->cbits)) & 3), qc__quat_kept(c, code, 0), qc__quat_kept(c, code, 1),
                         qc__quat_kept(c, code, 2), out);
        break;
    case QC_UNITVECTOR: qc__uvec_dq(c, code, out); break;
    default: out[0] = (double)code; break;
    }
}

int qc_dequantize(const qc_codec *c, uint64_t code, double *out) {
    if (!qc_valid(c, code)) return -1;
    qc__dq1(c, code, out);
    return 0;
}

/* a code tuple known to be valid (a decoded snapshot's) */
static void qc__dq_codes(const qc_codec *c, const uint64_t *codes, double *out) {
    int i;
    if (c->kind == QC_VECTOR) {
        for (i = 0; i < c->ninner; i++) qc__dq1(&c->inner[i], codes[i], out + i);
    } else if (c->kind == QC_NEARLYZERO) {
        if (codes[0] == 0) {
            int k = qc_nvalues(c->inner);
            for (i = 0; i < k; i++) out[i] = 0.0;
        } else {
            qc__dq_codes(c->inner, codes + 1, out);
        }
    } else {
        qc__dq1(c, codes[0], out);
    }
}

int qc_dequantize_codes(const qc_codec *c, const uint64_t *codes, double *out) {
    int i, k;
    if (!qc_valid_codes(c, codes)) return -1;
    if (c->kind == QC_VECTOR) {
        for (i = 0; i < c->ninner; i++) qc_dequantize(&c->inner[i], codes[i], out + i);
        return 0;
    }
    if (c->kind == QC_NEARLYZERO) {
        if (codes[0] == 0) {
            k = qc_nvalues(c->inner);
            for (i = 0; i < k; i++) out[i] = 0.0;
            return 0;
        }
        return qc_dequantize_codes(c->inner, codes + 1, out);
    }
    return qc_dequantize(c, codes[0], out);
}

uint64_t qc_quantize(const qc_codec *c, double x, int *clamped) {
    QC__NOFMA
    int nc = 0;
    uint64_t r = 0;
    switch (c->kind) {
    case QC_BOUNDED:
        if ((x < c->lo) | (x > c->hi) | (x != x)) nc++;
        r = (uint64_t)qc__bounded_qt((x - c->lo) / c->R, c->L, c->mode);
        break;
    case QC_FIXED: r = qc__fixed_q(c, x, &nc); break;
    case QC_ANGLE: r = qc__angle_q(c, x, &nc); break;
    case QC_POWERCURVE: r = qc__power_q(c, x, &nc); break;
    case QC_HALF: r = qc__half_q(x); break;
    case QC_GRID: r = qc__grid_q(c, x, &nc); break;
    default: nc++; break;
    }
    if (clamped != NULL) *clamped = nc;
    return r;
}

int qc_quantize_int(const qc_codec *c, int64_t v, uint64_t *code) {
    if (c->kind == QC_INTRANGE) {
        if (v < c->smin || v > c->smax) return QC_Q_RANGE;
        *code = (uint64_t)v - (uint64_t)c->smin;      /* the true difference, below 2**63 */
        return QC_Q_OK;
    }
    if (v < 0) {
        if (c->kind != QC_INT || v < c->smin) return QC_Q_RANGE;
        *code = (uint64_t)v;
        return QC_Q_OK;
    }
    return qc_quantize_uint(c, (uint64_t)v, code);
}

int qc_quantize_uint(const qc_codec *c, uint64_t v, uint64_t *code) {
    switch (c->kind) {
    case QC_INT: if (v > (uint64_t)c->smax) return QC_Q_RANGE; break;
    case QC_UINT: case QC_BOOL: case QC_ENUM: if (v > c->maxcode) return QC_Q_RANGE; break;
    case QC_INTRANGE:
        if (v > (uint64_t)INT64_MAX) return QC_Q_RANGE;
        return qc_quantize_int(c, (int64_t)v, code);
    default: return QC_Q_RANGE;
    }
    *code = v;
    return QC_Q_OK;
}

int qc_quantize_quat(const qc_codec *c, const double *q, uint64_t *code) { return qc__quat_q(c, q, code); }
int qc_quantize_uvec(const qc_codec *c, const double *v, uint64_t *code) { return qc__uvec_q(c, v, code); }

static int qc__quantize_exact(const qc_codec *c, double x, uint64_t *code) {
    if (!(x == floor(x)) || !qc__isfinite(x)) return QC_Q_RANGE;
    if (x < 0) {
        if (x < -9223372036854775808.0) return QC_Q_RANGE;
        return qc_quantize_int(c, (int64_t)x, code);
    }
    if (x >= 18446744073709551616.0) return QC_Q_RANGE;
    return qc_quantize_uint(c, (uint64_t)x, code);
}

int qc_quantize_values(const qc_codec *c, const double *x, uint64_t *codes, int *nclamped) {
    int i, k, st, cl, n = 0;
    switch (c->kind) {
    case QC_QUAT: st = qc__quat_q(c, x, codes); break;
    case QC_UNITVECTOR: st = qc__uvec_q(c, x, codes); break;
    case QC_VECTOR:
        st = QC_Q_OK;
        for (i = 0; i < c->ninner && st == QC_Q_OK; i++) st = qc_quantize_values(&c->inner[i], x + i, codes + i, &n);
        break;
    case QC_NEARLYZERO: {
        int small = 1;
        k = qc_nvalues(c->inner);
        for (i = 0; i < k; i++) small &= fabs(x[i]) <= c->p1;
        if (small) {
            codes[0] = 0;
            for (i = 0; i < qc_ncodes(c->inner); i++) codes[1 + i] = 0;
            st = QC_Q_OK;
        } else {
            codes[0] = 1;
            st = qc_quantize_values(c->inner, x, codes + 1, &n);
        }
        break;
    }
    case QC_UINT: case QC_INT: case QC_BOOL: case QC_ENUM: case QC_INTRANGE: st = qc__quantize_exact(c, x[0], codes); break;
    default:
        codes[0] = qc_quantize(c, x[0], &cl);
        n += cl;
        st = QC_Q_OK;
        break;
    }
    if (nclamped != NULL) *nclamped += n;
    return st;
}

/* ---- schemas --------------------------------------------------------------------------------- */

static const char *const qc__kind_names[16] = {
    "", "Bounded", "Fixed", "Angle", "PowerCurve", "Half", "UInt", "Int", "Bool", "Enum", "Quat",
    "UnitVector", "Vector", "Grid", "NearlyZero", "IntRange"
};

static int qc__kind_of(const char *name) {
    int k;
    for (k = 1; k <= 15; k++) if (strcmp(name, qc__kind_names[k]) == 0) return k;
    return 0;
}

static const char *qc__jtype_name(const qc_json *v) {
    switch (v->type) {
    case QC_JSON_NULL: return "null";
    case QC_JSON_FALSE: case QC_JSON_TRUE: return "a bool";
    case QC_JSON_NUMBER: return v->is_int ? "an integer" : "a float";
    case QC_JSON_STRING: return "a string";
    case QC_JSON_ARRAY: return "a list";
    default: return "an object";
    }
}

typedef struct qc__sb { qc__arena *a; qc_error *err; const char *where; } qc__sb;

static int qc__float_param(qc__sb *b, const char *owner, const char *name, const qc_json *v, double *out) {
    if (v->type != QC_JSON_NUMBER)
        return qc__fail(b->err, "%s%s: %s must be a number, got %s", b->where, owner, name, qc__jtype_name(v));
    if (!qc__isfinite(v->num))
        return qc__fail(b->err, "%s%s: %s must be finite, got %s", b->where, owner, name, v->text);
    *out = v->num + 0.0;
    return 0;
}

static int qc__int_param(qc__sb *b, const char *owner, const char *name, const qc_json *v, int64_t lo, int64_t hi, int64_t *out) {
    if (v->type != QC_JSON_NUMBER || !v->is_int)
        return qc__fail(b->err, "%s%s: %s must be an integer, got %s", b->where, owner, name,
                        v->type == QC_JSON_NUMBER ? v->text : qc__jtype_name(v));
    if (!v->int_ok || (v->neg ? -(double)v->u < (double)lo : v->u > (uint64_t)hi) || (!v->neg && v->u < (uint64_t)(lo > 0 ? lo : 0)))
        return qc__fail(b->err, "%s%s: %s must be in %lld..%lld, got %s", b->where, owner, name, (long long)lo, (long long)hi, v->text);
    if (v->neg) {
        int64_t s = v->u == ((uint64_t)1 << 63) ? INT64_MIN : -(int64_t)v->u;
        if (s < lo) return qc__fail(b->err, "%s%s: %s must be in %lld..%lld, got %s", b->where, owner, name, (long long)lo, (long long)hi, v->text);
        *out = s;
    } else {
        *out = (int64_t)v->u;
    }
    return 0;
}

static int qc__check_keys(qc__sb *b, const char *kind, const qc_json *spec, const char *const *allowed) {
    size_t k;
    for (k = 0; k < spec->nkids; k++) {
        const char *key = spec->kids[k].key;
        int i, ok = strcmp(key, "kind") == 0;
        for (i = 0; allowed[i] != NULL && !ok; i++) ok = strcmp(key, allowed[i]) == 0;
        if (!ok) return qc__fail(b->err, "%s%s spec has unknown key '%s'", b->where, kind, key);
    }
    return 0;
}

static const qc_json *qc__need(qc__sb *b, const char *kind, const qc_json *spec, const char *key) {
    const qc_json *v = qc_json_get(spec, key);
    if (v == NULL) qc__fail(b->err, "%s%s spec is missing '%s'", b->where, kind, key);
    return v;
}

static int qc__mode_param(qc__sb *b, const char *owner, const qc_json *spec, int *mode) {
    const qc_json *v = qc_json_get(spec, "mode");
    *mode = 0;
    if (v == NULL) return 0;
    if (v->type == QC_JSON_STRING && strcmp(v->text, "endpoints") == 0) return 0;
    if (v->type == QC_JSON_STRING && strcmp(v->text, "bins") == 0) { *mode = 1; return 0; }
    if (v->type == QC_JSON_STRING && strcmp(v->text, "midpoint") == 0) { *mode = 2; return 0; }
    return qc__fail(b->err, "%s%s: mode must be 'endpoints', 'bins' or 'midpoint', got %s%s%s", b->where, owner,
                    v->type == QC_JSON_STRING ? "'" : "", v->type == QC_JSON_STRING ? v->text : qc__jtype_name(v),
                    v->type == QC_JSON_STRING ? "'" : "");
}

static int qc__bool_param(qc__sb *b, const char *owner, const char *name, const qc_json *spec, int dflt, int *out) {
    const qc_json *v = qc_json_get(spec, name);
    *out = dflt;
    if (v == NULL) return 0;
    if (v->type == QC_JSON_TRUE) { *out = 1; return 0; }
    if (v->type == QC_JSON_FALSE) { *out = 0; return 0; }
    return qc__fail(b->err, "%s%s: %s must be True or False, got %s", b->where, owner, name, qc__jtype_name(v));
}

static double qc__pow2(int e) { return ldexp(1.0, e); }

static int qc__is_scalar_kind(int k) { return k != QC_VECTOR && k != QC_NEARLYZERO && k != QC_QUAT && k != QC_UNITVECTOR; }

static int qc__build_codec(qc__sb *b, const qc_json *spec, qc_codec *c, int depth);

/* whether text (n bytes, from the JSON reader) holds a lone surrogate: a \u escape of one, which
   the reader keeps as 3 bytes ED A0..BF xx (WTF-8); raw UTF-8 surrogates it refuses. *at: where,
   in characters (code points, as Python counts), *cp: the surrogate (docs/schema-format.md, R3) */
static int qc__lone_surrogate(const char *text, size_t n, size_t *at, unsigned *cp) {
    const unsigned char *p = (const unsigned char *)text;
    size_t i = 0, l;
    for (*at = 0; i < n; i += l, ++*at) {
        l = qc__utf8_get(p + i, n - i, cp);
        if (l == 0) {
            if (n - i >= 3 && p[i] == 0xED && p[i + 1] >= 0xA0) {
                *cp = ((unsigned)(p[i] & 0x0F) << 12) | ((unsigned)(p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F);
                return 1;
            }
            l = 1;      /* (not from the reader: none such) */
        }
    }
    return 0;
}

/* The largest magnitude a value of c decodes to (Python's _codecs.pyx _reach), in doubles: 1 and
   *r, or 0 where there is none to say (Angle, Half, Grid, Enum, a Vector with one of those). */
static int qc__reach(const qc_codec *c, double *r) {
    QC__NOFMA
    double a, x;
    int i;
    uint64_t m;
    switch (c->kind) {
    case QC_VECTOR:
        for (i = 0; i < c->ninner; i++) {
            if (!qc__reach(&c->inner[i], &x)) return 0;
            if (i == 0 || x > *r) *r = x;
        }
        return c->ninner > 0;
    case QC_BOUNDED: a = fabs(c->p1); x = fabs(c->p2); *r = a > x ? a : x; return 1;
    case QC_POWERCURVE: *r = c->p1; return 1;
    case QC_FIXED: {    /* offset + lo*step, offset + hi*step: the product rounded first */
        double lo = c->mode ? (double)c->smin : 0.0, hi = c->mode ? (double)c->smax : (double)c->maxcode;
        double p = lo * c->p1, q = hi * c->p1;
        a = fabs(c->p2 + p); x = fabs(c->p2 + q);
        *r = a > x ? a : x;
        return 1;
    }
    case QC_UINT: *r = (double)qc__mask(c->bits); return 1;
    case QC_INT: *r = qc__pow2(c->bits - 1); return 1;
    case QC_BOOL: *r = 1.0; return 1;
    case QC_INTRANGE: {
        uint64_t lo = c->smin < 0 ? (uint64_t)0 - (uint64_t)c->smin : (uint64_t)c->smin;
        uint64_t hi = c->smax < 0 ? (uint64_t)0 - (uint64_t)c->smax : (uint64_t)c->smax;
        m = lo > hi ? lo : hi;
        *r = (double)m;
        return 1;
    }
    default: return 0;
    }
}

static int qc__nested_kind(const qc_json *spec) {
    const qc_json *k = qc_json_get(spec, "kind");
    if (k == NULL || k->type != QC_JSON_STRING) return 0;
    return qc__kind_of(k->text);
}

static int qc__build_codec(qc__sb *b, const qc_json *spec, qc_codec *c, int depth) {
    QC__NOFMA
    const qc_json *kv, *v;
    const char *kn;
    int64_t iv;
    memset(c, 0, sizeof *c);
    if (spec->type != QC_JSON_OBJECT)
        return qc__fail(b->err, "%scodec spec must be an object, got %s", b->where, qc__jtype_name(spec));
    kv = qc_json_get(spec, "kind");
    if (kv == NULL || kv->type != QC_JSON_STRING || qc__kind_of(kv->text) == 0)
        return qc__fail(b->err, "%sunknown codec kind %s%s%s; expected one of Bounded, Fixed, Angle, PowerCurve, Half, UInt, "
                        "Int, Bool, Enum, Quat, UnitVector, Vector, Grid, NearlyZero, IntRange", b->where,
                        kv != NULL && kv->type == QC_JSON_STRING ? "'" : "",
                        kv == NULL ? "None" : kv->type == QC_JSON_STRING ? kv->text : qc__jtype_name(kv),
                        kv != NULL && kv->type == QC_JSON_STRING ? "'" : "");
    c->kind = qc__kind_of(kv->text);
    kn = qc__kind_names[c->kind];
    switch (c->kind) {
    case QC_BOUNDED: {
        static const char *const keys[] = {"min", "max", "bits", "mode", NULL};
        const qc_json *jmin, *jmax, *jbits;
        double lo, hi;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if ((jmin = qc__need(b, kn, spec, "min")) == NULL || (jmax = qc__need(b, kn, spec, "max")) == NULL ||
            (jbits = qc__need(b, kn, spec, "bits")) == NULL) return -1;
        if (qc__float_param(b, kn, "min", jmin, &lo) < 0 || qc__float_param(b, kn, "max", jmax, &hi) < 0 ||
            qc__int_param(b, kn, "bits", jbits, 1, 32, &iv) < 0) return -1;
        if (!(lo < hi)) return qc__fail(b->err, "%sBounded: min must be less than max, got min=%.17g, max=%.17g", b->where, lo, hi);
        if (!qc__isfinite(hi - lo)) return qc__fail(b->err, "%sBounded: the range max - min overflows", b->where);
        if (qc__mode_param(b, kn, spec, &c->mode) < 0) return -1;
        if (c->mode == 2 && iv < 2)
            return qc__fail(b->err, "%sBounded: mode='midpoint' needs bits >= 2 (2**bits - 2 intervals), got bits=%d", b->where, (int)iv);
        if (!qc__isfinite((hi - lo) * qc__pow2((int)iv)))
            return qc__fail(b->err, "%sBounded: the range max - min times 2**bits overflows (valid codes would decode to inf)", b->where);
        c->bits = (int)iv;
        c->lo = lo; c->hi = hi; c->R = hi - lo;
        c->L = c->mode == 1 ? qc__pow2(c->bits) : qc__pow2(c->bits) - (c->mode == 2 ? 2.0 : 1.0);
        c->p1 = lo; c->p2 = hi;
        break;
    }
    case QC_FIXED: {
        static const char *const keys[] = {"step", "bits", "signed", "offset", NULL};
        const qc_json *js, *jb, *jo;
        double st, off = 0.0;
        int sg, k;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if ((js = qc__need(b, kn, spec, "step")) == NULL || (jb = qc__need(b, kn, spec, "bits")) == NULL) return -1;
        if (qc__float_param(b, kn, "step", js, &st) < 0) return -1;
        if (st <= 0) return qc__fail(b->err, "%sFixed: step must be positive, got %s", b->where, js->text);
        if (qc__int_param(b, kn, "bits", jb, 1, 64, &iv) < 0) return -1;
        if ((jo = qc_json_get(spec, "offset")) != NULL && qc__float_param(b, kn, "offset", jo, &off) < 0) return -1;
        if (qc__bool_param(b, kn, "signed", spec, 1, &sg) < 0) return -1;
        c->bits = (int)iv;
        c->mode = sg;
        c->maxcode = qc__mask(c->bits);
        if (sg) {
            c->smin = c->bits == 64 ? INT64_MIN : -((int64_t)1 << (c->bits - 1));
            c->smax = c->bits == 64 ? INT64_MAX : ((int64_t)1 << (c->bits - 1)) - 1;
            c->fmin = -qc__pow2(c->bits - 1);
            c->fmax = qc__pow2(c->bits - 1);
        } else {
            c->smin = 0;
            c->smax = c->bits < 64 ? (int64_t)qc__mask(c->bits) : INT64_MAX;
            c->fmin = 0.0;
            c->fmax = qc__pow2(c->bits);
        }
        for (k = 0; k < 2; k++) {
            double ec = sg ? (k ? (double)c->smax : (double)c->smin) : (k ? (double)c->maxcode : 0.0);
            if (!qc__isfinite(off + ec * st))
                return qc__fail(b->err, "%sFixed: code %s would decode to a non-finite value (offset + code * step overflows)",
                                b->where, k ? "max" : "min");
        }
        c->lo = off; c->hi = st;
        c->p1 = st; c->p2 = off;
        break;
    }
    case QC_ANGLE: {
        static const char *const keys[] = {"bits", "signed", "unit", NULL};
        const qc_json *jb, *ju;
        int sg;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if ((jb = qc__need(b, kn, spec, "bits")) == NULL) return -1;
        if (qc__int_param(b, kn, "bits", jb, 1, 32, &iv) < 0) return -1;
        ju = qc_json_get(spec, "unit");
        if (ju != NULL && !(ju->type == QC_JSON_STRING && (strcmp(ju->text, "rad") == 0 || strcmp(ju->text, "deg") == 0)))
            return qc__fail(b->err, "%sAngle: unit must be 'rad' or 'deg', got %s", b->where,
                            ju->type == QC_JSON_STRING ? ju->text : qc__jtype_name(ju));
        if (qc__bool_param(b, kn, "signed", spec, 0, &sg) < 0) return -1;
        c->bits = (int)iv;
        c->mode = sg;
        c->deg = ju != NULL && strcmp(ju->text, "deg") == 0;
        c->lo = c->deg ? 360.0 : 2.0 * 3.141592653589793;
        c->hi = c->lo / 2.0;
        c->L = qc__pow2(c->bits);
        break;
    }
    case QC_POWERCURVE: {
        static const char *const keys[] = {"max", "pow", "bits", NULL};
        const qc_json *jm, *jp, *jb;
        double m, p;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if ((jm = qc__need(b, kn, spec, "max")) == NULL || (jp = qc__need(b, kn, spec, "pow")) == NULL ||
            (jb = qc__need(b, kn, spec, "bits")) == NULL) return -1;
        if (qc__float_param(b, kn, "max", jm, &m) < 0 || qc__float_param(b, kn, "pow", jp, &p) < 0 ||
            qc__int_param(b, kn, "bits", jb, 2, 32, &iv) < 0) return -1;
        if (m <= 0) return qc__fail(b->err, "%sPowerCurve: max must be positive, got %s", b->where, jm->text);
        if (p < 1) return qc__fail(b->err, "%sPowerCurve: pow must be at least 1, got %s", b->where, jp->text);
        c->bits = (int)iv;
        c->lo = m; c->hi = p; c->R = 1.0 / p;
        c->L = qc__pow2(c->bits - 1) - 1.0;
        c->p1 = m; c->p2 = p;
        break;
    }
    case QC_HALF: case QC_BOOL: {
        static const char *const keys[] = {NULL};
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        c->bits = c->kind == QC_HALF ? 16 : 1;
        break;
    }
    case QC_UINT: case QC_INT: {
        static const char *const keys[] = {"bits", NULL};
        const qc_json *jb;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if ((jb = qc__need(b, kn, spec, "bits")) == NULL) return -1;
        if (qc__int_param(b, kn, "bits", jb, 1, 64, &iv) < 0) return -1;
        c->bits = (int)iv;
        if (c->kind == QC_INT) {
            c->smin = c->bits == 64 ? INT64_MIN : -((int64_t)1 << (c->bits - 1));
            c->smax = c->bits == 64 ? INT64_MAX : ((int64_t)1 << (c->bits - 1)) - 1;
        }
        break;
    }
    case QC_INTRANGE: {
        static const char *const keys[] = {"hi", "lo", NULL};
        const qc_json *jlo, *jhi;
        int64_t lo, hi;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if ((jlo = qc__need(b, kn, spec, "lo")) == NULL || (jhi = qc__need(b, kn, spec, "hi")) == NULL) return -1;
        if (qc__int_param(b, kn, "lo", jlo, INT64_MIN, INT64_MAX, &lo) < 0 ||
            qc__int_param(b, kn, "hi", jhi, INT64_MIN, INT64_MAX, &hi) < 0) return -1;
        if (lo >= hi) return qc__fail(b->err, "%sIntRange: lo must be less than hi, got lo=%s, hi=%s", b->where, jlo->text, jhi->text);
        if ((uint64_t)hi - (uint64_t)lo >= ((uint64_t)1 << 63))
            return qc__fail(b->err, "%sIntRange: hi - lo must be below 2**63 (lo=%s, hi=%s)", b->where, jlo->text, jhi->text);
        c->smin = lo; c->smax = hi;
        c->maxcode = (uint64_t)hi - (uint64_t)lo;
        c->bits = qc__bitlen(c->maxcode);
        break;
    }
    case QC_ENUM: {
        const qc_json *jl = qc_json_get(spec, "labels"), *jc = qc_json_get(spec, "count");
        static const char *const keys_l[] = {"labels", NULL};
        static const char *const keys_c[] = {"count", NULL};
        uint64_t n;
        size_t i, j, at;
        unsigned cp;
        if (jl == NULL && jc == NULL) return qc__fail(b->err, "%sEnum spec is missing 'count'", b->where);
        if (qc__check_keys(b, kn, spec, jl != NULL ? keys_l : keys_c) < 0) return -1;
        v = jl != NULL ? jl : jc;
        if (v->type == QC_JSON_NUMBER && v->is_int) {
            if (qc__int_param(b, kn, "count", v, 1, (int64_t)1 << 32, &iv) < 0) return -1;
            n = (uint64_t)iv;
        } else if (v->type == QC_JSON_ARRAY) {
            n = v->nkids;
            if (n == 0) return qc__fail(b->err, "%sEnum: labels must not be empty", b->where);
            c->labels = (char **)qc__arena_alloc(b->a, n * sizeof(char *));
            if (c->labels == NULL) return qc__fail(b->err, "out of memory");
            for (i = 0; i < n; i++) {
                if (v->kids[i].type != QC_JSON_STRING)
                    return qc__fail(b->err, "%sEnum: labels must be strings, got %s", b->where, qc__jtype_name(&v->kids[i]));
                if (strlen(v->kids[i].text) != v->kids[i].len)
                    return qc__fail(b->err, "%sEnum labels must not contain U+0000 (NUL), label %lu does", b->where, (unsigned long)i);
                if (qc__lone_surrogate(v->kids[i].text, v->kids[i].len, &at, &cp))
                    return qc__fail(b->err, "%sEnum labels must be Unicode text: a lone surrogate U+%04X at character %lu, label %lu",
                                    b->where, cp, (unsigned long)at, (unsigned long)i);
                for (j = 0; j < i; j++)
                    if (strcmp(v->kids[j].text, v->kids[i].text) == 0)
                        return qc__fail(b->err, "%sEnum: duplicate labels ['%s']", b->where, v->kids[i].text);
                c->labels[i] = (char *)v->kids[i].text;     /* (copied below) */
                c->labels[i] = qc__arena_strdup(b->a, v->kids[i].text, v->kids[i].len);
                if (c->labels[i] == NULL) return qc__fail(b->err, "out of memory");
            }
        } else {
            return qc__fail(b->err, "%sEnum: expected a list of labels or a count, got %s", b->where, qc__jtype_name(v));
        }
        c->count = n;
        c->bits = qc__bitlen(n - 1);
        c->maxcode = n - 1;
        break;
    }
    case QC_QUAT: {
        static const char *const keys[] = {"bits", "mode", NULL};
        const qc_json *jb;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        iv = 9;
        if ((jb = qc_json_get(spec, "bits")) != NULL && qc__int_param(b, kn, "bits", jb, 2, 20, &iv) < 0) return -1;
        if (qc__mode_param(b, kn, spec, &c->mode) < 0) return -1;
        c->cbits = (int)iv;
        c->bits = 2 + 3 * c->cbits;
        c->lo = -QC__SQRT1_2; c->hi = QC__SQRT1_2; c->R = QC__SQRT1_2 - (-QC__SQRT1_2);
        c->L = c->mode == 1 ? qc__pow2(c->cbits) : qc__pow2(c->cbits) - (c->mode == 2 ? 2.0 : 1.0);
        c->maxcode = qc__mask(c->bits);
        return 0;
    }
    case QC_UNITVECTOR: {
        static const char *const keys[] = {"bits", NULL};
        const qc_json *jb;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if ((jb = qc__need(b, kn, spec, "bits")) == NULL) return -1;
        if (qc__int_param(b, kn, "bits", jb, 2, 32, &iv) < 0) return -1;
        c->cbits = (int)iv;
        c->bits = 2 * c->cbits;
        c->lo = -1.0; c->hi = 1.0; c->R = 2.0; c->L = qc__pow2(c->cbits) - 1.0;
        c->maxcode = qc__mask(c->bits);
        return 0;
    }
    case QC_GRID: {
        static const char *const keys[] = {"cell_size", "cell_bits", "offset_bits", NULL};
        const qc_json *jc, *jcb, *job;
        double cs;
        int64_t cb, ob;
        int k;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if ((jc = qc__need(b, kn, spec, "cell_size")) == NULL || (jcb = qc__need(b, kn, spec, "cell_bits")) == NULL ||
            (job = qc__need(b, kn, spec, "offset_bits")) == NULL) return -1;
        if (qc__float_param(b, kn, "cell_size", jc, &cs) < 0) return -1;
        if (cs <= 0) return qc__fail(b->err, "%sGrid: cell_size must be positive, got %s", b->where, jc->text);
        if (qc__int_param(b, kn, "cell_bits", jcb, 1, 63, &cb) < 0 || qc__int_param(b, kn, "offset_bits", job, 1, 63, &ob) < 0) return -1;
        if (cb + ob > 64)
            return qc__fail(b->err, "%sGrid: cell_bits + offset_bits must be at most 64, got %d + %d = %d", b->where, (int)cb, (int)ob, (int)(cb + ob));
        for (k = 0; k < 2; k++) {
            double ecell = k ? (double)(((int64_t)1 << (cb - 1)) - 1) : -qc__pow2((int)cb - 1);
            double eoff = k ? (double)qc__mask((int)ob) : 0.0;
            if (!qc__isfinite((ecell + (eoff + 0.5) / qc__pow2((int)ob)) * cs))
                return qc__fail(b->err, "%sGrid: cell_size * 2**(cell_bits - 1) overflows", b->where);
        }
        c->bits = (int)(cb + ob);
        c->cbits = (int)ob;
        c->cell_bits = (int)cb;
        c->lo = cs;
        c->L = qc__pow2((int)ob);
        c->smin = -((int64_t)1 << (cb - 1));
        c->smax = ((int64_t)1 << (cb - 1)) - 1;
        c->fmin = -qc__pow2((int)cb - 1);
        c->fmax = qc__pow2((int)cb - 1);
        c->p1 = cs;
        break;
    }
    case QC_VECTOR: {
        static const char *const keys[] = {"codecs", NULL};
        const qc_json *jc;
        size_t i;
        int any_signed = 0, any_u64 = 0;
        if ((jc = qc__need(b, kn, spec, "codecs")) == NULL) return -1;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if (jc->type != QC_JSON_ARRAY)
            return qc__fail(b->err, "%sVector: codecs must be a list of codec specs, got %s", b->where, qc__jtype_name(jc));
        for (i = 0; i < jc->nkids; i++) {
            int k = qc__nested_kind(&jc->kids[i]);
            if (k != 0 && !qc__is_scalar_kind(k))
                return qc__fail(b->err, "%sVector: component %lu must be a scalar codec, got a %s spec", b->where, (unsigned long)i, qc__kind_names[k]);
        }
        if (jc->nkids == 0) return qc__fail(b->err, "%sVector: needs at least one component codec", b->where);
        if (jc->nkids > 65535)
            return qc__fail(b->err, "%sa Vector has at most 65535 components, got %lu", b->where, (unsigned long)jc->nkids);
        c->ninner = (int)jc->nkids;
        c->inner = (qc_codec *)qc__arena_alloc(b->a, jc->nkids * sizeof(qc_codec));
        if (c->inner == NULL) return qc__fail(b->err, "out of memory");
        c->bits = 0;
        for (i = 0; i < jc->nkids; i++) {
            qc_codec *ic = &c->inner[i];
            if (qc__build_codec(b, &jc->kids[i], ic, depth + 1) < 0) return -1;
            if (!qc__is_scalar_kind(ic->kind))
                return qc__fail(b->err, "%sVector: component %lu must be a scalar codec", b->where, (unsigned long)i);
            c->bits += ic->bits;
            if (ic->kind == QC_INT || (ic->kind == QC_FIXED && ic->mode)) any_signed = 1;
            if (ic->bits == 64 && (ic->kind == QC_UINT || (ic->kind == QC_FIXED && !ic->mode) || ic->kind == QC_GRID)) any_u64 = 1;
        }
        if (any_signed && any_u64)
            return qc__fail(b->err, "%sVector: a 64-bit unsigned component cannot share one code array with signed components; use separate fields", b->where);
        return 0;
    }
    case QC_NEARLYZERO: {
        static const char *const keys[] = {"inner", "threshold", NULL};
        const qc_json *ji = qc_json_get(spec, "inner"), *jt;
        int k = ji != NULL ? qc__nested_kind(ji) : 0;
        double t;
        if (k != 0 && !qc__is_scalar_kind(k) && k != QC_VECTOR)
            return qc__fail(b->err, "%sNearlyZero: inner must be a scalar codec or a Vector, got a %s spec", b->where, qc__kind_names[k]);
        if ((ji = qc__need(b, kn, spec, "inner")) == NULL) return -1;
        c->inner = (qc_codec *)qc__arena_alloc(b->a, sizeof(qc_codec));
        if (c->inner == NULL) return qc__fail(b->err, "out of memory");
        c->ninner = 1;
        if (qc__build_codec(b, ji, c->inner, depth + 1) < 0) return -1;
        if ((jt = qc__need(b, kn, spec, "threshold")) == NULL) return -1;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if (!qc__is_scalar_kind(c->inner->kind) && c->inner->kind != QC_VECTOR)
            return qc__fail(b->err, "%sNearlyZero: inner must be a scalar codec or a Vector", b->where);
        if (qc__float_param(b, kn, "threshold", jt, &t) < 0) return -1;
        if (t < 0) return qc__fail(b->err, "%sNearlyZero: threshold must be non-negative, got %s", b->where, jt->text);
        {
            double r;
            if (qc__reach(c->inner, &r) && t >= r)
                return qc__fail(b->err, "%sNearlyZero: threshold %.17g covers the whole range of its inner %s (no decoded "
                                "value is farther than %.17g from zero): every value would be sent as zero; the threshold "
                                "must be below that", b->where, t, qc__kind_names[c->inner->kind], r);
        }
        c->p1 = t;
        c->bits = 1 + c->inner->bits;
        return 0;
    }
    default:
        break;
    }
    (void)depth;
    if (c->kind != QC_ENUM && c->kind != QC_FIXED && c->kind != QC_INTRANGE) c->maxcode = qc__mask(c->bits);
    if (c->kind == QC_BOUNDED && c->mode == 2) c->maxcode -= 1;    /* midpoint: 2**bits - 1 is no code */
    return 0;
}

/* ---- canonical JSON (the fingerprint) -------------------------------------------------------- */

typedef struct qc__out { char *buf; size_t n, cap; } qc__out;

static void qc__emit(qc__out *o, const char *s, size_t n) {
    if (o->buf != NULL && o->n + n <= o->cap) memcpy(o->buf + o->n, s, n);
    o->n += n;
}
static void qc__emits(qc__out *o, const char *s) { qc__emit(o, s, strlen(s)); }

static void qc__emit_str(qc__out *o, const char *s) {   /* json.dumps(ensure_ascii=True) */
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), i = 0;
    char tmp[16];
    qc__emit(o, "\"", 1);
    while (i < n) {
        unsigned cp;
        size_t l = qc__utf8_get(p + i, n - i, &cp);
        if (l == 0) {      /* a lone surrogate from a \u escape, kept as 3 bytes (WTF-8) */
            cp = ((unsigned)(p[i] & 0x0F) << 12) | ((unsigned)(p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F);
            l = 3;
        }
        i += l;
        if (cp == '"') qc__emits(o, "\\\"");
        else if (cp == '\\') qc__emits(o, "\\\\");
        else if (cp == '\n') qc__emits(o, "\\n");
        else if (cp == '\r') qc__emits(o, "\\r");
        else if (cp == '\t') qc__emits(o, "\\t");
        else if (cp == '\b') qc__emits(o, "\\b");
        else if (cp == '\f') qc__emits(o, "\\f");
        else if (cp >= 0x20 && cp < 0x7F) { tmp[0] = (char)cp; qc__emit(o, tmp, 1); }
        else if (cp < 0x10000) { sprintf(tmp, "\\u%04x", cp); qc__emits(o, tmp); }
        else {
            unsigned v = cp - 0x10000;
            sprintf(tmp, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
            qc__emits(o, tmp);
        }
    }
    qc__emit(o, "\"", 1);
}

static void qc__emit_hex(qc__out *o, double x) {
    char tmp[40];
    int n = qc_float_hex(x, tmp);
    qc__emit(o, "\"", 1);
    qc__emit(o, tmp, (size_t)n);
    qc__emit(o, "\"", 1);
}

static void qc__emit_int(qc__out *o, long long v) {
    char tmp[32];
    sprintf(tmp, "%lld", v);
    qc__emits(o, tmp);
}

/* The codec's spec(), keys sorted, floats as float.hex strings, compact. */
static void qc__emit_codec(qc__out *o, const qc_codec *c) {
    int i;
    switch (c->kind) {
    case QC_BOUNDED:
        qc__emits(o, "{\"bits\":"); qc__emit_int(o, c->bits);
        qc__emits(o, ",\"kind\":\"Bounded\",\"max\":"); qc__emit_hex(o, c->p2);
        qc__emits(o, ",\"min\":"); qc__emit_hex(o, c->p1);
        qc__emits(o, c->mode == 2 ? ",\"mode\":\"midpoint\"}" : c->mode ? ",\"mode\":\"bins\"}" : ",\"mode\":\"endpoints\"}");
        break;
    case QC_FIXED:
        qc__emits(o, "{\"bits\":"); qc__emit_int(o, c->bits);
        qc__emits(o, ",\"kind\":\"Fixed\",\"offset\":"); qc__emit_hex(o, c->p2);
        qc__emits(o, c->mode ? ",\"signed\":true,\"step\":" : ",\"signed\":false,\"step\":"); qc__emit_hex(o, c->p1);
        qc__emits(o, "}");
        break;
    case QC_ANGLE:
        qc__emits(o, "{\"bits\":"); qc__emit_int(o, c->bits);
        qc__emits(o, c->mode ? ",\"kind\":\"Angle\",\"signed\":true" : ",\"kind\":\"Angle\",\"signed\":false");
        qc__emits(o, c->deg ? ",\"unit\":\"deg\"}" : ",\"unit\":\"rad\"}");
        break;
    case QC_POWERCURVE:
        qc__emits(o, "{\"bits\":"); qc__emit_int(o, c->bits);
        qc__emits(o, ",\"kind\":\"PowerCurve\",\"max\":"); qc__emit_hex(o, c->p1);
        qc__emits(o, ",\"pow\":"); qc__emit_hex(o, c->p2);
        qc__emits(o, "}");
        break;
    case QC_HALF: qc__emits(o, "{\"kind\":\"Half\"}"); break;
    case QC_BOOL: qc__emits(o, "{\"kind\":\"Bool\"}"); break;
    case QC_UINT: case QC_INT:
        qc__emits(o, "{\"bits\":"); qc__emit_int(o, c->bits);
        qc__emits(o, c->kind == QC_UINT ? ",\"kind\":\"UInt\"}" : ",\"kind\":\"Int\"}");
        break;
    case QC_INTRANGE:
        qc__emits(o, "{\"hi\":"); qc__emit_int(o, (long long)c->smax);
        qc__emits(o, ",\"kind\":\"IntRange\",\"lo\":"); qc__emit_int(o, (long long)c->smin);
        qc__emits(o, "}");
        break;
    case QC_ENUM:
        if (c->labels == NULL) {
            qc__emits(o, "{\"count\":"); qc__emit_int(o, (long long)c->count); qc__emits(o, ",\"kind\":\"Enum\"}");
        } else {
            uint64_t k;
            qc__emits(o, "{\"kind\":\"Enum\",\"labels\":[");
            for (k = 0; k < c->count; k++) {
                if (k) qc__emits(o, ",");
                qc__emit_str(o, c->labels[k]);
            }
            qc__emits(o, "]}");
        }
        break;
    case QC_QUAT:
        qc__emits(o, "{\"bits\":"); qc__emit_int(o, c->cbits);
        qc__emits(o, c->mode == 2 ? ",\"kind\":\"Quat\",\"mode\":\"midpoint\"}" : c->mode ? ",\"kind\":\"Quat\",\"mode\":\"bins\"}"
                     : ",\"kind\":\"Quat\",\"mode\":\"endpoints\"}");
        break;
    case QC_UNITVECTOR:
        qc__emits(o, "{\"bits\":"); qc__emit_int(o, c->cbits); qc__emits(o, ",\"kind\":\"UnitVector\"}");
        break;
    case QC_GRID:
        qc__emits(o, "{\"cell_bits\":"); qc__emit_int(o, c->cell_bits);
        qc__emits(o, ",\"cell_size\":"); qc__emit_hex(o, c->p1);
        qc__emits(o, ",\"kind\":\"Grid\",\"offset_bits\":"); qc__emit_int(o, c->cbits);
        qc__emits(o, "}");
        break;
    case QC_VECTOR:
        qc__emits(o, "{\"codecs\":[");
        for (i = 0; i < c->ninner; i++) {
            if (i) qc__emits(o, ",");
            qc__emit_codec(o, &c->inner[i]);
        }
        qc__emits(o, "],\"kind\":\"Vector\"}");
        break;
    case QC_NEARLYZERO:
        qc__emits(o, "{\"inner\":"); qc__emit_codec(o, c->inner);
        qc__emits(o, ",\"kind\":\"NearlyZero\",\"threshold\":"); qc__emit_hex(o, c->p1);
        qc__emits(o, "}");
        break;
    default: break;
    }
}

static void qc__emit_schema(qc__out *o, const qc_schema *s) {
    int f;
    qc__emits(o, "{\"fields\":[");
    for (f = 0; f < s->nfields; f++) {
        if (f) qc__emits(o, ",");
        qc__emits(o, "{\"codec\":");
        qc__emit_codec(o, s->fields[f].codec);
        qc__emits(o, ",\"name\":");
        qc__emit_str(o, s->fields[f].name);
        qc__emits(o, "}");
    }
    qc__emits(o, "],\"name\":");
    qc__emit_str(o, s->name);
    qc__emits(o, ",\"version\":");
    qc__emits(o, s->version_text);
    qc__emits(o, "}");
}

/* A field name: ASCII [A-Za-z_][A-Za-z0-9_]*, n bytes (docs/schema-format.md, "One reading", R2:
   not "a Python identifier", which each language and Unicode version read otherwise). */
static int qc__is_identifier(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t k;
    if (n == 0 || (p[0] >= '0' && p[0] <= '9')) return 0;
    for (k = 0; k < n; k++) {
        if (!((p[k] >= 'a' && p[k] <= 'z') || (p[k] >= 'A' && p[k] <= 'Z') || (p[k] >= '0' && p[k] <= '9') || p[k] == '_'))
            return 0;
    }
    return 1;
}

/* s (n bytes, UTF-8) quoted for a message as Python's repr() would show it in ASCII: printable
   ASCII as is, the rest escaped (\xNN, \uNNNN, \UNNNNNNNN); cut with "..." to fit cap. */
static const char *qc__quoted(const char *s, size_t n, char *out, size_t cap) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, o = 0;
    out[o++] = '\'';
    while (i < n && o + 16 < cap) {
        unsigned cp;
        size_t l = qc__utf8_get(p + i, n - i, &cp);
        if (l == 0) {       /* a lone surrogate from a \u escape (WTF-8), or any other byte */
            if (n - i >= 3 && p[i] == 0xED) { cp = ((unsigned)(p[i] & 0x0F) << 12) | ((unsigned)(p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F); l = 3; }
            else { cp = p[i]; l = 1; }
        }
        i += l;
        if (cp == '\\' || cp == '\'') { out[o++] = '\\'; out[o++] = (char)cp; }
        else if (cp >= 0x20 && cp < 0x7F) out[o++] = (char)cp;
        else if (cp < 0x100) o += (size_t)sprintf(out + o, "\\x%02x", cp);
        else if (cp < 0x10000) o += (size_t)sprintf(out + o, "\\u%04x", cp);
        else o += (size_t)sprintf(out + o, "\\U%08x", cp);
    }
    if (i < n) { memcpy(out + o, "...", 3); o += 3; }
    out[o++] = '\'';
    out[o] = 0;
    return out;
}

/* The slots and components of a codec (wire-format section 2). */
static void qc__add_slots(qc_schema *s, const qc_codec *c, int field, int *ns, int *nc, int fill) {
    int i;
    if (c->kind == QC_VECTOR) {
        for (i = 0; i < c->ninner; i++) qc__add_slots(s, &c->inner[i], field, ns, nc, fill);
        return;
    }
    if (c->kind == QC_NEARLYZERO) {
        int flag = *ns;
        (*ns)++;
        qc__add_slots(s, c->inner, field, ns, nc, fill);
        if (fill) {
            qc_slot *sl = &s->slots[flag];
            sl->codec = NULL; sl->bits = 1; sl->field = field; sl->span = *ns - flag - 1;
            sl->sign = 0; sl->role = QC_ROLE_FLAG; sl->comp = -1;
        }
        return;
    }
    if (fill) {
        qc_slot *sl = &s->slots[*ns];
        sl->codec = c; sl->bits = c->bits; sl->field = field; sl->span = 0;
        sl->sign = c->kind == QC_INT || (c->kind == QC_FIXED && c->mode);
        sl->comp = -1;
        switch (c->kind) {
        case QC_QUAT: sl->role = QC_ROLE_QUAT; break;
        case QC_UNITVECTOR: sl->role = QC_ROLE_UVEC; break;
        case QC_BOOL: case QC_ENUM: sl->role = QC_ROLE_ABS; break;
        default: sl->role = QC_ROLE_ORD; break;
        }
        if (sl->role != QC_ROLE_ABS) sl->comp = *nc;
        if (sl->role == QC_ROLE_ORD) {
            qc_comp *cp = &s->comps[*nc];
            cp->slot = *ns; cp->shift = 0; cp->b = c->bits; cp->smag = c->kind == QC_POWERCURVE || c->kind == QC_HALF;
            cp->mask = qc__mask(cp->b); cp->smt = cp->smag ? qc__mask(cp->b - 1) : 0;
        } else if (sl->role == QC_ROLE_QUAT || sl->role == QC_ROLE_UVEC) {
            int k, m = sl->role == QC_ROLE_QUAT ? 3 : 2;
            for (k = 0; k < m; k++) {
                qc_comp *cp = &s->comps[*nc + k];
                cp->slot = *ns; cp->shift = (m - 1 - k) * c->cbits; cp->b = c->cbits; cp->smag = 0;
                cp->mask = qc__mask(cp->b); cp->smt = 0;
            }
        }
    }
    if (c->kind == QC_QUAT) *nc += 3;
    else if (c->kind == QC_UNITVECTOR) *nc += 2;
    else if (c->kind != QC_BOOL && c->kind != QC_ENUM) *nc += 1;
    (*ns)++;
}

int qc_schema_parse(qc_schema *s, const char *json, size_t len, const qc_allocator *al, qc_error *err) {
    QC__NOFMA
    qc__arena a, tmp;
    qc_json *root;
    const qc_json *jn, *jv, *jf;
    qc__sb b;
    size_t k, nf, at;
    unsigned cp;
    int f, ns = 0, nc = 0;
    char where[200];
    memset(s, 0, sizeof *s);
    a.al = qc__allocator_of(al); a.head = NULL;
    tmp.al = a.al; tmp.head = NULL;
    b.a = &a; b.err = err; b.where = "";
    root = qc__json_parse_arena(json, len, &tmp, err);
    if (root == NULL) goto fail;
    if (root->type != QC_JSON_OBJECT) { qc__fail(err, "schema spec must be an object, got %s", qc__jtype_name(root)); goto fail; }
    for (k = 0; k < root->nkids; k++) {
        const char *key = root->kids[k].key;
        if (strcmp(key, "name") && strcmp(key, "version") && strcmp(key, "fields")) {
            qc__fail(err, "schema spec has unknown key '%s' (expected name, version, fields)", key);
            goto fail;
        }
    }
    jn = qc_json_get(root, "name");
    jf = qc_json_get(root, "fields");
    jv = qc_json_get(root, "version");
    if (jn == NULL) { qc__fail(err, "schema spec is missing 'name'"); goto fail; }
    if (jf == NULL) { qc__fail(err, "schema spec is missing 'fields'"); goto fail; }
    if (jn->type != QC_JSON_STRING || jn->len == 0) { qc__fail(err, "schema name must be a non-empty string, got %s", qc__jtype_name(jn)); goto fail; }
    if (strlen(jn->text) != jn->len) { qc__fail(err, "schema name must not contain U+0000 (NUL)"); goto fail; }
    if (qc__lone_surrogate(jn->text, jn->len, &at, &cp)) {
        qc__fail(err, "schema name must be Unicode text: a lone surrogate U+%04X at character %lu", cp, (unsigned long)at);
        goto fail;
    }
    s->name = qc__arena_strdup(&a, jn->text, jn->len);
    if (jv == NULL) {
        s->version_text = "1";
        s->version32 = 1;
    } else {
        uint32_t v32 = 0;
        /* an integer literal 0 .. 2**63 - 1, compared as digits (JSON has no leading zeros); -0 is 0
           (jv->neg is 0 for it), written "0" in the canonical JSON as Python's int gives it */
        const char *dg = jv->type == QC_JSON_NUMBER && jv->text[0] == '-' ? jv->text + 1 : jv->text;
        size_t nd = jv->type == QC_JSON_NUMBER ? jv->len - (size_t)(dg - jv->text) : 0;
        if (jv->type != QC_JSON_NUMBER || !jv->is_int || jv->neg ||
            nd > 19 || (nd == 19 && memcmp(dg, "9223372036854775807", 19) > 0)) {
            char q[64];
            if (jv->type == QC_JSON_NUMBER && jv->len > 40) snprintf(q, sizeof q, "%.20s... (%lu digits)", jv->text, (unsigned long)nd);
            qc__fail(err, "schema version must be an integer from 0 to 2**63 - 1, got %s",
                     jv->type != QC_JSON_NUMBER ? qc__jtype_name(jv) : jv->len > 40 ? q : jv->text);
            goto fail;
        }
        for (k = 0; k < nd; k++) v32 = v32 * 10u + (uint32_t)(dg[k] - '0');
        s->version_text = qc__arena_strdup(&a, dg, nd);
        s->version32 = v32;
    }
    if (jf->type != QC_JSON_ARRAY && jf->type != QC_JSON_OBJECT) {
        qc__fail(err, "fields must be a dict or a list of (name, codec) pairs, got %s", qc__jtype_name(jf));
        goto fail;
    }
    nf = jf->nkids;
    if (nf == 0) { qc__fail(err, "a schema needs at least one field"); goto fail; }
    if (nf > 65535) { qc__fail(err, "a schema has at most 65535 fields, got %lu", (unsigned long)nf); goto fail; }
    s->nfields = (int)nf;
    s->fields = (qc_field *)qc__arena_alloc(&a, nf * sizeof(qc_field));
    s->codecs = (qc_codec *)qc__arena_alloc(&a, nf * sizeof(qc_codec));
    if (s->name == NULL || s->version_text == NULL || s->fields == NULL || s->codecs == NULL) { qc__fail(err, "out of memory"); goto fail; }
    memset(s->fields, 0, nf * sizeof(qc_field));
    for (k = 0; k < nf; k++) {
        const qc_json *item = &jf->kids[k], *fname, *fcodec;
        size_t j;
        if (jf->type == QC_JSON_OBJECT) {
            fname = NULL;
            fcodec = item;
        } else if (item->type == QC_JSON_OBJECT) {
            int ok = item->nkids == 2 && qc_json_get(item, "name") != NULL && qc_json_get(item, "codec") != NULL;
            if (!ok) { qc__fail(err, "field %lu: expected keys 'name' and 'codec'", (unsigned long)k); goto fail; }
            fname = qc_json_get(item, "name");
            fcodec = qc_json_get(item, "codec");
        } else if (item->type == QC_JSON_ARRAY && item->nkids == 2) {
            fname = &item->kids[0];
            fcodec = &item->kids[1];
        } else {
            qc__fail(err, "field %lu: expected a (name, codec) pair, got %s", (unsigned long)k, qc__jtype_name(item));
            goto fail;
        }
        {
            const char *nm = fname != NULL ? (fname->type == QC_JSON_STRING ? fname->text : NULL) : item->key;
            size_t nl = fname != NULL ? fname->len : strlen(item->key);
            if (nm == NULL || !qc__is_identifier(nm, nl)) {
                char q[96];
                qc__fail(err, "field names must be ASCII identifiers (letters A-Z and a-z, digits and _, not starting "
                         "with a digit), got %s", nm != NULL ? qc__quoted(nm, nl, q, sizeof q) : qc__jtype_name(fname));
                goto fail;
            }
            for (j = 0; j < k; j++)
                if (strcmp(s->fields[j].name, nm) == 0) { qc__fail(err, "duplicate field name '%s'", nm); goto fail; }
            s->fields[k].name = qc__arena_strdup(&a, nm, nl);
            if (s->fields[k].name == NULL) { qc__fail(err, "out of memory"); goto fail; }
        }
        if (fcodec->type != QC_JSON_OBJECT) {
            qc__fail(err, "field '%s': expected a codec (or a codec spec dict), got %s", s->fields[k].name, qc__jtype_name(fcodec));
            goto fail;
        }
        snprintf(where, sizeof where, "field '%s': ", s->fields[k].name);
        b.where = where;
        if (qc__build_codec(&b, fcodec, &s->codecs[k], 0) < 0) goto fail;
        s->fields[k].codec = &s->codecs[k];
    }
    s->ncodecs = (int)nf;
    /* slots and components */
    for (f = 0; f < s->nfields; f++) qc__add_slots(s, s->fields[f].codec, f, &ns, &nc, 0);
    s->slots = (qc_slot *)qc__arena_alloc(&a, (size_t)(ns + 1) * sizeof(qc_slot));
    s->comps = (qc_comp *)qc__arena_alloc(&a, (size_t)(nc + 1) * sizeof(qc_comp));
    if (s->slots == NULL || s->comps == NULL) { qc__fail(err, "out of memory"); goto fail; }
    ns = 0; nc = 0;
    s->max_bits = 0; s->min_bits = 0;
    for (f = 0; f < s->nfields; f++) {
        qc_field *fd = &s->fields[f];
        int i;
        fd->first_slot = ns;
        fd->first_comp = nc;
        qc__add_slots(s, fd->codec, f, &ns, &nc, 1);
        fd->nslots = ns - fd->first_slot;
        fd->ncomps = nc - fd->first_comp;
        fd->nvalues = qc_nvalues(fd->codec);
        fd->implied_flag = fd->codec->kind == QC_NEARLYZERO;
        fd->implied_flip = fd->nslots == 1 && s->slots[fd->first_slot].role == QC_ROLE_ABS && s->slots[fd->first_slot].bits == 1;
        for (i = fd->first_slot; i < ns; i++) {
            s->max_bits += s->slots[i].bits;
            if (!(i > fd->first_slot && fd->implied_flag)) s->min_bits += s->slots[i].bits;
        }
    }
    s->nslots = ns;
    s->ncomps = nc;
    /* how each slot's codes are checked: 0 every code of its width is valid (full-range
       Bounded, Fixed, Angle, UInt, Int, Grid, Half, Bool, UnitVector, an Enum of 2**bits);
       1 the codec's valid(); 2 a PowerCurve (every code but the negative zero); 4 a Quat through a table of its component codes' shrunk values
       (quat_valid's arithmetic, value for value); 6 a flag */
    for (f = 0; f < ns; f++) {
        qc_slot *sl = &s->slots[f];
        const qc_codec *c = sl->codec;
        sl->qtab = NULL;
        sl->qsq = NULL;
        if (sl->role == QC_ROLE_FLAG) sl->vclass = 6;
        else if (c->kind == QC_POWERCURVE) sl->vclass = 2;
        else if (c->kind == QC_ENUM) sl->vclass = c->count == ((uint64_t)1 << c->bits) ? 0 : 1;
        else if (c->kind == QC_INTRANGE) sl->vclass = c->maxcode == qc__mask(c->bits) ? 0 : 1;
        else if (c->kind == QC_BOUNDED && c->mode == 2) sl->vclass = 1;     /* midpoint: no 2**bits - 1 */
        else if (c->kind == QC_QUAT) {
            sl->vclass = 1;
            if (c->cbits <= 12) {
                size_t j, nq = (size_t)1 << c->cbits;
                double *t = (double *)qc__arena_alloc(&a, nq * sizeof(double));
                uint32_t *q;
                double st = c->R / c->L;
                if (t == NULL) { qc__fail(err, "out of memory"); goto fail; }
                /* a code above the mode's top (midpoint: 2**cbits - 1) is no level: 2.0 fails the test */
                for (j = 0; j < nq; j++)
                    t[j] = (double)j <= c->L ? qc__quat_shrunk(qc__bounded_dqd((double)j, c->lo, c->hi, c->R, c->L, c->mode), st) : 2.0;
                sl->qtab = t;
                sl->vclass = 4;
                /* t * t rounded is within a unit in the last place of the square, far less
                   than the 2 units added; the 2.0 of a code above the top gives the largest */
                q = (uint32_t *)qc__arena_alloc(&a, nq * sizeof(uint32_t));
                if (q == NULL) { qc__fail(err, "out of memory"); goto fail; }
                for (j = 0; j < nq; j++) {
                    double x = t[j] * t[j] * 4294967296.0;
                    q[j] = x < 4294967000.0 ? (uint32_t)((uint64_t)x + 2) : 0xFFFFFFFFu;
                }
                sl->qsq = q;
            }
        } else sl->vclass = 0;
    }
    /* canonical JSON, fingerprint, the fields' hashes */
    {
        qc__out o;
        uint8_t dg[32];
        int i;
        o.buf = NULL; o.n = 0; o.cap = 0;
        qc__emit_schema(&o, s);
        o.cap = o.n + 1;
        o.buf = (char *)qc__arena_alloc(&a, o.cap);
        if (o.buf == NULL) { qc__fail(err, "out of memory"); goto fail; }
        o.n = 0;
        qc__emit_schema(&o, s);
        o.buf[o.n] = 0;
        s->canonical = o.buf;
        s->canonical_len = o.n;
        qc_sha256((const uint8_t *)o.buf, o.n, dg);
        for (i = 0; i < 8; i++) sprintf(s->fingerprint + 2 * i, "%02x", dg[i]);
        for (f = 0; f < s->nfields; f++) {
            qc__out co;
            co.buf = NULL; co.n = 0; co.cap = 0;
            qc__emit_codec(&co, s->fields[f].codec);
            co.cap = co.n;
            co.buf = (char *)qc__arena_alloc(&tmp, co.cap + 1);
            if (co.buf == NULL) { qc__fail(err, "out of memory"); goto fail; }
            co.n = 0;
            qc__emit_codec(&co, s->fields[f].codec);
            qc_sha256((const uint8_t *)co.buf, co.n, dg);
            s->fields[f].h = (uint32_t)dg[0] | (uint32_t)dg[1] << 8 | (uint32_t)dg[2] << 16 | (uint32_t)dg[3] << 24;
        }
    }
    qc__arena_free(tmp.al, tmp.head);
    s->al = a.al;
    s->chunks = a.head;
    return 0;
fail:
    qc__arena_free(tmp.al, tmp.head);
    qc__arena_free(a.al, a.head);
    memset(s, 0, sizeof *s);
    return -1;
}

void qc_schema_free(qc_schema *s) {
    if (s == NULL) return;              /* like free(NULL) */
    if (s->chunks != NULL) qc__arena_free(s->al, (qc__chunk *)s->chunks);
    memset(s, 0, sizeof *s);
}

int qc_field_index(const qc_schema *s, const char *name) {
    int f;
    for (f = 0; f < s->nfields; f++) if (strcmp(s->fields[f].name, name) == 0) return f;
    return -1;
}

static const char *qc__role_name(int r) {
    switch (r) {
    case QC_ROLE_FLAG: return "flag";
    case QC_ROLE_ORD: return "ord";
    case QC_ROLE_QUAT: return "quat";
    case QC_ROLE_UVEC: return "uvec";
    default: return "abs";
    }
}

size_t qc_schema_slot_table(const qc_schema *s, char *buf, size_t cap) {
    size_t n = 0;
    int i;
    for (i = 0; i < s->nslots; i++) {
        const qc_slot *sl = &s->slots[i];
        char line[160];
        int l = snprintf(line, sizeof line, "slot %d: field %s %s %d bits %s%s\n", i, s->fields[sl->field].name,
                         sl->codec ? qc__kind_names[sl->codec->kind] : "flag", sl->bits, qc__role_name(sl->role),
                         sl->sign ? " signed" : "");
        if (l > 0 && n + (size_t)l < cap) memcpy(buf + n, line, (size_t)l);
        n += (size_t)(l > 0 ? l : 0);
    }
    if (cap) buf[n < cap ? n : cap - 1] = 0;
    return n;
}

int qc_field_values(const qc_schema *s, int field, const uint64_t *row, double *out) {
    const qc_field *fd;
    /* -1 (what qc_field_index gives for a name the schema lacks) or past the last: an error */
    if (field < 0 || field >= s->nfields) return -1;
    fd = &s->fields[field];
    qc__dq_codes(fd->codec, row + fd->first_slot, out);
    return 0;
}

/* ---- records (wire-format section 3) ---------------------------------------------------------- */

static const char *qc__slot_name(const qc_schema *s, int slot, char *buf, size_t cap) {
    const qc_slot *sl = &s->slots[slot];
    const qc_field *fd = &s->fields[sl->field];
    if (fd->nslots == 1) snprintf(buf, cap, "field '%s'", fd->name);
    else if (sl->role == QC_ROLE_FLAG) snprintf(buf, cap, "field '%s' (flag)", fd->name);
    else snprintf(buf, cap, "field '%s'[%d]", fd->name, slot - fd->first_slot - (fd->implied_flag ? 1 : 0));
    return buf;
}

QC__HOT uint64_t qc__sext(uint64_t w, int bits) {
    if (bits < 64 && bits > 0 && (w >> (bits - 1))) return w | (~(uint64_t)0 << bits);
    return w;
}

/* Valid only where qc__slot_ok says so, from q, an upper bound of each component code's
   shrunk value squared in units of 2**-32 (qc_slot.qsq): a sum of squares and the largest
   square together at most 1 - 2**-24 leave sqrt(1 - s) above the largest kept value by far
   more than the doubles' rounding; anything closer to the boundary takes the exact test. */
#define QC__QSQ_LIM ((((uint64_t)1) << 32) - (((uint64_t)1) << 8))
QC__HOT int qc__quat_surely_valid(const uint32_t *q, uint64_t a, uint64_t b, uint64_t c) {
    uint64_t x = q[a], y = q[b], z = q[c], big = x > y ? x : y;
    big = big > z ? big : z;
    return x + y + z + big <= QC__QSQ_LIM;
}

/* A code read from the wire (bits wide, sign-extended for signed slots) is valid. */
QC__HOT int qc__slot_ok(const qc_slot *sl, uint64_t v) {
    QC__NOFMA
    switch (sl->vclass) {
    case 0: return 1;
    case 6: return v <= 1;
    case 2: return !((v >> (sl->bits - 1)) && (v & (sl->codec->maxcode >> 1)) == 0);   /* PowerCurve: no -0 */
    case 4: {
        int cb = sl->codec->cbits;
        uint64_t m = (((uint64_t)1) << cb) - 1;
        double a, b, c, s, big;
        /* most codes: the integer test on the squares' bounds; the rest, the exact test */
        if (qc__quat_surely_valid(sl->qsq, (v >> (2 * cb)) & m, (v >> cb) & m, v & m)) return 1;
        a = sl->qtab[(v >> (2 * cb)) & m];
        b = sl->qtab[(v >> cb) & m];
        c = sl->qtab[v & m];
        s = (a * a + b * b) + c * c;
        big = c > 0.0 ? c : 0.0;
        big = b > big ? b : big;
        big = a > big ? a : big;
        return (!(s > 1.0)) & (sqrt(1.0 - s) >= big);
    }
    default: return qc_valid(sl->codec, v);
    }
}

static int qc__slot_valid(const qc_slot *sl, uint64_t c) {
    if (sl->role == QC_ROLE_FLAG) return c <= 1;
    return qc_valid(sl->codec, c);
}

int qc_record_encode(const qc_schema *s, const uint64_t *row, uint8_t *out, size_t cap, size_t *outlen, qc_error *err) {
    qc__bw w;
    int i;
    char nm[160];
    w.buf = out; w.cap = cap; w.pos = 0; w.overflow = 0;
    for (i = 0; i < s->nslots; i++) {
        const qc_slot *sl = &s->slots[i];
        if (!qc__slot_valid(sl, row[i])) {
            qc__fail(err, "%s: code %llu is not valid", qc__slot_name(s, i, nm, sizeof nm), (unsigned long long)row[i]);
            return -1;
        }
        if (sl->role == QC_ROLE_FLAG && row[i] == 0) {
            int t;
            for (t = i + 1; t <= i + sl->span; t++)
                if (row[t] != 0) {
                    qc__fail(err, "%s: flag 0 with a non-zero code", qc__slot_name(s, i, nm, sizeof nm));
                    return -1;
                }
            qc__put(&w, 0, 1);
            i += sl->span;
            continue;
        }
        qc__put(&w, row[i] & qc__mask(sl->bits), sl->bits);
    }
    while (w.pos & 7) qc__put(&w, 0, 1);
    if (w.overflow) { qc__fail(err, "record needs more than %lu bytes", (unsigned long)cap); return -1; }
    *outlen = w.pos / 8;
    return 0;
}

/* One record's codes (wire-format 3) from r into row, a flag of 0 zeroing the slots it governs,
   signed codes sign-extended: 0; -1 a short read (*slot: at which slot); 1 a code that is not
   valid (*slot, *code, read at r->pos minus the slot's bits) */
static int qc__record_read(qc__br *r, const qc_schema *s, uint64_t *row, int *slot, uint64_t *code) {
    int i, t;
    uint64_t v;
    for (i = 0; i < s->nslots; i++) {
        const qc_slot *sl = &s->slots[i];
        *slot = i;
        if (qc__get(r, sl->bits, &v) < 0) return -1;
        if (sl->role == QC_ROLE_FLAG) {
            row[i] = v;
            if (v == 0) {
                for (t = i + 1; t <= i + sl->span; t++) row[t] = 0;
                i += sl->span;
            }
            continue;
        }
        if (sl->sign) v = qc__sext(v, sl->bits);
        row[i] = v;
        if (!qc__slot_ok(sl, v)) { *code = v; return 1; }
    }
    return 0;
}

int qc_record_decode(const qc_schema *s, const uint8_t *buf, size_t len, uint64_t *row, qc_error *err) {
    qc__br r;
    int i = 0, st;
    uint64_t v = 0;
    char nm[160];
    qc__br_init(&r, buf, len);
    st = qc__record_read(&r, s, row, &i, &v);
    if (st < 0)
        return qc__fail(err, "%s: message too short: the code needs %d bits at bit %lu, the message has %lu bits (%lu bytes)",
                        qc__slot_name(s, i, nm, sizeof nm), s->slots[i].bits, (unsigned long)r.pos, (unsigned long)r.nbits,
                        (unsigned long)len);
    if (st > 0) {
        char num[32];
        if (s->slots[i].sign) snprintf(num, sizeof num, "%lld", (long long)(int64_t)v);
        else snprintf(num, sizeof num, "%llu", (unsigned long long)v);
        return qc__fail(err, "%s: code %s is not valid at bit %lu", qc__slot_name(s, i, nm, sizeof nm), num,
                        (unsigned long)(r.pos - (size_t)s->slots[i].bits));
    }
    if ((r.pos + 7) / 8 != len) {
        if ((r.pos + 7) / 8 > len)
            return qc__fail(err, "message too short");
        return qc__fail(err, "message too long: %lu bytes, but the record ends at bit %lu (%lu bytes)", (unsigned long)len,
                        (unsigned long)r.pos, (unsigned long)((r.pos + 7) / 8));
    }
    if (qc__get(&r, (int)(r.nbits - r.pos), &v) == 0 && v != 0)
        return qc__fail(err, "padding bits after the last field are not zero (at bit %lu)", (unsigned long)r.pos);
    return 0;
}

/* ---- primitive codes (wire-format section 4) --------------------------------------------------- */

/* A component's Exp-Golomb coding in one packet (or a header code's, made on the spot): its
   parameter k, the width b, and the masks of the read: emask = 2**E - 1 (E = the escape's
   length, ((b - k + 1) >> 1) + 1 <= 33), kmask = 2**k - 1, umax = 2**b - 1 (its largest value). */
typedef struct qc__cpar { uint64_t emask, kmask, umax; int k, b, E, usep; } qc__cpar;

static void qc__cpar_set(qc__cpar *P, int k, int b) {
    P->k = k;
    P->b = b;
    P->E = ((b - k + 1) >> 1) + 1;
    P->emask = (((uint64_t)1) << P->E) - 1;
    P->kmask = qc__mask(k);
    P->umax = qc__mask(b);
}

/* a code's value from the bits w at its start, its first 1 at bit e (< E): the e bits after
   the 1 (x & o) and the k low bits after them */
QC__HOT uint64_t qc__eg_value(uint64_t w, uint64_t e, const qc__cpar *P) {
    uint64_t x = w >> (e + 1), hi = ~(uint64_t)0 << e;   /* o = ~hi (written so: andn) */
    return (((x & ~hi) + ~hi) << P->k) | ((x >> e) & P->kmask);
}

/* THE Exp-Golomb read EG(k, b) (every code of the checked paths goes through it; the fast paths'
   qc__bits_eg below, through a register, shares its value rule, qc__eg_value): at bit *pos of buf,
   where the caller has made sure that 16 bytes can be loaded (qc__eg_p: far from the end),
   and for b <= 32 when it may be an escape.
   The code's E-bit prefix: its first 1 at e < E, then e bits and k low bits; E zeros: the escape,
   (alt) one more bit, 1 meaning "something else follows", then the value raw in b bits.
   0: read (*u set, *pos advanced); 1 (alt only): that bit was 1 (*pos after it); -1: not read
   here (a code over 57 bits, or a value above umax: qc__eg_slow decides, bit by bit). */
QC__HOT int qc__eg_read(const uint8_t *buf, size_t *pos, const qc__cpar *P, uint64_t *u, int alt) {
    size_t p = *pos;
    uint64_t pk = qc__load_le64(buf + (p >> 3)) >> (p & 7), m, e, t;
    if (QC__UNLIKELY(!(pk & P->emask))) {
        p += (size_t)P->E;
        if (alt) {
            t = (qc__load_le64(buf + (p >> 3)) >> (p & 7)) & 1;
            p++;
            if (t) { *pos = p; return 1; }
        }
        *u = (qc__load_le64(buf + (p >> 3)) >> (p & 7)) & P->umax;
        *pos = p + (size_t)P->b;
        return 0;
    }
    e = (uint64_t)qc__ctz(pk);
    t = 2 * e + 1 + (uint64_t)P->k;
    if (QC__UNLIKELY(t > 57)) return -1;
    m = qc__eg_value(pk, e, P);
    if (QC__UNLIKELY(m > P->umax)) return -1;
    *u = m;
    *pos = p + (size_t)t;
    return 0;
}

/* The fast path's bit reader (Fabian Giesen's "Reading bits in far too many ways", part 2,
   variant 4): the next bits in a register, w (bit 0 the next one, the wire's order), n of them
   counted (n <= 63; the bits of w above n are zero or the stream's next ones), p the byte where
   the stream's bits after the counted ones begin: the bit position is 8 * (p - buf) - n. A
   code's reads take w's bits, shift them out, n down; the refill ORs the 8 bytes at p in above
   the counted bits (without a branch) and counts at least 56 after it. Its loads reach at most
   16 bytes past the bit position's byte: bounds-free as qc__eg_read, the caller making sure. */
typedef struct qc__bits { uint64_t w; const uint8_t *p; unsigned n; } qc__bits;

QC__HOT void qc__bits_at(qc__bits *r, const uint8_t *buf, size_t pos) {
    r->w = qc__load_le64(buf + (pos >> 3)) >> (pos & 7);
    r->p = buf + (pos >> 3) + 7;
    r->n = 56 - (unsigned)(pos & 7);
}
QC__HOT size_t qc__bits_pos(const qc__bits *r, const uint8_t *buf) { return (size_t)(r->p - buf) * 8 - r->n; }
QC__HOT void qc__bits_fill(qc__bits *r) {
    r->w |= qc__load_le64(r->p) << r->n;
    r->p += (63 - r->n) >> 3;
    r->n |= 56;
}
/* n <= the count bits */
QC__HOT uint64_t qc__bits_take(qc__bits *r, int n) {
    uint64_t v = r->w & ((((uint64_t)1) << n) - 1);
    r->w >>= n;
    r->n -= (unsigned)n;
    return v;
}

/* EG(k, b) for b <= 32 through the register (qc__eg_read's rule and results), with at least
   E + 1 + b bits counted (the caller refills): the code, at most b + 2 bits (its first 1 at
   e < E, e <= (b - k + 1) / 2: 2e + 1 + k <= b + 2), or an escape of at most E + 1 + b.
   0 read, 1 (alt) the escape's "something else follows", -1 a value above umax (the caller
   gives up the entity). */
QC__HOT int qc__bits_eg(qc__bits *r, const qc__cpar *P, uint64_t *u, int alt) {
    uint64_t w = r->w, m, e;
    unsigned t;
    if (QC__UNLIKELY(!(w & P->emask))) {
        t = (unsigned)P->E;
        if (alt) {
            if ((w >> t) & 1) {
                r->w = w >> (t + 1);
                r->n -= t + 1;
                return 1;
            }
            t++;
        }
        w >>= t;
        *u = w & P->umax;
        r->w = w >> P->b;
        r->n -= t + (unsigned)P->b;
        return 0;
    }
    e = (uint64_t)qc__ctz(w);
    t = 2 * (unsigned)e + 1 + (unsigned)P->k;
    m = qc__eg_value(w, e, P);
    if (QC__UNLIKELY(m > P->umax)) return -1;
    *u = m;
    r->w = w >> t;
    r->n -= t;
    return 0;
}

/* the rest of EG(k, b) from r->pos, bit by bit (wide codes, escapes of wide values, the end of
   the packet); same results as qc__eg_read where both read. 0 ok (*alt = 1: the escape's
   "something else follows"), -1 bad */
static int qc__eg_slow(qc__br *r, const qc__cpar *P, uint64_t *out, int *alt) {
    int E = P->E, k = P->k, b = P->b, n, e;
    size_t avail = qc__br_left(r);
    uint64_t peek, m, low;
    n = (size_t)E < avail ? E : (int)avail;
    if (n <= 0) return -1;
    peek = qc__peek_at(r, r->pos, n);
    if (peek == 0) {
        if (n < E) return -1;
        r->pos += (size_t)E;
        if (alt != NULL) {
            if (qc__get(r, 1, &m) < 0) return -1;
            if (m) { *alt = 1; return 0; }
        }
        return qc__get(r, b, out);
    }
    e = qc__ctz(peek);
    r->pos += (size_t)e + 1;
    if (qc__get(r, e, &m) < 0) return -1;
    m = (m | (((uint64_t)1) << e)) - 1;
    if (qc__get(r, k, &low) < 0) return -1;
    if (k >= 64) {
        if (m) return -1;
        *out = low;
        return 0;
    }
    if (k && (m >> (64 - k))) return -1;
    m = (m << k) | low;
    if (b < 64 && (m >> b)) return -1;
    *out = m;
    return 0;
}

/* EG(k, b) through a checked reader: qc__eg_read when 16 bytes can be loaded, else (or when it
   does not read the code) qc__eg_slow. With alt, *alt = 1 for the escape's "something else
   follows", else 0. 0 ok, -1 bad. */
QC__HOT int qc__eg_p(qc__br *r, const qc__cpar *P, uint64_t *out, int *alt) {
    size_t p = r->pos;
    if ((p >> 3) + 16 <= r->nbytes && (P->b <= 32 || (qc__load_le64(r->buf + (p >> 3)) >> (p & 7)) & P->emask)) {
        int st = qc__eg_read(r->buf, &p, P, out, alt != NULL);
        if (st >= 0) {
            r->pos = p;
            if (alt != NULL) *alt = st;
            return 0;
        }
    }
    if (alt != NULL) *alt = 0;
    return qc__eg_slow(r, P, out, alt);
}

/* EG(k, b) of the packet's head (distances, counts, ids): its masks made here */
static int qc__eg(qc__br *r, int k, int b, uint64_t *out) {
    qc__cpar P;
    qc__cpar_set(&P, k, b);
    return qc__eg_p(r, &P, out, NULL);
}

static int qc__rice(qc__br *r, int k, uint64_t limit, uint64_t *out) {
    uint64_t q = 0, qmax = limit >> k, low, peek;
    for (;;) {
        size_t avail = qc__br_left(r);
        int n;
        if (avail == 0) return -1;
        n = avail >= 64 ? 64 : (int)avail;
        peek = qc__peek_at(r, r->pos, n);
        if (peek) {
            int z = qc__ctz(peek);
            q += (uint64_t)z;
            r->pos += (size_t)z + 1;
            break;
        }
        q += (uint64_t)n;
        r->pos += (size_t)n;
        if (q > qmax) return -1;
    }
    if (q > qmax) return -1;
    if (qc__get(r, k, &low) < 0) return -1;
    q = (q << k) | low;
    if (q >= limit) return -1;
    *out = q;
    return 0;
}

static int qc__list(qc__br *r, size_t *pos, size_t cnt, size_t M) {
    uint64_t v;
    size_t i;
    long long prev = -1;
    int k;
    if (qc__get(r, 5, &v) < 0) return -1;
    k = (int)v;
    for (i = 0; i < cnt; i++) {
        if (qc__rice(r, k, (uint64_t)((long long)M - prev - 1), &v) < 0) return -1;
        prev = prev + 1 + (long long)v;
        pos[i] = (size_t)prev;
    }
    return 0;
}

/* SET(M) into pos (room for M): *n members ascending. */
static int qc__set(qc__br *r, size_t *pos, size_t *n, size_t M) {
    uint64_t v, mode, word;
    size_t i, j, cnt, ws;
    int cb = qc__bitlen((uint64_t)(M - 1));
    *n = 0;
    if (qc__get(r, 2, &mode) < 0) return -1;
    if (mode == 0) return 0;
    if (mode == 1 || mode == 2) {
        if (qc__get(r, cb, &v) < 0) return -1;
        if (v > (uint64_t)M) return -1;
        cnt = (size_t)v + (mode == 1 ? 1 : 0);
        if (cnt > M || (mode == 2 && cnt == M)) return -1;
        if (mode == 1) {
            if (qc__list(r, pos, cnt, M) < 0) return -1;
            *n = cnt;
            return 0;
        }
        if (cnt && qc__list(r, pos + (M - cnt), cnt, M) < 0) return -1;
        /* the members: the runs between the absent ones, written from the front (behind the
           absent ones' list, at the back: each is read before a member reaches its place) */
        j = M - cnt;
        i = 0;
        cnt = 0;
        for (; j < M; j++) {
            size_t x = pos[j];
            while (i < x) pos[cnt++] = i++;
            i++;
        }
        while (i < M) pos[cnt++] = i++;
        *n = cnt;
        return 0;
    }
    cnt = 0;
    for (ws = 0; ws < M; ws += 64) {
        int bits = (int)(M - ws < 64 ? M - ws : 64);
        if (qc__get(r, bits, &word) < 0) return -1;
        while (word) {
            pos[cnt++] = ws + (size_t)qc__ctz(word);
            word &= word - 1;
        }
    }
    if (cnt == 0) return -1;
    *n = cnt;
    return 0;
}

/* ---- the delta rules (wire-format sections 7-8): each once, for both paths of the packet decoder ---- */

QC__HOT uint64_t qc__lin(uint64_t carrier, const qc_comp *cp) {
    uint64_t x = (carrier >> cp->shift) & cp->mask;
    if ((x >> (cp->b - 1)) & 1) x ^= cp->smt;
    return x;
}

static int64_t qc__round_div(int64_t x, int64_t den) {
    if (x >= 0) return (2 * x + den) / (2 * den);
    return -((2 * (-x) + den) / (2 * den));
}

/* A component's reference: its baseline value, or extrapolated through pred. */
QC__HOT uint64_t qc__ref(uint64_t bc, const uint64_t *pc, const qc_comp *cp, int64_t num, int64_t den) {
    uint64_t xb = qc__lin(bc, cp), mask = cp->mask, xp, dd;
    int64_t s, t;
    if (pc == NULL) return xb;
    xp = qc__lin(*pc, cp);
    dd = (xb - xp) & mask;
    s = (int64_t)qc__sext(dd, cp->b);
    t = den == 1 ? s * num : qc__round_div(s * num, den);
    return (xb + (uint64_t)t) & mask;
}

QC__HOT uint64_t qc__unzz(uint64_t u) { return (u >> 1) ^ (~(u & 1) + 1); }
QC__HOT uint64_t qc__sign_mask(uint64_t x) { return 0 - (x >> 63); }     /* ~0 when the top bit is set */
QC__HOT uint64_t qc__asr(uint64_t x, int n) {                            /* x >> n, shifting the top bit in */
    uint64_t s = qc__sign_mask(x);
    return s ^ ((s ^ x) >> n);
}

QC__HOT uint64_t qc__apply(uint64_t ref, uint64_t u, const qc_comp *cp) {
    uint64_t x = (ref + qc__unzz(u)) & cp->mask;
    if ((x >> (cp->b - 1)) & 1) x ^= cp->smt;
    return x;
}

/* top: the mode's top component code (2**cb - 1 for endpoints and bins; midpoint 2**cb - 2), the code of a negated value
   being top - c (docs/wire-format.md 7.3) */
static uint64_t qc__remap_ref(uint64_t bcode, int j, int t, int cb, uint64_t top) {
    uint64_t M = qc__mask(cb), aj, ak;
    int i = (int)((bcode >> (3 * cb)) & 3);
    int k = t + (t >= j ? 1 : 0);
    int pj = j - (j > i ? 1 : 0), pk;
    aj = (bcode >> ((2 - pj) * cb)) & M;
    if (k == i) return aj;
    pk = k - (k > i ? 1 : 0);
    ak = (bcode >> ((2 - pk) * cb)) & M;
    return (aj >> (cb - 1)) ? ak : ((top - ak) & M);
}

/* ---- the decoder's memory ---------------------------------------------------------------------- */

static void *qc__dalloc(qc_decoder *d, size_t n) {
    void *p;
    if (d->alloc_limit && (n > d->alloc_limit || d->bytes > d->alloc_limit - n)) return NULL;
    p = d->al.alloc(d->al.ud, n ? n : 1);
    if (p != NULL) d->bytes += n;
    return p;
}

static void qc__dfree(qc_decoder *d, void *p, size_t n) {
    if (p == NULL) return;
    d->al.free(d->al.ud, p, n ? n : 1);
    d->bytes -= n;
}

#define QC__SNAP_HEAD ((sizeof(qc_snapshot) + 15) / 16 * 16)

/* size_t sums and products that stop at SIZE_MAX instead of wrapping (the sizes' upper bounds) */
static size_t qc__sat_add(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }
static size_t qc__sat_mul(size_t a, size_t b) { return b != 0 && a > SIZE_MAX / b ? SIZE_MAX : a * b; }

size_t qc_snapshot_bytes(const qc_schema *s, size_t n) {
    /* SIZE_MAX past a size_t (which no allocator gives): an upper bound never wraps */
    return qc__sat_add(QC__SNAP_HEAD, qc__sat_mul(n, 8 * (1 + (size_t)s->nslots)));
}

uint64_t qc_snapshot_cost(const qc_schema *s, uint64_t n) {
    uint64_t per = 8 + 8 * (uint64_t)s->nslots;
    /* UINT64_MAX past a uint64_t (more than any max_bytes) */
    return n > (UINT64_MAX - 256) / per ? UINT64_MAX : 256 + n * per;
}

uint64_t qc_decoder_cost(const qc_decoder *d) {
    return d->held_cost + 256 * (uint64_t)d->max_datagram;
}

static qc_snapshot *qc__snap_new(qc_decoder *d, size_t n) {
    size_t bytes = qc_snapshot_bytes(d->schema, n);
    qc_snapshot *s = (qc_snapshot *)qc__dalloc(d, bytes);
    if (s == NULL) return NULL;
    s->seq = 0;
    s->n = n;
    s->ids = (uint64_t *)((char *)s + QC__SNAP_HEAD);
    s->rows = s->ids + n;
    s->bytes = bytes;
    return s;
}

static void qc__snap_free(qc_decoder *d, qc_snapshot *s) {
    if (s != NULL) qc__dfree(d, s, s->bytes);
}

/* scratch: `words` size_t's (the entity lists) then `extra` bytes */
static void *qc__scratch(qc_decoder *d, size_t bytes) {
    if (bytes <= d->scratch_size) return d->scratch;
    qc__dfree(d, d->scratch, d->scratch_size);
    d->scratch = NULL;
    d->scratch_size = 0;
    bytes = bytes < 4096 ? 4096 : bytes + bytes / 4;
    d->scratch = qc__dalloc(d, bytes);
    if (d->scratch != NULL) d->scratch_size = bytes;
    return d->scratch;
}

/* ---- the held snapshots (wire-format section 10) ------------------------------------------------ */

#define QC__M 0xFFFF

static int qc__newer(int a, int b) { int x = (a - b) & QC__M; return x > 0 && x < 0x8000; }

static int qc__find(const qc_decoder *d, int seq) {
    int i;
    for (i = 0; i < d->nheld; i++) if (d->held_seq[i] == seq) return i;
    return -1;
}

static void qc__drop_at(qc_decoder *d, int i) {
    d->held_cost -= qc_snapshot_cost(d->schema, d->held[i]->n);
    qc__snap_free(d, d->held[i]);
    d->nheld--;
    d->held[i] = d->held[d->nheld];
    d->held_seq[i] = d->held_seq[d->nheld];
}

static int qc__amb(const qc_decoder *d, int s) { return (int)((d->ambiguous[s >> 6] >> (s & 63)) & 1); }
static void qc__amb_set(qc_decoder *d, int s) {
    if (!qc__amb(d, s)) { d->ambiguous[s >> 6] |= ((uint64_t)1) << (s & 63); d->nambiguous++; }
}
static void qc__amb_clear(qc_decoder *d, int s) {
    if (qc__amb(d, s)) { d->ambiguous[s >> 6] &= ~(((uint64_t)1) << (s & 63)); d->nambiguous--; }
}

const qc_snapshot *qc_decoder_get(const qc_decoder *d, int seq) {
    int i;
    seq &= QC__M;
    if (d->latest < 0 || ((d->latest - seq) & QC__M) >= d->history) return NULL;
    i = qc__find(d, seq);
    return i < 0 ? NULL : d->held[i];
}

int qc_decoder_latest(const qc_decoder *d) { return d->latest; }

static const qc_snapshot *qc__held_ref(qc_decoder *d, int s, int seq, int baseline, qc_result *res) {
    int i = qc__find(d, s);
    if (i >= 0 && (!baseline || ((d->latest - s) & QC__M) < d->history)) return d->held[i];
    if (d->nambiguous && qc__amb(d, s))
        snprintf(res->message, sizeof res->message, "snapshot packet %d: the snapshot %d it is coded against is ambiguous "
                 "(two different snapshots were decoded under that number)", seq, s);
    else if (baseline)
        snprintf(res->message, sizeof res->message, "snapshot packet %d: its baseline %d is not held", seq, s);
    else
        snprintf(res->message, sizeof res->message, "snapshot packet %d: the snapshot %d it extrapolates from is not held", seq, s);
    return NULL;
}

/* ---- one packet (wire-format sections 6-7) ------------------------------------------------------ */

static int qc__bad(qc_result *res, const char *what, size_t pos) {
    snprintf(res->message, sizeof res->message, "snapshot packet: %s at bit %lu", what, (unsigned long)pos);
    return QC_E_MALFORMED;
}

/* ---- the changed entities' fast path ----------------------------------------------------------
   One changed entity decoded as the slot-by-slot loop decodes it, for the common case only,
   driven by per-packet tables (qc__dcomp a component, qc__dfield a field): fields of the common
   shapes (ordered slots, a NearlyZero of ordered slots, a smallest-three Quat of at most 12 bits
   a component), every code of at most 57 bits (or an escape), every code valid, every field
   marked changed changed. Reads are bounds-free: the caller has made sure that the bytes from
   the entity's start to its most bits and 16 more can be loaded (the packet itself far from its
   end, else a zero-padded copy of its tail). An entity that is not that case is decoded again
   from its start by the slot-by-slot loop, which rewrites the slots written here and makes the
   error, if any. */
enum { QC__FS_NONE = 0, QC__FS_ORD = 1, QC__FS_NZ = 2, QC__FS_QUAT = 3 };
/* the most bits the fast path reads for one component (a code of at most 57 bits, or an escape
   of at most 33 + 1 + 32) plus one slot (a flag, or a smallest three's how and new index: 3) */
#define QC__FAST_MAXBITS 72

typedef struct qc__dcomp {  /* one component's decoding in one packet (both paths) */
    qc__cpar P;             /* its Exp-Golomb coding (and usep) */
    uint64_t numc;          /* the extrapolation's numerator, 0 when not extrapolated */
    uint64_t smt;           /* sign-magnitude: the magnitude bits at the top of the word, else 0 */
    uint64_t smtb;          /* the same in the low b bits (qc_comp.smt) */
    uint64_t vmask;         /* ordered: ~0 for sign-extended carriers, else umax */
    uint64_t vlo, vspan;    /* ordered: the valid codes are vlo .. vlo + vspan (mod 2**64) */
    uint64_t vbad;          /* ordered: one more invalid code inside (PowerCurve's negative
                               zero), else 2**62 (no code of at most 32 bits) */
    int shift, sh, slot;    /* its place in its slot's carrier; 64 - b; its slot */
    int sb;                 /* b - 1 (its code's top bit) */
    int fill;               /* the fast path refills its bits before this component's code
                               (the field's codes before it, at their longest, may leave
                               fewer than this one's longest: qc__fast_tables) */
    const uint16_t *egt;    /* the fast path's look-up table for its (k, b) (qc__egt_for) */
} qc__dcomp;

/* ---- the fast path's Exp-Golomb look-up tables ------------------------------------------------
   Most codes are short (of the bench stream's fast path, 89% at most 8 bits, 94% at most 10):
   for one (k, b), a table on the next QC__EGT_BITS bits of the stream gives the code's length
   (1 to QC__EGT_BITS) and its value already zig-zag decoded (plus 2048, in the top 12 bits:
   the value is below 2**11), or 0 (length 0) where the
   code is longer, an escape, or above umax: then the read through qc__bits_eg, which decides.
   An entry depends only on the code's own bits, so whatever lies above them (the stream's next
   bits, or zeros past those counted) leaves it right. A decoder keeps up to QC_EG_TABLES of
   them (QC_EG_TABLE_BYTES each, allocated as the decoder's memory, counted against its
   alloc_limit and in qc_decoder_worst_case_bytes), built the first time a packet uses its
   (k, b) and kept across packets; past QC_EG_TABLES, one no packet component uses now is
   rebuilt for the new (k, b). A table that cannot be had (k + 1 > QC__EGT_BITS, b > 32, all
   taken by the packet, or memory refused) is qc__egt_none: every code read the long way. */
#define QC__EGT_BITS QC_EG_TABLE_BITS
static const uint16_t qc__egt_none[1 << QC__EGT_BITS] = {0};

static void qc__egt_build(uint16_t *t, const qc__cpar *P) {
    uint64_t e, x, h, len, m;
    memset(t, 0, QC_EG_TABLE_BYTES);
    /* each code of at most QC__EGT_BITS bits (its first 1 at e < E: bit e, then e + k bits x),
       at every index that starts with it */
    for (e = 0; e < (uint64_t)P->E && (len = 2 * e + 1 + (uint64_t)P->k) <= QC__EGT_BITS; e++)
        for (x = 0; x < ((uint64_t)1 << (e + (uint64_t)P->k)); x++) {
            h = (((uint64_t)1) << e) | (x << (e + 1));
            m = qc__eg_value(h, e, P);
            if (m > P->umax) continue;
            for (; h < ((uint64_t)1 << QC__EGT_BITS); h += (uint64_t)1 << len)
                t[h] = (uint16_t)(((qc__unzz(m) + 2048) << 4) | len);
        }
}

static void qc__egt_free(qc_decoder *d) {
    int i;
    for (i = 0; i < d->negt; i++) qc__dfree(d, d->egt[i], QC_EG_TABLE_BYTES);
    d->negt = 0;
    d->egt_next = 0;
    d->egt_used = 0;
}

/* the table of P's (k, b) for the current packet (d->egt_used: the tables it uses so far). Its
   entries depend on k, on E only up to (W + 1) / 2 (a code of at most W = QC__EGT_BITS bits
   has its first 1 at e <= (W - 1) / 2) and on b only up to W (its value is below 2**W): those
   the key, so that widths share tables. */
static const uint16_t *qc__egt_for(qc_decoder *d, const qc__cpar *P) {
    const int ecap = (QC__EGT_BITS + 1) / 2, bcap = QC__EGT_BITS;
    uint16_t key = (uint16_t)(P->k | (P->E < ecap ? P->E : ecap) << 5 | (P->b < bcap ? P->b : bcap) << 8);
    int i, j;
    if (P->k + 1 > QC__EGT_BITS || P->b > 32) return qc__egt_none;
    for (i = 0; i < d->negt; i++)
        if (d->egt_key[i] == key) {
            d->egt_used |= (uint32_t)1 << i;
            return d->egt[i];
        }
    if (d->negt < QC_EG_TABLES) {
        uint16_t *t = (uint16_t *)qc__dalloc(d, QC_EG_TABLE_BYTES);
        if (t == NULL) return qc__egt_none;
        i = d->negt++;
        d->egt[i] = t;
    } else {
        for (j = 0; j < QC_EG_TABLES; j++) {
            i = (d->egt_next + j) % QC_EG_TABLES;
            if (!((d->egt_used >> i) & 1)) break;
        }
        if (j == QC_EG_TABLES) return qc__egt_none;
        d->egt_next = (i + 1) % QC_EG_TABLES;
    }
    d->egt_key[i] = key;
    d->egt_used |= (uint32_t)1 << i;
    qc__egt_build(d->egt[i], P);
    return d->egt[i];
}

enum { QC__OP_GEN = 0, QC__OP_PLAIN = 1, QC__OP_SMAG = 2, QC__OP_PLAIN3 = 3, QC__OP_SMAG3 = 4 };

typedef struct qc__dfield { /* one field's shape in the fast path */
    int shape;              /* QC__FS_*; QC__FS_NONE: the slot-by-slot loop */
    int op;                 /* ORD, NZ: its components' loop (QC__OP_*, from plain and smag; the
                               ...3 ones: three components, unrolled) */
    const qc__dcomp *d0, *d1;   /* its components (in the packet's qc__dcomp table) */
    int slot;               /* NZ: the flag; QUAT: the smallest-three slot */
    int span;               /* NZ: the slots the flag governs */
    int cb, bits;           /* QUAT: bits per kept component, the slot's width */
    int plain;              /* ORD, NZ: every component unsigned, not sign-magnitude, every
                               code of its width valid (Bounded endpoints, UInt, ...) */
    int smag;               /* ORD, NZ, not plain: every component unsigned (maybe
                               sign-magnitude), every code of its width valid but vbad (a
                               PowerCurve's negative zero) */
    uint64_t qtop;          /* QUAT: the mode's top component code */
    uint64_t maxcode;       /* QUAT: the slot's largest code */
    const uint32_t *qsq;    /* QUAT: qc_slot.qsq */
} qc__dfield;

/* The reference at the top of the word (qc__ref's, for an extrapolated component; numc 0:
   the baseline's value); den1: the ratio is whole, a constant in each copy of qc__fast_run */
QC__HOT uint64_t qc__fast_ref(uint64_t xb, uint64_t xp, const qc__dcomp *d, int64_t num, int64_t den, int den1) {
    if (den1) return xb + (xb - xp) * d->numc;
    if (!d->numc) return xb;
    return xb + ((uint64_t)qc__round_div((int64_t)qc__asr(xb - xp, d->sh) * num, den) << d->sh);
}

/* a component's code, zig-zag decoded, into z (its bits refilled first when d->fill): through
   its look-up table, else the long way; or give up the entity */
#define QC__FAST_EG(d, z) QC__FAST_EGF(d, z, 1)
/* (fl 0: the caller knows that d->fill is 0) */
#define QC__FAST_EGF(d, z, fl) do {                                             \
        unsigned en_, l_;                                                       \
        if ((fl) && (d)->fill) qc__bits_fill(r);                                \
        en_ = (d)->egt[r->w & ((1u << QC__EGT_BITS) - 1)];                      \
        l_ = en_ & 15;                                                          \
        if (QC__LIKELY(l_ != 0)) {                                              \
            r->w >>= l_;                                                        \
            r->n -= l_;                                                         \
            (z) = (uint64_t)(en_ >> 4) - 2048;                                  \
        } else {                                                                \
            uint64_t u_;                                                        \
            if (QC__UNLIKELY(qc__bits_eg(r, &(d)->P, &u_, 0))) return 0;       \
            (z) = qc__unzz(u_);                                                 \
        }                                                                       \
    } while (0)

/* sign-magnitude to the linear order and back (the same map) at the top of the word (smt 0:
   no change); qc__fast_smtb: the same for a code in the low b bits */
QC__HOT uint64_t qc__fast_smt(uint64_t x, uint64_t smt) { return x ^ (qc__sign_mask(x) & smt); }
QC__HOT uint64_t qc__fast_smtb(uint64_t x, const qc__dcomp *d) { return x ^ ((0 - (x >> d->sb)) & d->smtb); }

/* One changed entity's fields (fr: its changed-field flags) from r's bits: 1 read (r after
   them), or 0 when it is not the fast path's case (r then anywhere). pr: the extrapolation
   row, or the baseline row when there is none (a reference extrapolated from the baseline to
   itself is the baseline's). Each field refills r first, then its components where
   qc__fast_tables says (d->fill). */
QC__HOT int qc__fast_entity(qc__bits *r, const uint8_t *fr, const qc__dfield *fd, const qc__dfield *fend,
                            const uint64_t *br, const uint64_t *pr, uint64_t *orw,
                            int64_t num, int64_t den, int den1) {
    int any = 0;
    for (; fd < fend; fd++, fr++) {
        uint64_t dacc = 0, u, z, xb, xp, v;
        const qc__dcomp *d, *dend;
        if (!*fr) continue;
        any = 1;
        d = fd->d0;
        dend = fd->d1;
        qc__bits_fill(r);
        if (fd->shape == QC__FS_QUAT) {
            int s = fd->slot, qs = 3 * fd->cb, st;
            uint64_t bw = br[s], pw = pr[s], code, m;
            pw = (pw >> qs) == (bw >> qs) ? pw : bw;    /* no extrapolation across a change of
                                                           the largest component */
            code = (bw >> qs) << qs;
            {   /* (the first kept component's code through its table, else the long way, where
                   an escape may say "a new largest component") */
                unsigned en = d->egt[r->w & ((1u << QC__EGT_BITS) - 1)];
                if (QC__LIKELY(en & 15)) {
                    r->w >>= en & 15;
                    r->n -= en & 15;
                    z = (uint64_t)(en >> 4) - 2048;
                    st = 0;
                } else {
                    z = 0;
                    st = qc__bits_eg(r, &d->P, &u, 1);
                    if (!st) z = qc__unzz(u);
                }
            }
            if (QC__UNLIKELY(st)) {
                if (st < 0) return 0;
                /* a new largest component: the absolute code (at most 38 bits), or the new
                   index and the differences from the baseline's values remapped to it */
                qc__bits_fill(r);
                if (qc__bits_take(r, 1) == 0) {
                    code = qc__bits_take(r, fd->bits);
                } else {
                    int j = (int)qc__bits_take(r, 2), t;
                    if ((uint64_t)j == (bw >> qs)) return 0;
                    code = (uint64_t)j << qs;
                    for (t = 0; t < 3; t++, d++) {
                        qc__bits_fill(r);
                        if (qc__bits_eg(r, &d->P, &u, 0)) return 0;
                        code |= ((qc__remap_ref(bw, j, t, fd->cb, fd->qtop) + qc__unzz(u)) & d->P.umax) << d->shift;
                    }
                }
            } else {
                /* the three kept components (unrolled), the first's code read above */
#define QC__FAST_QC(dd) do {                                                                             \
                    const qc__dcomp *d_ = (dd);                                                           \
                    if (den1) {                                                                           \
                        /* (the low b bits of sums and products depend on the operands' low b bits     \
                           only: the top-of-word arithmetic, unshifted, then masked) */                   \
                        xb = bw >> d_->shift;                                                             \
                        xb += (xb - (pw >> d_->shift)) * d_->numc + z;                                    \
                        code |= (xb & d_->P.umax) << d_->shift;                                           \
                    } else {                                                                              \
                        xb = qc__fast_ref((bw >> d_->shift) << d_->sh, (pw >> d_->shift) << d_->sh, d_,   \
                                          num, den, den1) + (z << d_->sh);                                \
                        code |= (xb >> d_->sh) << d_->shift;                                              \
                    }                                                                                     \
                } while (0)
                QC__FAST_QC(d);
                QC__FAST_EG(d + 1, z);
                QC__FAST_QC(d + 1);
                QC__FAST_EG(d + 2, z);
                QC__FAST_QC(d + 2);
#undef QC__FAST_QC
            }
            m = (((uint64_t)1) << fd->cb) - 1;
            if (!((code <= fd->maxcode) &
                  qc__quat_surely_valid(fd->qsq, (code >> (2 * fd->cb)) & m, (code >> fd->cb) & m, code & m)))
                return 0;
            if (code == bw) return 0;
            orw[s] = code;
            continue;
        }
        if (fd->shape == QC__FS_NZ) {
            int s = fd->slot, t;
            v = 1;
            if (br[s] != 0) v = qc__bits_take(r, 1);
            orw[s] = v;
            dacc = v ^ br[s];
            if (v == 0) {
                for (t = s + 1; t <= s + fd->span; t++) {
                    orw[t] = 0;
                    dacc |= br[t];
                }
                if (dacc == 0) return 0;
                continue;
            }
        } else if (fd->shape != QC__FS_ORD) {
            return 0;
        }
        /* plain: unsigned, linear, every code of the width valid: a masked sum, no test */
#define QC__FAST_PLAIN(dd, fl, sl) do {                                                                  \
            const qc__dcomp *d_ = (dd);                                                                   \
            int s = (sl);                                                                                 \
            QC__FAST_EGF(d_, z, fl);                                                                      \
            if (den1) v = (br[s] + (br[s] - pr[s]) * d_->numc + z) & d_->P.umax;                          \
            else v = (qc__fast_ref(br[s] << d_->sh, pr[s] << d_->sh, d_, num, den, den1) +                \
                      (z << d_->sh)) >> d_->sh;                                                           \
            orw[s] = v;                                                                                   \
            dacc |= v ^ br[s];                                                                            \
        } while (0)
        /* smag: unsigned, maybe sign-magnitude (a PowerCurve), every code valid but vbad */
#define QC__FAST_SMAG(dd, fl, sl) do {                                                                   \
            const qc__dcomp *d_ = (dd);                                                                   \
            int s = (sl);                                                                                 \
            QC__FAST_EGF(d_, z, fl);                                                                      \
            if (den1) {                                                                                   \
                /* (in the low b bits, as the plain loop's; the map's top bit is the code's) */           \
                xb = qc__fast_smtb(br[s], d_);                                                            \
                v = qc__fast_smtb((xb + (xb - qc__fast_smtb(pr[s], d_)) * d_->numc + z) &                 \
                                  d_->P.umax, d_);                                                        \
            } else {                                                                                      \
                xb = qc__fast_smt(br[s] << d_->sh, d_->smt);                                              \
                xp = qc__fast_smt(pr[s] << d_->sh, d_->smt);                                              \
                v = qc__fast_smt(qc__fast_ref(xb, xp, d_, num, den, den1) + (z << d_->sh),                \
                                 d_->smt) >> d_->sh;                                                      \
            }                                                                                             \
            if (QC__UNLIKELY(v == d_->vbad)) return 0;                                                    \
            orw[s] = v;                                                                                   \
            dacc |= v ^ br[s];                                                                            \
        } while (0)
        switch (fd->op) {
        case QC__OP_PLAIN3: {   /* (a Vector of 3 unrolled, in three slots in a row) */
            const int s0 = d->slot;
            QC__FAST_PLAIN(d, 0, s0);    /* (the first never refilled: at most 1 + 17 + 1 + 32 bits) */
            QC__FAST_PLAIN(d + 1, 1, s0 + 1);
            QC__FAST_PLAIN(d + 2, 1, s0 + 2);
            break;
        }
        case QC__OP_SMAG3: {
            const int s0 = d->slot;
            QC__FAST_SMAG(d, 0, s0);
            QC__FAST_SMAG(d + 1, 1, s0 + 1);
            QC__FAST_SMAG(d + 2, 1, s0 + 2);
            break;
        }
        case QC__OP_PLAIN:
            for (; d < dend; d++) QC__FAST_PLAIN(d, 1, d->slot);
            break;
        case QC__OP_SMAG:
            for (; d < dend; d++) QC__FAST_SMAG(d, 1, d->slot);
            break;
        default:
            for (; d < dend; d++) {
                int s = d->slot;
                uint64_t bad;
                QC__FAST_EG(d, z);
                xb = qc__fast_smt(br[s] << d->sh, d->smt);   /* sign-magnitude to ordered */
                xp = qc__fast_smt(pr[s] << d->sh, d->smt);
                xb = qc__fast_smt(qc__fast_ref(xb, xp, d, num, den, den1) + (z << d->sh), d->smt);
                v = (uint64_t)qc__asr(xb, d->sh) & d->vmask;
                bad = (uint64_t)((v - d->vlo) > d->vspan) | (uint64_t)(v == d->vbad);
                if (QC__UNLIKELY(bad)) return 0;
                orw[s] = v;
                dacc |= v ^ br[s];
            }
        }
#undef QC__FAST_PLAIN
#undef QC__FAST_SMAG
        if (dacc == 0) return 0;
    }
    return any;
}

typedef struct qc__fastrun {    /* what qc__fast_run reads, for one packet */
    const uint8_t *buf;         /* the packet, or the zero-padded copy of its tail */
    size_t lastfast;            /* an entity starting before this byte of buf can be read */
    size_t nbits;               /* the packet's end in buf's bits: an entity read past it is not taken */
    const uint8_t *fch;         /* the changed fields, F a changed entity */
    int F, S;
    const qc__dfield *FD;
    const int *gen;             /* the fields of no fast shape changed in the packet */
    int ngen;
    const uint64_t *brow, *prow;    /* prow NULL: no extrapolation */
    uint64_t *orow;
    const size_t *chg, *kept_base, *kept_out, *kept_pred;  /* kept_base, kept_out NULL: the identity */
    int64_t num, den;
} qc__fastrun;

QC__HOT size_t qc__fast_run_(const qc__fastrun *a, size_t e, size_t n, size_t *ppos, int den1) {
    /* (a's fields in locals: the rows' stores could otherwise alias them) */
    const uint8_t *const buf = a->buf, *const fch = a->fch;
    const size_t S = (size_t)a->S, F = (size_t)a->F, lastfast = a->lastfast, nbits = a->nbits;
    const size_t *const chg = a->chg, *const kept_base = a->kept_base, *const kept_out = a->kept_out,
                 *const kept_pred = a->kept_pred;
    const uint64_t *const brow = a->brow, *const prow = a->prow;
    uint64_t *const orow = a->orow;
    const qc__dfield *const FD = a->FD, *const fend = a->FD + a->F;
    const int *const gen = a->gen;
    const int ngen = a->ngen;
    const int64_t num = a->num, den = a->den;
    size_t pos = *ppos, t;
    qc__bits r;
    int g;
    qc__bits_at(&r, buf, pos);
    for (; e < n; e++) {
        size_t c = chg[e], kb = kept_base ? kept_base[c] : c;
        const uint64_t *br = brow + kb * S, *pr = br;
        const uint8_t *fr = fch + e * F;
        if ((pos >> 3) >= lastfast) break;
        if (prow != NULL && kept_pred[c] != (size_t)-1) pr = prow + kept_pred[c] * S;
        for (g = 0; g < ngen; g++)
            if (fr[gen[g]]) break;
        if (g < ngen) break;
        if (!qc__fast_entity(&r, fr, FD, fend, br, pr, orow + (kept_out ? kept_out[c] : c) * S, num, den, den1)) break;
        t = qc__bits_pos(&r, buf);
        if (t > nbits) break;
        pos = t;
    }
    *ppos = pos;
    return e;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(QUANTCODEC_NO_BMI2)
#define QC__FAST_BMI2 1
/* qc__fast_run with BMI1 / BMI2 (shifts by a register without the cl dance, tzcnt): its reads
   are mostly variable shifts. Chosen at run time when the CPU has them (the portable copy is
   the other; -DQUANTCODEC_NO_BMI2 leaves it alone). */
__attribute__((target("bmi,bmi2"))) static size_t qc__fast_run_bmi2(const qc__fastrun *a, size_t e, size_t n, size_t *ppos) {
    if (a->den == 1) return qc__fast_run_(a, e, n, ppos, 1);
    return qc__fast_run_(a, e, n, ppos, 0);
}
#endif

/* The changed entities e, e + 1, ... (< n) that qc__fast_entity decodes, one after the other
   from bit *ppos: returns the first one it does not (n if none), *ppos at its start. */
static size_t qc__fast_run(const qc__fastrun *a, size_t e, size_t n, size_t *ppos) {
#ifdef QC__FAST_BMI2
    if (__builtin_cpu_supports("bmi2")) return qc__fast_run_bmi2(a, e, n, ppos);
#endif
    if (a->den == 1) return qc__fast_run_(a, e, n, ppos, 1);
    return qc__fast_run_(a, e, n, ppos, 0);
}

/* whether two rows of S codes differ (0 or 1), without a branch a code: two codes a compare
   with SSE2 where the compiler has it; copy not NULL: row a copied there on the way (the one
   pass over the baseline's rows that the new snapshot's rows need) */
QC__HOT int qc__rows_differ(const uint64_t *a, const uint64_t *b, int S, uint64_t *copy) {
    uint64_t x = 0;
    int s = 0;
#if defined(__SSE2__) || defined(_M_X64)
    __m128i acc = _mm_setzero_si128();
    for (; s + 2 <= S; s += 2) {
        __m128i va = _mm_loadu_si128((const __m128i *)(const void *)(a + s));
        if (copy != NULL) _mm_storeu_si128((__m128i *)(void *)(copy + s), va);
        acc = _mm_or_si128(acc, _mm_xor_si128(va, _mm_loadu_si128((const __m128i *)(const void *)(b + s))));
    }
    x = (uint64_t)(_mm_movemask_epi8(_mm_cmpeq_epi8(acc, _mm_setzero_si128())) != 0xFFFF);
#endif
    for (; s < S; s++) {
        if (copy != NULL) copy[s] = a[s];
        x |= a[s] ^ b[s];
    }
    return x != 0;
}

/* The common case's contexts (section 7.3): row e of a (the baseline) against row e of b (pred)
   for e < kept, kept_pred the identity, each e into cls1 (the rows differ) or cls0; copy not
   NULL: a's rows copied there on the way. Returns how many went to cls1. */
QC__HOT size_t qc__ctx_rows_(const uint64_t *a, const uint64_t *b, uint64_t *copy, size_t kept, size_t S,
                             size_t *kept_pred, size_t *cls1, size_t *cls0) {
    size_t e, n1 = 0, n0 = 0;
    for (e = 0; e < kept; e++) {
        int ctx = qc__rows_differ(a + e * S, b + e * S, (int)S, copy != NULL ? copy + e * S : NULL);
        kept_pred[e] = e;
        cls1[n1] = e;
        cls0[n0] = e;
        n1 += (size_t)ctx;
        n0 += (size_t)!ctx;
    }
    return n1;
}

#ifdef QC__FAST_BMI2
/* the same with AVX2, four codes a compare (chosen at run time, as the fast path's BMI2 copy);
   cp: copy is not NULL, a constant in each of its two loops */
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) size_t
qc__ctx_rows_avx2_(const uint64_t *a, const uint64_t *b, uint64_t *copy, size_t kept, size_t S, size_t *kept_pred,
                   size_t *cls1, size_t *cls0, int cp) {
    size_t e, n1 = 0, n0 = 0, s;
    if (S == 8) {
        /* rows of eight codes (a cache line each): two compares a row, no inner loop */
        for (e = 0; e < kept; e++, a += 8, b += 8) {
            __m256i va = _mm256_loadu_si256((const __m256i *)(const void *)a);
            __m256i vb = _mm256_loadu_si256((const __m256i *)(const void *)(a + 4));
            __m256i x8;
            int ctx;
            if (cp) {
                /* (copy moves only here: it is NULL without cp, and NULL + 0 is undefined in C) */
                _mm256_storeu_si256((__m256i *)(void *)copy, va);
                _mm256_storeu_si256((__m256i *)(void *)(copy + 4), vb);
                copy += 8;
            }
            x8 = _mm256_or_si256(_mm256_xor_si256(va, _mm256_loadu_si256((const __m256i *)(const void *)b)),
                                 _mm256_xor_si256(vb, _mm256_loadu_si256((const __m256i *)(const void *)(b + 4))));
            ctx = !_mm256_testz_si256(x8, x8);
            kept_pred[e] = e;
            cls1[n1] = e;
            cls0[n0] = e;
            n1 += (size_t)ctx;
            n0 += (size_t)!ctx;
        }
        return n1;
    }
    for (e = 0; e < kept; e++, a += S, b += S) {
        __m256i acc = _mm256_setzero_si256();
        uint64_t x = 0;
        int ctx;
        for (s = 0; s + 4 <= S; s += 4) {
            __m256i va = _mm256_loadu_si256((const __m256i *)(const void *)(a + s));
            if (cp) _mm256_storeu_si256((__m256i *)(void *)(copy + s), va);
            acc = _mm256_or_si256(acc, _mm256_xor_si256(va, _mm256_loadu_si256((const __m256i *)(const void *)(b + s))));
        }
        for (; s < S; s++) {
            if (cp) copy[s] = a[s];
            x |= a[s] ^ b[s];
        }
        ctx = !_mm256_testz_si256(acc, acc) || x != 0;
        kept_pred[e] = e;
        cls1[n1] = e;
        cls0[n0] = e;
        n1 += (size_t)ctx;
        n0 += (size_t)!ctx;
        if (cp) copy += S;      /* (as above: copy is NULL without cp) */
    }
    return n1;
}
__attribute__((target("avx2"))) static size_t qc__ctx_rows_avx2(const uint64_t *a, const uint64_t *b, uint64_t *copy,
                                                               size_t kept, size_t S, size_t *kept_pred,
                                                               size_t *cls1, size_t *cls0) {
    if (copy != NULL) return qc__ctx_rows_avx2_(a, b, copy, kept, S, kept_pred, cls1, cls0, 1);
    return qc__ctx_rows_avx2_(a, b, copy, kept, S, kept_pred, cls1, cls0, 0);
}
#endif

static size_t qc__ctx_rows(const uint64_t *a, const uint64_t *b, uint64_t *copy, size_t kept, size_t S,
                           size_t *kept_pred, size_t *cls1, size_t *cls0) {
#ifdef QC__FAST_BMI2
    if (__builtin_cpu_supports("avx2")) return qc__ctx_rows_avx2(a, b, copy, kept, S, kept_pred, cls1, cls0);
#endif
    return qc__ctx_rows_(a, b, copy, kept, S, kept_pred, cls1, cls0);
}

/* The fast path's tables for one packet: each component's extrapolation (numc: the ratio's
   numerator when the packet extrapolates it) and validity, each field's shape. The fields of no
   fast shape changed in this packet go to gen (their entities take the slot loop): how many. */
static int qc__fast_tables(const qc_schema *sc, const uint8_t *fmode, int pdist, int64_t num, qc__dcomp *dc,
                           qc__dfield *dfd, int *gen) {
    const int F = sc->nfields, C = sc->ncomps;
    int ngen = 0, c, i;
    for (c = 0; c < C; c++) {
        const qc_comp *cp = &sc->comps[c];
        const qc_slot *sl = &sc->slots[cp->slot];
        qc__dcomp *dd = &dc[c];
        dd->numc = pdist && dd->P.usep ? (uint64_t)num : 0;
        dd->sh = 64 - cp->b;
        dd->smt = cp->smt << dd->sh;
        dd->smtb = cp->smt;
        dd->sb = cp->b - 1;
        dd->shift = cp->shift;
        dd->slot = cp->slot;
        dd->vmask = sl->sign ? ~(uint64_t)0 : cp->mask;
        dd->vbad = ((uint64_t)1) << 62;
        if (sl->sign) {
            dd->vlo = (uint64_t)sl->codec->smin;
            dd->vspan = (uint64_t)sl->codec->smax - (uint64_t)sl->codec->smin;
        } else {
            dd->vlo = 0;
            dd->vspan = sl->codec->maxcode;
            if (sl->codec->kind == QC_POWERCURVE) dd->vbad = ((uint64_t)1) << (sl->bits - 1);
        }
    }
    for (i = 0; i < F; i++) {
        const qc_field *fd = &sc->fields[i];
        const qc_slot *s0 = &sc->slots[fd->first_slot];
        qc__dfield *df = &dfd[i];
        df->d0 = dc + fd->first_comp;
        df->d1 = dc + fd->first_comp + fd->ncomps;
        df->shape = QC__FS_NONE;
        if (fd->nslots == 1 && s0->role == QC_ROLE_QUAT && s0->qsq != NULL) {
            df->shape = QC__FS_QUAT;
            df->slot = fd->first_slot;
            df->cb = s0->codec->cbits;
            df->bits = s0->bits;
            df->maxcode = s0->codec->maxcode;
            df->qtop = qc__mask(df->cb) - (s0->codec->mode == 2 ? 1 : 0);
            df->qsq = s0->qsq;
        } else if (fd->ncomps > 0 && (fd->implied_flag ? s0->role == QC_ROLE_FLAG && s0->span == fd->nslots - 1 : 1)) {
            int s;
            df->shape = fd->implied_flag ? QC__FS_NZ : QC__FS_ORD;
            df->slot = fd->first_slot;
            df->span = fd->implied_flag ? s0->span : 0;
            df->plain = 1;
            df->smag = 1;
            for (s = fd->first_slot + (fd->implied_flag ? 1 : 0); s < fd->first_slot + fd->nslots; s++) {
                const qc_slot *sl = &sc->slots[s];
                const qc_comp *cp;
                if (sl->role != QC_ROLE_ORD) { df->shape = QC__FS_NONE; break; }
                cp = &sc->comps[sl->comp];
                if (cp->b > 32 || cp->shift || (sl->codec->kind == QC_POWERCURVE && sl->codec->maxcode != qc__mask(sl->bits))) {
                    df->shape = QC__FS_NONE;
                    break;
                }
                if (cp->smt || sl->sign || sl->vclass != 0) df->plain = 0;
                if (sl->sign || (sl->vclass != 0 && sl->vclass != 2)) df->smag = 0;
            }
        }
        /* the refills: each field's bits refilled at its start (at least 56 counted), then
           before a component whose longest code (an escape, E + 1 + b bits) may not fit in
           what the field's codes before it leave */
        {
            int acc = df->shape == QC__FS_NZ ? 1 : 0, c2;
            for (c2 = fd->first_comp; c2 < fd->first_comp + fd->ncomps; c2++) {
                qc__dcomp *dd = &dc[c2];
                int len = dd->P.E + 1 + dd->P.b;
                dd->fill = acc + len > 56;
                acc = dd->fill ? len : acc + len;
            }
            df->op = QC__OP_GEN;
            if (df->shape == QC__FS_ORD || df->shape == QC__FS_NZ) {
                df->op = df->plain ? QC__OP_PLAIN : df->smag ? QC__OP_SMAG : QC__OP_GEN;
                if (df->op != QC__OP_GEN && fd->ncomps == 3 && dc[fd->first_comp + 1].slot == dc[fd->first_comp].slot + 1 &&
                    dc[fd->first_comp + 2].slot == dc[fd->first_comp].slot + 2)
                    df->op += QC__OP_PLAIN3 - QC__OP_PLAIN;
            }
        }
        if (fmode[i] && df->shape == QC__FS_NONE) gen[ngen++] = i;
    }
    return ngen;
}

/* the bytes an entity of the fast path may load from its start (QC__FAST_MAXBITS a component
   and a slot, and 16 bytes of loads); the padded copy of a packet's tail takes twice that */
static size_t qc__fast_tail(const qc_schema *sc) {
    return ((size_t)QC__FAST_MAXBITS * (size_t)(sc->ncomps + sc->nslots) + 7) / 8 + 16;
}

/* the packet decoder's per-packet tables and tail copy in its scratch, in bytes */
static size_t qc__tables_bytes(const qc_schema *sc) {
    return ((size_t)sc->ncomps + 1) * sizeof(qc__dcomp) + ((size_t)sc->nfields + 1) * (sizeof(qc__dfield) + sizeof(int)) +
           (2 * qc__fast_tail(sc) + 7) / 8 * 8;
}

/* ---- one packet as a pipeline of its steps (wire-format sections 6-7) -------------------------
   qc__decode_packet runs the steps in the order the packet is written, each over the packet's
   context (qc__pk): the head, the removed entities, the count of new ones (and the limits), the
   memory, the new entities' ids and records, the merge by id, which entities changed, which of
   their fields, the fields' parameters, the changed entities (the fast path's runs, the
   slot-by-slot loop for the others) and the end. A step returns 0, or the status of the refusal
   with res's message made; the new snapshot, once made, is freed by qc__decode_packet. */

typedef struct qc__pk {         /* one packet being decoded: what its steps share */
    qc_decoder *d;
    const qc_schema *sc;
    qc_result *res;
    const uint8_t *buf;         /* the packet, nbytes long */
    size_t nbytes;
    qc__br r;                   /* its bits */
    int S, F, C;                /* the schema's slots, fields, components */
    int seq, bdist, pdist;      /* the head (section 6); bdist, pdist 0 when absent */
    const qc_snapshot *base, *pred;
    size_t m, nrem, nnew, kept, nout, nchg;  /* the baseline's entities, removed, new, kept, out, changed */
    size_t words, tb;           /* the scratch's size_t's (the entity lists); the fast path's tail bytes */
    /* the scratch's parts (qc__pk_layout) */
    size_t *removed, *kept_base, *kept_out, *kept_pred, *cls1, *cls0, *set1, *set0, *chg;
    uint64_t *nid, *nrow;       /* the new entities' ids and rows (in the snapshot itself when none is kept) */
    uint8_t *fch, *fmode, *tail;    /* the changed fields (F a changed entity), each field's use, the tail copy */
    qc__dcomp *dc;
    qc__dfield *dfd;
    int *gen;
    int64_t num, den;           /* the extrapolation's ratio bdist / pdist, reduced */
    int same;                   /* the baseline's entities, all kept, nothing new, and pred holds
                                   the same: row e of each is row e of the new snapshot, whose rows
                                   qc__pk_read_changed copies as it compares base and pred */
    qc_snapshot *snap;          /* the new snapshot */
} qc__pk;

static int qc__pk_bad(qc__pk *k, const char *what) { return qc__bad(k->res, what, k->r.pos); }

static int qc__pk_nomem(qc__pk *k) {
    snprintf(k->res->message, sizeof k->res->message, "snapshot packet %d: out of memory (allocator or alloc_limit %lu)",
             k->seq, (unsigned long)k->d->alloc_limit);
    return QC_E_MEMORY;
}

/* a code that is not valid for its slot: the message naming the entity and the slot */
static int qc__pk_invalid(qc__pk *k, uint64_t id, int s, uint64_t v, size_t pos) {
    char nm[160];
    snprintf(k->res->message, sizeof k->res->message, "snapshot packet: entity %llu: %s: code %llu is not valid (at bit %lu)",
             (unsigned long long)id, qc__slot_name(k->sc, s, nm, sizeof nm), (unsigned long long)v, (unsigned long)pos);
    return QC_E_MALFORMED;
}

/* the scratch's parts: removed (m+1), kept_base, kept_out, kept_pred, cls1, cls0, set1, set0,
   chg (kept+1 each) as size_t; new ids (nnew) and rows (nnew * S) as uint64; the tables
   (qc__dcomp a component, qc__dfield and an int a field); the tail's padded copy; then bytes
   (fmode, F + 1, then fch). Made again when the scratch grows. */
static void qc__pk_layout(qc__pk *k) {
    const size_t m = k->m, kept = k->kept, nnew = k->nnew;
    k->removed = (size_t *)k->d->scratch;
    k->kept_base = k->removed + (m + 1);
    k->kept_out = k->kept_base + (kept + 1);
    k->kept_pred = k->kept_out + (kept + 1);
    k->cls1 = k->kept_pred + (kept + 1);
    k->cls0 = k->cls1 + (kept + 1);
    k->set1 = k->cls0 + (kept + 1);
    k->set0 = k->set1 + (kept + 1);
    k->chg = k->set0 + (kept + 1);
    k->nid = (uint64_t *)(k->removed + k->words);
    k->nrow = k->nid + nnew;
    k->dc = (qc__dcomp *)(k->nrow + nnew * (size_t)k->S);
    k->dfd = (qc__dfield *)(k->dc + k->C + 1);
    k->gen = (int *)(k->dfd + k->F + 1);
    k->tail = (uint8_t *)(k->gen + k->F + 1);
    k->fmode = k->tail + (2 * k->tb + 7) / 8 * 8;
}

/* section 6: seq, the distances, then the baseline and pred looked up */
static int qc__pk_read_head(qc__pk *k) {
    uint64_t v;
    if (qc__get(&k->r, 16, &v) < 0) return qc__pk_bad(k, "truncated header");
    k->seq = (int)v;
    if (qc__get(&k->r, 1, &v) < 0) return qc__pk_bad(k, "truncated header");
    if (v) {
        if (qc__eg(&k->r, 2, 16, &v) < 0) return qc__pk_bad(k, "bad baseline distance");
        if (v >= 0x7FFF) return qc__pk_bad(k, "sequence distance outside 1..32767");
        k->bdist = (int)v + 1;
        if (qc__get(&k->r, 1, &v) < 0) return qc__pk_bad(k, "truncated header");
        if (v) {
            if (qc__eg(&k->r, 2, 16, &v) < 0) return qc__pk_bad(k, "bad pred distance");
            if (v + 1 + (uint64_t)k->bdist > 0x7FFF) return qc__pk_bad(k, "sequence distance outside 1..32767");
            k->pdist = (int)v + 1;
        }
    }
    if (k->bdist) {
        int bseq = (k->seq - k->bdist) & QC__M;
        k->base = qc__held_ref(k->d, bseq, k->seq, 1, k->res);
        if (k->base == NULL) return QC_E_BASELINE;
        k->m = k->base->n;
        if (k->pdist) {
            k->pred = qc__held_ref(k->d, (bseq - k->pdist) & QC__M, k->seq, 0, k->res);
            if (k->pred == NULL) return QC_E_BASELINE;
        }
    }
    return 0;
}

/* section 7.1: the set of removed entities, into the scratch */
static int qc__pk_read_removed(qc__pk *k) {
    k->words = k->m + 1;
    if (qc__scratch(k->d, k->words * sizeof(size_t)) == NULL) return qc__pk_nomem(k);
    k->removed = (size_t *)k->d->scratch;
    if (k->bdist && k->m && qc__set(&k->r, k->removed, &k->nrem, k->m) < 0)
        return qc__pk_bad(k, "bad set of removed entities");
    k->kept = k->m - k->nrem;
    return 0;
}

/* wire-format 19's H for packet `seq`: the cost of the held snapshots it leaves in section 10's
   window, all of them, but when seq is newer than latest (it moves the window) not those it
   pushes out ((seq - s) mod 65536 >= 2 * history - 1). (Counting those too, a client whose
   max_bytes holds exactly its window refused every packet once the window was full, for good:
   only a packet that decodes moves the window.) */
static uint64_t qc__kept_cost(const qc_decoder *d, int seq) {
    uint64_t total = 0;
    int i;
    if (!(d->latest < 0 || qc__newer(seq, d->latest))) return d->held_cost;
    for (i = 0; i < d->nheld; i++)
        if (((seq - d->held_seq[i]) & QC__M) < d->keep) total += qc_snapshot_cost(d->schema, d->held[i]->n);
    return total;
}

/* section 7.2: the count of new entities, and the limits it is checked against (section 19) */
static int qc__pk_read_count(qc__pk *k) {
    const qc_decoder *d = k->d;
    uint64_t v, per = 8 + 8 * (uint64_t)k->S, fixed = 256 + 256 * (uint64_t)d->max_datagram, H;
    if (qc__eg(&k->r, 0, 32, &v) < 0) return qc__pk_bad(k, "bad count of new entities");
    if (v > (uint64_t)qc__br_left(&k->r) || v > 0xFFFFFFFFull - (uint64_t)k->kept)
        return qc__pk_bad(k, "count of new entities larger than the packet can hold");
    k->nnew = (size_t)v;
    k->nout = k->kept + k->nnew;
    /* wire-format 19, check 2: what stays held, the new snapshot and reassembly's bound */
    H = qc__kept_cost(d, k->seq);
    if (H > d->max_bytes || fixed > d->max_bytes - H || (uint64_t)k->nout > (d->max_bytes - H - fixed) / per) {
        snprintf(k->res->message, sizeof k->res->message, "snapshot packet %d: a snapshot of %lu entities would make the client "
                 "hold %llu bytes (held %llu, this one %llu, reassembly %llu), above max_bytes %llu", k->seq, (unsigned long)k->nout,
                 (unsigned long long)(H + fixed + (uint64_t)k->nout * per), (unsigned long long)H,
                 (unsigned long long)(256 + (uint64_t)k->nout * per), (unsigned long long)(256 * (uint64_t)d->max_datagram),
                 (unsigned long long)d->max_bytes);
        return QC_E_LIMITS;
    }
    if (k->nout > d->max_entities) {
        snprintf(k->res->message, sizeof k->res->message, "snapshot packet %d: %lu entities, above the configured max_entities %lu",
                 k->seq, (unsigned long)k->nout, (unsigned long)d->max_entities);
        return QC_E_MEMORY;
    }
    return 0;
}

/* the scratch at its size for this packet (keeping the removed positions), laid out, and the
   new snapshot; with no kept entity the new ones are read straight into it */
static int qc__pk_memory(qc__pk *k) {
    qc_decoder *d = k->d;
    size_t need, nrem = k->nrem, *old = NULL;
    k->words = (k->m + 1) + 8 * (k->kept + 1);
    need = k->words * sizeof(size_t) + k->nnew * (1 + (size_t)k->S) * 8 + qc__tables_bytes(k->sc) + ((size_t)k->F + 1);
    if (need > d->scratch_size && nrem) {
        old = (size_t *)qc__dalloc(d, nrem * sizeof(size_t));
        if (old == NULL) return qc__pk_nomem(k);
        memcpy(old, d->scratch, nrem * sizeof(size_t));
    }
    if (qc__scratch(d, need) == NULL) {
        if (old) qc__dfree(d, old, nrem * sizeof(size_t));
        return qc__pk_nomem(k);
    }
    if (old != NULL) {
        memcpy(d->scratch, old, nrem * sizeof(size_t));
        qc__dfree(d, old, nrem * sizeof(size_t));
    }
    qc__pk_layout(k);
    k->snap = qc__snap_new(d, k->nout);
    if (k->snap == NULL) return qc__pk_nomem(k);
    k->snap->seq = (uint16_t)k->seq;
    if (k->kept == 0) {
        k->nid = k->snap->ids;
        k->nrow = k->snap->rows;
    }
    return 0;
}

/* section 7.2: the new entities' ids (the id parameter, the first id, then the gaps) */
static int qc__pk_read_new_ids(qc__pk *k) {
    uint64_t prev = 0, v, *nid = k->nid;
    qc__cpar idp;
    size_t e;
    if (qc__get(&k->r, 6, &v) < 0) return qc__pk_bad(k, "truncated id parameter");
    qc__cpar_set(&idp, (int)v, 64);
    for (e = 0; e < k->nnew; e++) {
        if (qc__eg_p(&k->r, &idp, &v, NULL) < 0) return qc__pk_bad(k, "bad id of a new entity");
        if (e) {
            if (v >= 0xFFFFFFFFFFFFFFFFull - prev) return qc__pk_bad(k, "new entity id beyond 2**64 - 1");
            v = prev + 1 + v;
        }
        nid[e] = v;
        prev = v;
    }
    return 0;
}

/* One record as qc__record_read reads it (the same results), bounds-free: from bit *pos of buf,
   whose bytes from there to the record's most bits and 16 more the caller has made sure can be
   loaded; the bits through a register (qc__bits), refilled a slot (a slot over 56 bits: its
   low 32 bits, then the rest). 0 read (*pos after it), 1 an invalid code (*slot, *code). */
static int qc__record_fast(const uint8_t *buf, size_t *pos, const qc_schema *s, uint64_t *row, int *slot, uint64_t *code) {
    const qc_slot *const slots = s->slots;
    const int ns = s->nslots;
    qc__bits r;
    uint64_t v;
    int i;
    qc__bits_at(&r, buf, *pos);
    for (i = 0; i < ns; i++) {
        const qc_slot *sl = &slots[i];
        const int bits = sl->bits;
        qc__bits_fill(&r);
        if (bits <= 56) {
            v = qc__bits_take(&r, bits);
        } else {
            v = qc__bits_take(&r, 32);
            qc__bits_fill(&r);
            v |= qc__bits_take(&r, bits - 32) << 32;
        }
        if (sl->role == QC_ROLE_FLAG) {
            row[i] = v;
            if (v == 0) {
                int t;
                for (t = i + 1; t <= i + sl->span; t++) row[t] = 0;
                i += sl->span;
            }
            continue;
        }
        if (sl->sign) v = qc__sext(v, bits);
        row[i] = v;
        if (sl->vclass != 0 && !qc__slot_ok(sl, v)) {
            *slot = i;
            *code = v;
            *pos = qc__bits_pos(&r, buf);
            return 1;
        }
    }
    *pos = qc__bits_pos(&r, buf);
    return 0;
}

/* section 7.2: the new entities' records (section 3), every code valid (far from the packet's
   end through qc__record_fast, else the checked reader) */
static int qc__pk_read_records(qc__pk *k) {
    size_t e, fast = ((size_t)k->sc->max_bits + 7) / 8 + 16;
    size_t lastfast = k->nbytes > fast ? k->nbytes - fast : 0;
    int s = 0, st;
    uint64_t v = 0;
    for (e = 0; e < k->nnew; e++) {
        if ((k->r.pos >> 3) < lastfast) st = qc__record_fast(k->buf, &k->r.pos, k->sc, k->nrow + e * (size_t)k->S, &s, &v);
        else st = qc__record_read(&k->r, k->sc, k->nrow + e * (size_t)k->S, &s, &v);
        if (st < 0) return qc__pk_bad(k, "truncated record of a new entity");
        if (st > 0) return qc__pk_invalid(k, k->nid[e], s, v, k->r.pos - (size_t)k->sc->slots[s].bits);
    }
    return 0;
}

/* the new snapshot's ids and rows: the kept baseline rows (runs of them copied at once) and the
   new rows merged by id; kept_base, kept_out: each kept entity's row in the baseline and in it */
static int qc__pk_merge(qc__pk *k) {
    const qc_snapshot *base = k->base;
    qc_snapshot *snap = k->snap;
    const size_t m = k->m, nrem = k->nrem, nnew = k->nnew, kept = k->kept, S = (size_t)k->S;
    const size_t *removed = k->removed;
    const uint64_t *nid = k->nid, *nrow = k->nrow;
    size_t *kept_base = k->kept_base, *kept_out = k->kept_out;
    size_t bi = 0, xi = 0, ni = 0, o = 0, e = 0, run_b = 0, run_o = 0, run_n = 0;
    if (kept == m && nnew == 0) {
        /* the baseline's entities, row for row (the rows later when the same in pred) */
        k->same = k->pdist && k->pred->n == m && (m == 0 || memcmp(k->pred->ids, base->ids, m * 8) == 0);
        if (m) {
            memcpy(snap->ids, base->ids, m * 8);
            if (S && !k->same) memcpy(snap->rows, base->rows, m * S * 8);
        }
        for (e = 0; e < m; e++) { kept_base[e] = e; kept_out[e] = e; }
        return 0;
    }
    if (!kept) return 0;
    while (bi < m || ni < nnew) {
        if (bi < m && xi < nrem && removed[xi] == bi) { xi++; bi++; goto flush; }
        if (bi < m && (ni >= nnew || base->ids[bi] < nid[ni])) {
            if (run_n == 0) { run_b = bi; run_o = o; }
            run_n++;
            kept_base[e] = bi;
            kept_out[e] = o;
            e++;
            bi++; o++;
            continue;
        }
        if (bi < m && base->ids[bi] == nid[ni]) return qc__pk_bad(k, "a new entity has the id of a kept one");
        snap->ids[o] = nid[ni];
        if (S) memcpy(snap->rows + o * S, nrow + ni * S, S * 8);
        ni++; o++;
flush:
        if (run_n) {
            memcpy(snap->ids + run_o, base->ids + run_b, run_n * 8);
            if (S) memcpy(snap->rows + run_o * S, base->rows + run_b * S, run_n * S * 8);
            run_n = 0;
        }
    }
    if (run_n) {
        memcpy(snap->ids + run_o, base->ids + run_b, run_n * 8);
        if (S) memcpy(snap->rows + run_o * S, base->rows + run_b * S, run_n * S * 8);
    }
    return 0;
}

/* section 7.3, which: the changed entities (chg, nchg), by context with pred (kept_pred: each
   kept entity's row in pred, or -1) */
static int qc__pk_read_changed(qc__pk *k) {
    const qc_snapshot *base = k->base, *pred = k->pred;
    const size_t m = k->m, kept = k->kept, S = (size_t)k->S;
    const size_t *kept_base = k->kept_base;
    size_t *kept_pred = k->kept_pred, *cls1 = k->cls1, *cls0 = k->cls0, *set1 = k->set1, *set0 = k->set0, *chg = k->chg;
    size_t n1 = 0, n0 = 0, m1 = 0, m0 = 0, a1 = 0, a0 = 0, pj = 0, e, nchg = 0;
    if (!k->pdist) {
        if (kept && qc__set(&k->r, chg, &k->nchg, kept) < 0) return qc__pk_bad(k, "bad set of changed entities");
        return 0;
    }
    if (k->same || (k->nrem == 0 && pred->n == m && (m == 0 || memcmp(pred->ids, base->ids, m * 8) == 0))) {
        /* the common case: the baseline's entities kept, the same in the extrapolation
           snapshot, row for row (and, k->same, in the new snapshot: copied here) */
        n1 = qc__ctx_rows(base->rows, pred->rows, k->same ? k->snap->rows : NULL, kept, S, kept_pred, cls1, cls0);
        n0 = kept - n1;
    } else for (e = 0; e < kept; e++) {
        size_t kb = kept_base[e];
        int ctx = 1;
        kept_pred[e] = (size_t)-1;
        while (pj < pred->n && pred->ids[pj] < base->ids[kb]) pj++;
        if (pj < pred->n && pred->ids[pj] == base->ids[kb]) {
            kept_pred[e] = pj;
            ctx = qc__rows_differ(base->rows + kb * S, pred->rows + pj * S, (int)S, NULL);
        }
        if (ctx) cls1[n1++] = e; else cls0[n0++] = e;
    }
    if (n1 && qc__set(&k->r, set1, &m1, n1) < 0) return qc__pk_bad(k, "bad set of changed entities");
    if (n0 && qc__set(&k->r, set0, &m0, n0) < 0) return qc__pk_bad(k, "bad set of changed entities");
    while (a1 < m1 || a0 < m0) {
        if (a0 >= m0 || (a1 < m1 && cls1[set1[a1]] < cls0[set0[a0]])) chg[nchg++] = cls1[set1[a1++]];
        else chg[nchg++] = cls0[set0[a0++]];
    }
    k->nchg = nchg;
    return 0;
}

/* section 7.3, which fields: a byte per changed entity and field (fch, the scratch grown to
   hold it), and whether any entity changed each field (fmode) */
static int qc__pk_read_fields(qc__pk *k) {
    qc_decoder *d = k->d;
    const size_t nchg = k->nchg, F = (size_t)k->F, fneed = nchg * F;
    size_t used = (size_t)((k->fmode + F + 1) - (uint8_t *)d->scratch), i, x, mm;
    uint8_t *fch;
    if (used + fneed > d->scratch_size) {
        /* grow, keeping what is in use */
        size_t nsz = used + fneed;
        void *ns = qc__dalloc(d, nsz);
        if (ns == NULL) return qc__pk_nomem(k);
        memcpy(ns, d->scratch, used);
        qc__dfree(d, d->scratch, d->scratch_size);
        d->scratch = ns;
        d->scratch_size = nsz;
        qc__pk_layout(k);
    }
    fch = k->fch = k->fmode + F + 1;
    memset(fch, 0, fneed);
    for (i = 0; i < F; i++) {
        if (qc__set(&k->r, k->set1, &mm, nchg) < 0) return qc__pk_bad(k, "bad set of changed fields");
        k->fmode[i] = mm > 0;
        for (x = 0; x < mm; x++) fch[k->set1[x] * F + i] = 1;
    }
    return 0;
}

/* section 7.3, parameters: each component's use_pred and Exp-Golomb parameter (dc's P), and
   the extrapolation's ratio */
static int qc__pk_read_params(qc__pk *k) {
    const qc_schema *sc = k->sc;
    int i, c;
    uint64_t v;
    for (i = 0; i < k->F; i++) {
        const qc_field *fd = &sc->fields[i];
        for (c = fd->first_comp; c < fd->first_comp + fd->ncomps; c++) {
            int b = sc->comps[c].b;
            qc__cpar *P = &k->dc[c].P;
            P->usep = 0;
            qc__cpar_set(P, 0, b);
            if (!k->fmode[i]) continue;
            if (k->pdist && b <= 32) {
                if (qc__get(&k->r, 1, &v) < 0) return qc__pk_bad(k, "truncated parameters");
                P->usep = (int)v;
            }
            if (qc__get(&k->r, qc__bitlen((uint64_t)b), &v) < 0) return qc__pk_bad(k, "truncated parameters");
            if ((int)v > b) return qc__pk_bad(k, "Exp-Golomb parameter above the code width");
            qc__cpar_set(P, (int)v, b);
        }
    }
    if (k->pdist) {
        int64_t a = k->bdist, b2 = k->pdist, t;
        while (b2) { t = a % b2; a = b2; b2 = t; }
        k->num = k->bdist / a;
        k->den = k->pdist / a;
    }
    return 0;
}

/* section 7.3, a quat or uvec slot of a changed entity (the slot-by-slot loop): its new code,
   or NULL and what is wrong */
static const char *qc__pk_read_rotation(qc__pk *k, const qc_slot *sl, int s, const uint64_t *br, const uint64_t *pr,
                                        uint64_t *out) {
    const qc_schema *sc = k->sc;
    int nco = sl->role == QC_ROLE_QUAT ? 3 : 2, alt = 0, qpred, q, t, cb = sl->codec->cbits;
    uint64_t code, v, how, jn;
    if (sl->role == QC_ROLE_QUAT) {
        qpred = pr != NULL && (pr[s] >> (3 * cb)) == (br[s] >> (3 * cb));
        code = (br[s] >> (3 * cb)) << (3 * cb);
    } else {
        qpred = pr != NULL;
        code = 0;
    }
    for (q = 0; q < nco; q++) {
        int c = sl->comp + q;
        const qc_comp *cp = &sc->comps[c];
        if (qc__eg_p(&k->r, &k->dc[c].P, &v, q == 0 && sl->role == QC_ROLE_QUAT ? &alt : NULL) < 0) return "bad difference";
        if (alt) break;
        code |= qc__apply(qc__ref(br[s], qpred && k->dc[c].P.usep ? &pr[s] : NULL, cp, k->num, k->den), v, cp) << cp->shift;
    }
    if (alt) {
        /* a new largest component: the absolute code, or the new index and the remapped differences */
        if (qc__get(&k->r, 1, &how) < 0) return "truncated smallest-three code";
        if (how == 0) {
            if (qc__get(&k->r, sl->bits, &code) < 0) return "truncated smallest-three code";
        } else {
            if (qc__get(&k->r, 2, &jn) < 0) return "truncated smallest-three code";
            if (jn == (br[s] >> (3 * cb))) return "a smallest-three remap to the baseline's own index";
            code = jn << (3 * cb);
            for (t = 0; t < 3; t++) {
                const qc_comp *cp = &sc->comps[sl->comp + t];
                if (qc__eg_p(&k->r, &k->dc[sl->comp + t].P, &v, NULL) < 0) return "bad difference";
                code |= ((qc__remap_ref(br[s], (int)jn, t, cb, qc__mask(cb) - (sl->codec->mode == 2 ? 1 : 0)) + qc__unzz(v)) &
                         qc__mask(cb)) << cp->shift;
            }
        }
    }
    *out = code;
    return NULL;
}

/* section 7.3, one slot other than a flag of a changed entity: its new code, or NULL and what
   is wrong */
static const char *qc__pk_read_slot(qc__pk *k, const qc_field *fd, const qc_slot *sl, int s, const uint64_t *br,
                                    const uint64_t *pr, uint64_t *out) {
    if (sl->role == QC_ROLE_ORD) {
        const qc_comp *cp = &k->sc->comps[sl->comp];
        const qc__cpar *P = &k->dc[sl->comp].P;
        uint64_t v;
        if (qc__eg_p(&k->r, P, &v, NULL) < 0) return "bad difference";
        v = qc__apply(qc__ref(br[s], pr != NULL && P->usep ? &pr[s] : NULL, cp, k->num, k->den), v, cp);
        *out = sl->sign ? qc__sext(v, sl->bits) : v;
        return NULL;
    }
    if (sl->role == QC_ROLE_QUAT || sl->role == QC_ROLE_UVEC) return qc__pk_read_rotation(k, sl, s, br, pr, out);
    /* abs */
    if (fd->implied_flip) *out = br[s] ^ 1;
    else if (qc__get(&k->r, sl->bits, out) < 0) return "truncated code";
    return NULL;
}

/* section 7.3, entities: changed entity x by the slot-by-slot loop (any case, every check) */
static int qc__pk_read_entity(qc__pk *k, size_t x) {
    const qc_schema *sc = k->sc;
    const size_t ke = k->chg[x], S = (size_t)k->S;
    const uint64_t *br = k->base->rows + k->kept_base[ke] * S, *pr = NULL;
    uint64_t *orw = k->snap->rows + k->kept_out[ke] * S, v = 0;
    const char *msg = NULL, *field = NULL;
    int any = 0, i, t;
    if (k->pdist && k->kept_pred[ke] != (size_t)-1) pr = k->pred->rows + k->kept_pred[ke] * S;
    for (i = 0; i < k->F && msg == NULL; i++) {
        const qc_field *fd = &sc->fields[i];
        int s = fd->first_slot, end = fd->first_slot + fd->nslots;
        uint64_t dacc = 0;
        if (!k->fch[x * (size_t)k->F + (size_t)i]) continue;
        any = 1;
        field = fd->name;
        while (s < end) {
            const qc_slot *sl = &sc->slots[s];
            if (sl->role == QC_ROLE_FLAG) {
                if (fd->implied_flag && br[s] == 0) v = 1;
                else if (qc__get(&k->r, 1, &v) < 0) { msg = "truncated flag"; break; }
                orw[s] = v;
                dacc |= v ^ br[s];
                if (v == 0) {
                    for (t = s + 1; t <= s + sl->span; t++) { orw[t] = 0; dacc |= br[t]; }
                    s += sl->span;
                }
                s++;
                continue;
            }
            msg = qc__pk_read_slot(k, fd, sl, s, br, pr, &v);
            if (msg != NULL) break;
            if (!qc__slot_ok(sl, v)) return qc__pk_invalid(k, k->base->ids[k->kept_base[ke]], s, v, k->r.pos);
            orw[s] = v;
            dacc |= v ^ br[s];
            s++;
        }
        if (msg == NULL && dacc == 0) msg = "marked changed but unchanged";
    }
    if (msg == NULL && !any) msg = "marked changed, but none of its fields is";
    if (msg == NULL) return 0;
    /* the entity, the field being read (none: the entity's own fault) and the bit */
    snprintf(k->res->message, sizeof k->res->message, "snapshot packet: entity %llu: %s%s%s%s (at bit %lu)",
             (unsigned long long)k->base->ids[k->kept_base[ke]], field != NULL ? "field '" : "",
             field != NULL ? field : "", field != NULL ? "': " : "", msg, (unsigned long)k->r.pos);
    return QC_E_MALFORMED;
}

/* section 7.3, entities: every changed entity, the fast path's runs taking those it can (from
   the packet while far from its end, then from a zero-padded copy of its tail), the
   slot-by-slot loop the next one each time */
static int qc__pk_read_entities(qc__pk *k) {
    const size_t nbytes = k->nbytes, tb = k->tb, lastfast = nbytes > tb ? nbytes - tb : 0, nchg = k->nchg;
    size_t st = 0, x;
    int tail_made = 0, status;
    qc__fastrun run;
    run.ngen = qc__fast_tables(k->sc, k->fmode, k->pdist, k->num, k->dc, k->dfd, k->gen);
    {   /* each changed component's look-up table (the others are never read) */
        int i, c;
        k->d->egt_used = 0;
        for (i = 0; i < k->F; i++) {
            const qc_field *fd = &k->sc->fields[i];
            for (c = fd->first_comp; c < fd->first_comp + fd->ncomps; c++)
                k->dc[c].egt = k->fmode[i] ? qc__egt_for(k->d, &k->dc[c].P) : qc__egt_none;
        }
    }
    run.fch = k->fch;
    run.F = k->F;
    run.S = k->S;
    run.FD = k->dfd;
    run.gen = k->gen;
    run.brow = k->base->rows;
    run.prow = k->pdist ? k->pred->rows : NULL;
    run.orow = k->snap->rows;
    run.chg = k->chg;
    run.kept_base = k->kept_base;
    run.kept_out = k->kept_out;
    run.kept_pred = k->kept_pred;
    run.num = k->num;
    run.den = k->den;
    for (x = 0; x < nchg; x++) {
        if ((k->r.pos >> 3) < lastfast) {
            run.buf = k->buf;
            run.lastfast = lastfast;
            run.nbits = 8 * nbytes;
            x = qc__fast_run(&run, x, nchg, &k->r.pos);
        }
        if (x < nchg && (k->r.pos >> 3) >= lastfast) {
            if (!tail_made) {
                tail_made = 1;
                st = k->r.pos >> 3;
                memcpy(k->tail, k->buf + st, nbytes - st);
                memset(k->tail + (nbytes - st), 0, tb);
            }
            run.buf = k->tail;
            run.lastfast = nbytes - st;
            run.nbits = 8 * (nbytes - st);
            k->r.pos -= 8 * st;
            x = qc__fast_run(&run, x, nchg, &k->r.pos);
            k->r.pos += 8 * st;
        }
        if (x == nchg) break;
        status = qc__pk_read_entity(k, x);
        if (status) return status;
    }
    return 0;
}

/* section 1: the padding, fewer than 8 bits, all zero */
static int qc__pk_read_end(qc__pk *k) {
    size_t left = qc__br_left(&k->r);
    uint64_t v;
    if (left >= 8 || (qc__get(&k->r, (int)left, &v) == 0 && v != 0))
        return qc__pk_bad(k, "unexpected data after the end of the packet");
    return 0;
}

/* One packet: the new snapshot in *out (QC_SNAPSHOT), or the refusal's status with res's
   message, the decoder unchanged */
static int qc__decode_packet(qc_decoder *d, const uint8_t *buf, size_t nbytes, qc_snapshot **out, qc_result *res) {
    qc__pk k;
    int st;
    memset(&k, 0, sizeof k);
    k.d = d;
    k.sc = d->schema;
    k.res = res;
    k.buf = buf;
    k.nbytes = nbytes;
    k.S = k.sc->nslots;
    k.F = k.sc->nfields;
    k.C = k.sc->ncomps;
    k.tb = qc__fast_tail(k.sc);
    k.num = 1;
    k.den = 1;
    qc__br_init(&k.r, buf, nbytes);
    if ((st = qc__pk_read_head(&k)) != 0 || (st = qc__pk_read_removed(&k)) != 0 || (st = qc__pk_read_count(&k)) != 0 ||
            (st = qc__pk_memory(&k)) != 0)
        goto refused;
    if (k.nnew && ((st = qc__pk_read_new_ids(&k)) != 0 || (st = qc__pk_read_records(&k)) != 0)) goto refused;
    if ((st = qc__pk_merge(&k)) != 0) goto refused;
    if (k.bdist) {
        if ((st = qc__pk_read_changed(&k)) != 0) goto refused;
        if (k.nchg && ((st = qc__pk_read_fields(&k)) != 0 || (st = qc__pk_read_params(&k)) != 0 ||
                       (st = qc__pk_read_entities(&k)) != 0))
            goto refused;
    }
    if ((st = qc__pk_read_end(&k)) != 0) goto refused;
    *out = k.snap;
    return QC_SNAPSHOT;
refused:
    qc__snap_free(d, k.snap);
    return st;
}

/* Keep a decoded snapshot as section 10 says; returns it (held, or loose until the next call). */
static void qc__keep(qc_decoder *d, qc_snapshot *snap) {
    int seq = snap->seq, i;
    if (d->latest < 0 || qc__newer(seq, d->latest)) {
        if (d->latest >= 0) {
            for (i = d->nheld - 1; i >= 0; i--)
                if (((seq - d->held_seq[i]) & QC__M) >= d->keep) qc__drop_at(d, i);
        }
        i = qc__find(d, seq);
        if (i >= 0) qc__drop_at(d, i);
        d->held[d->nheld] = snap;
        d->held_seq[d->nheld] = (uint16_t)seq;
        d->nheld++;
        d->held_cost += qc_snapshot_cost(d->schema, snap->n);
        d->latest = seq;
        if (d->nambiguous) {
            int k;
            for (k = 0; k < 65536; k++)
                if (qc__amb(d, k) && ((seq - k) & QC__M) >= d->keep) qc__amb_clear(d, k);
        }
        return;
    }
    i = qc__find(d, seq);
    if (i >= 0) {
        const qc_snapshot *prev = d->held[i];
        int same = prev->n == snap->n && (prev->n == 0 ||
            (memcmp(prev->ids, snap->ids, prev->n * 8) == 0 &&
             memcmp(prev->rows, snap->rows, prev->n * (size_t)d->schema->nslots * 8) == 0));
        if (!same) {
            qc__drop_at(d, i);
            qc__amb_set(d, seq);
        }
        d->loose = snap;
        return;
    }
    if (!(d->nambiguous && qc__amb(d, seq)) && ((d->latest - seq) & QC__M) < d->keep) {
        d->held[d->nheld] = snap;
        d->held_seq[d->nheld] = (uint16_t)seq;
        d->nheld++;
        d->held_cost += qc_snapshot_cost(d->schema, snap->n);
        return;
    }
    d->loose = snap;
}

/* ---- the datagram layer (wire-format sections 11-15) ------------------------------------------- */

typedef struct qc__chunk_node { struct qc__chunk_node *next; size_t len; int index; } qc__chunk_node;
#define QC__NODE_HEAD ((sizeof(qc__chunk_node) + 15) / 16 * 16)

struct qc_partial {
    qc_partial *next;
    int seq, count, nheld;
    uint32_t pcheck;
    size_t bytes;
    uint64_t have[4];
    qc__chunk_node *chunks;
};

static void qc__partial_free(qc_decoder *d, qc_partial *p) {
    qc__chunk_node *c = p->chunks;
    while (c != NULL) {
        qc__chunk_node *nx = c->next;
        qc__dfree(d, c, QC__NODE_HEAD + c->len);
        c = nx;
    }
    d->chunk_bytes -= d->chunk * (size_t)p->nheld;
    d->npartials--;
    qc__dfree(d, p, sizeof *p);
}

static void qc__partial_unlink(qc_decoder *d, qc_partial *p) {
    qc_partial **pp = &d->partials;
    while (*pp != NULL && *pp != p) pp = &(*pp)->next;
    if (*pp == p) *pp = p->next;
}

static void qc__partials_clear(qc_decoder *d) {
    while (d->partials != NULL) {
        qc_partial *p = d->partials;
        d->partials = p->next;
        qc__partial_free(d, p);
    }
}

static void qc__forget(qc_decoder *d) {     /* every snapshot, latest, the partial packets */
    int i;
    for (i = 0; i < d->nheld; i++) qc__snap_free(d, d->held[i]);
    d->nheld = 0;
    d->held_cost = 0;
    d->latest = -1;
    memset(d->ambiguous, 0, sizeof d->ambiguous);
    d->nambiguous = 0;
    qc__partials_clear(d);
}

static size_t qc__scratch_bytes(const qc_schema *s, size_t n) {
    /* removed + 8 lists of kept (size_t), new ids and rows, the per-packet tables and the
       tail's padded copy, a byte per field and one per changed entity and field; with the
       growth margin of qc__scratch */
    /* (9 * (n + 1) + 1) size_t's + n * (1 + nslots) * 8 + tables + nfields + 1 + n * nfields,
       as a fixed part plus n per entity; SIZE_MAX when it does not fit */
    size_t per = 9 * sizeof(size_t) + (1 + (size_t)s->nslots) * 8 + (size_t)s->nfields;
    size_t b = qc__sat_add(10 * sizeof(size_t) + qc__tables_bytes(s) + ((size_t)s->nfields + 1), qc__sat_mul(n, per));
    return qc__sat_add(qc__sat_add(b, b / 4), 4096);
}

size_t qc_decoder_worst_case_bytes(const qc_schema *s, int history, size_t max_entities, int max_datagram, int max_partials) {
    size_t keep, snaps, lists, chunk_limit, np, reasm, hello, total;
    /* the hello's ranges (wire-format 13: history 1..32767, max_datagram 64..65507) and the
       config's (max_partials >= 0, 0: 1024); outside them 0, which no real bound is (below 16
       bytes of max_datagram the chunk size divided by zero) */
    if (history < 1 || history > 32767 || max_datagram < 64 || max_datagram > 65507 || max_partials < 0) return 0;
    keep = (size_t)(2 * history - 1 <= 32768 ? 2 * history - 1 : 32768);
    snaps = qc__sat_mul(keep + 2, qc_snapshot_bytes(s, max_entities));   /* held + one decoding + one loose */
    lists = keep * (sizeof(uint16_t) + sizeof(qc_snapshot *));
    chunk_limit = 256 * (size_t)max_datagram;
    np = (size_t)(max_partials > 0 ? max_partials : 1024);
    /* reassembly: the chunk bytes (at most 256 * max_datagram), a node per chunk (full chunks:
       at most chunk_limit / C, C = max_datagram - 8 - T, the fewest bytes with a key's T = 8;
       short ones: one per partial packet), a header per partial packet, and the reassembled
       packet (at most the chunk limit) */
    reasm = qc__sat_add(2 * chunk_limit + (chunk_limit / (size_t)(max_datagram - 16) + 1) * QC__NODE_HEAD,
                        qc__sat_mul(np, QC__NODE_HEAD + sizeof(qc_partial)));
    hello = 2 * (size_t)65507;     /* the adopted hello and, while adopting, the next */
    /* a packet reassembled from fragments is at most 256 * (max_datagram - 12) bytes: its new
       entities are at most 8 per byte, so max_entities above that is never reached */
    /* the scratch twice: growing it keeps the old one until the new one is filled; every sum
       stops at SIZE_MAX (an absurd max_entities) instead of wrapping */
    total = qc__sat_add(snaps, 2 * lists);
    total = qc__sat_add(total, qc__sat_mul(2, qc__scratch_bytes(s, max_entities)));
    total = qc__sat_add(total, reasm);
    return qc__sat_add(total, hello + (size_t)QC_EG_TABLES * QC_EG_TABLE_BYTES + 64);
}

int qc_decoder_init(qc_decoder *d, const qc_schema *s, const qc_decoder_config *cfg, qc_error *err) {
    memset(d, 0, sizeof *d);
    if (cfg != NULL && (cfg->max_history < 0 || cfg->max_partials < 0)) {
        /* (0 is "the default"; a negative one is a mistake, not a default) */
        if (err != NULL) {
            err->kind = -1;
            snprintf(err->message, sizeof err->message, "qc_decoder_config: %s %d is negative (0: the default)",
                     cfg->max_history < 0 ? "max_history" : "max_partials",
                     cfg->max_history < 0 ? cfg->max_history : cfg->max_partials);
        }
        return -1;
    }
    d->schema = s;
    d->al = qc__allocator_of(cfg != NULL ? &cfg->allocator : NULL);
    d->alloc_limit = cfg != NULL ? cfg->alloc_limit : 0;
    d->max_bytes = cfg != NULL && cfg->max_bytes ? (uint64_t)cfg->max_bytes : (uint64_t)QC_MAX_BYTES_DEFAULT;
    if (cfg != NULL && cfg->max_bytes == (size_t)-1) d->max_bytes = ~(uint64_t)0;
    d->tlen = 4;
    if (cfg != NULL && (cfg->key != NULL || cfg->key_len != 0)) {
        if (qc_mac_master(cfg->key, cfg->key_len, d->mk) < 0) {
            if (err != NULL) {
                err->kind = -1;
                snprintf(err->message, sizeof err->message, "key: %lu bytes%s; a key is 1 to 255 bytes (16 or more random ones)",
                         (unsigned long)cfg->key_len, cfg->key == NULL ? " at NULL" : "");
            }
            memset(d, 0, sizeof *d);
            return -1;
        }
        d->keyed = 1;
        d->tlen = 8;
        qc_mac_sub(d->mk, (const uint8_t *)"quantcodec hello", 16, d->k_h);
        qc_mac_sub(d->mk, (const uint8_t *)"quantcodec hello request", 24, d->k_q);
    }
    d->max_entities = cfg != NULL && cfg->max_entities ? cfg->max_entities : ((size_t)1 << 24);
    d->max_history = cfg != NULL && cfg->max_history > 0 && cfg->max_history < 32767 ? cfg->max_history : 32767;
    d->max_partials = cfg != NULL && cfg->max_partials > 0 ? cfg->max_partials : 1024;
    d->latest = -1;
    d->history = 64;
    (void)err;
    return 0;
}

static void qc__hello_free(qc_decoder *d);

void qc_decoder_free(qc_decoder *d) {
    if (d == NULL) return;              /* like free(NULL) */
    qc__forget(d);
    qc__snap_free(d, d->loose);
    d->loose = NULL;
    qc__dfree(d, d->held, (size_t)d->held_cap * sizeof(qc_snapshot *));
    qc__dfree(d, d->held_seq, (size_t)d->held_cap * sizeof(uint16_t));
    qc__dfree(d, d->scratch, d->scratch_size);
    qc__hello_free(d);
    qc__egt_free(d);
    d->held = NULL; d->held_seq = NULL; d->scratch = NULL; d->scratch_size = 0; d->held_cap = 0;
}

static void qc__hello_free(qc_decoder *d) {
    if (d->adopted && d->hello_bytes != NULL) qc__dfree(d, d->hello_bytes, d->hello_len);
    d->hello_bytes = NULL;
    d->hello_len = 0;
}

static int qc__utf8_strict(const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned cp;
        size_t l = qc__utf8_get(p + i, n - i, &cp);
        if (l == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += l;
    }
    return 1;
}

typedef struct qc__hello {
    int predict, history, max_datagram;
    uint64_t stream_id, started;
    const uint8_t *fp;
    uint32_t schema_version;
    const uint8_t *name; size_t name_len;
    unsigned nf, ns;
    size_t fields_at;           /* offset of the first summary */
} qc__hello;

static int qc__parse_hello(const uint8_t *data, size_t len, size_t tlen, qc__hello *h, char *msg, size_t cap) {
    size_t end = len - tlen, pos = 46;
    unsigned i;
    if (data[4] != 1) { snprintf(msg, cap, "hello: format version %u, this client reads version 1", data[4]); return -1; }
    if (data[5] & ~1u) { snprintf(msg, cap, "hello: unknown flags 0x%02x", data[5]); return -1; }
    h->predict = data[5] & 1;
    h->history = (int)qc__le16(data + 6);
    h->max_datagram = (int)qc__le16(data + 8);
    h->stream_id = qc__load_le64(data + 10);
    h->started = qc__load_le64(data + 18);
    h->fp = data + 26;
    h->schema_version = qc__le32(data + 42);
    if (h->history < 1 || h->history > 0x7FFF) { snprintf(msg, cap, "hello: history %d outside 1..32767", h->history); return -1; }
    if (h->max_datagram < 64 || h->max_datagram > 65507 || len > (size_t)h->max_datagram) {
        snprintf(msg, cap, "hello: max_datagram %d outside 64..65507 or smaller than the hello (%lu bytes)", h->max_datagram, (unsigned long)len);
        return -1;
    }
    {
        int i;
        for (i = 0; i < 16; i++)
            if (!((h->fp[i] >= '0' && h->fp[i] <= '9') || (h->fp[i] >= 'a' && h->fp[i] <= 'f'))) {
                snprintf(msg, cap, "hello: the fingerprint is not 16 lowercase hex digits");
                return -1;
            }
    }
    if (pos + 1 > end) goto trunc;
    h->name_len = data[pos++];
    if (pos + h->name_len > end) goto trunc;
    h->name = data + pos;
    if (!qc__utf8_strict(h->name, h->name_len)) { snprintf(msg, cap, "hello: the schema name is not UTF-8"); return -1; }
    pos += h->name_len;
    if (pos + 4 > end) goto trunc;
    h->nf = qc__le16(data + pos);
    h->ns = qc__le16(data + pos + 2);
    pos += 4;
    if (h->ns > h->nf) { snprintf(msg, cap, "hello: %u field summaries for %u fields", h->ns, h->nf); return -1; }
    h->fields_at = pos;
    for (i = 0; i < h->ns; i++) {
        size_t l;
        if (pos + 1 > end) goto trunc;
        l = data[pos++];
        if (pos + l > end) goto trunc;
        if (!qc__utf8_strict(data + pos, l)) { snprintf(msg, cap, "hello: field %u's name is not UTF-8", i); return -1; }
        pos += l;
        if (pos + 7 > end) goto trunc;
        pos += 7;
    }
    if (pos != end) { snprintf(msg, cap, "hello: %lu bytes after the last field summary", (unsigned long)(end - pos)); return -1; }
    return 0;
trunc:
    snprintf(msg, cap, "hello: truncated at byte %lu", (unsigned long)pos);
    return -1;
}

static void qc__cat(char *msg, size_t cap, const char *fmt, ...) {
    size_t n = strlen(msg);
    va_list ap;
    if (n + 3 >= cap) return;
    if (n) { msg[n++] = ';'; msg[n++] = ' '; msg[n] = 0; }
    va_start(ap, fmt);
    vsnprintf(msg + n, cap - n, fmt, ap);
    va_end(ap);
}

/* Says what differs between the decoder's schema and the hello's (its fingerprint differs). */
static void qc__differences(const qc_schema *s, const uint8_t *data, const qc__hello *h, char *msg, size_t cap) {
    size_t pos;
    unsigned i;
    int f, complete = h->ns == h->nf;
    size_t nl = strlen(s->name);
    msg[0] = 0;
    qc__cat(msg, cap, "a hello of another schema: fingerprint %s here, %.16s in the hello", s->fingerprint, (const char *)h->fp);
    if (nl > 255) nl = 255;   /* (the hello carries at most 255 bytes of the name) */
    if (h->name_len != nl || memcmp(h->name, s->name, nl) != 0)
        qc__cat(msg, cap, "schema name '%s' here, '%.*s' in the hello", s->name, (int)h->name_len, (const char *)h->name);
    if (h->schema_version != s->version32)
        qc__cat(msg, cap, "schema version %s here, %lu in the hello", s->version_text, (unsigned long)h->schema_version);
    for (f = 0; f < s->nfields; f++) {
        const qc_field *fd = &s->fields[f];
        int found = 0;
        pos = h->fields_at;
        for (i = 0; i < h->ns; i++) {
            size_t l = data[pos];
            const uint8_t *nm = data + pos + 1;
            int kind = data[pos + 1 + l];
            unsigned bits = qc__le16(data + pos + 2 + l);
            uint32_t hh = qc__le32(data + pos + 4 + l);
            if (l == strlen(fd->name) && memcmp(nm, fd->name, l) == 0) {
                unsigned mybits = fd->codec->bits > 0xFFFF ? 0xFFFF : (unsigned)fd->codec->bits;
                found = 1;
                if (kind != fd->codec->kind)
                    qc__cat(msg, cap, "field '%s': %s here, %s on the server", fd->name, qc__kind_names[fd->codec->kind],
                            kind >= 1 && kind <= 15 ? qc__kind_names[kind] : "an unknown kind");
                else if (bits != mybits)
                    qc__cat(msg, cap, "field '%s': %u bits here, %u on the server", fd->name, mybits, bits);
                else if (hh != fd->h)
                    qc__cat(msg, cap, "field '%s': same kind (%s) and bits, other parameters (range, step, labels...)",
                            fd->name, qc__kind_names[fd->codec->kind]);
                break;
            }
            pos += 1 + l + 7;
        }
        if (!found && complete) qc__cat(msg, cap, "field '%s' is not in the server's schema", fd->name);
    }
    pos = h->fields_at;
    for (i = 0; i < h->ns; i++) {
        size_t l = data[pos];
        int mine = 0;
        for (f = 0; f < s->nfields && !mine; f++)
            mine = strlen(s->fields[f].name) == l && memcmp(s->fields[f].name, data + pos + 1, l) == 0;
        if (!mine) qc__cat(msg, cap, "field '%.*s' of the server's schema is missing here", (int)l, (const char *)data + pos + 1);
        pos += 1 + l + 7;
    }
    if (!complete) qc__cat(msg, cap, "(the hello summarizes %u of the server's %u fields)", h->ns, h->nf);
}

static int qc__refuse(qc_result *res, int kind) {
    static const char *const names[] = {"", "no-hello", "check", "hello", "schema", "fragment", "baseline", "malformed", "memory",
                                        "limits"};
    res->status = kind;
    res->kind = names[-kind];
    return kind;
}

static int qc__adopt(qc_decoder *d, const uint8_t *data, size_t len, const qc__hello *h, qc_result *res) {
    uint8_t key[41];
    uint8_t *copy;
    int keep = 2 * h->history - 1 <= 32768 ? 2 * h->history - 1 : 32768;
    qc_snapshot **held;
    uint16_t *held_seq;
    copy = (uint8_t *)qc__dalloc(d, len);
    held = (qc_snapshot **)qc__dalloc(d, (size_t)keep * sizeof(qc_snapshot *));
    held_seq = (uint16_t *)qc__dalloc(d, (size_t)keep * sizeof(uint16_t));
    if (copy == NULL || held == NULL || held_seq == NULL) {
        qc__dfree(d, copy, len);
        qc__dfree(d, held, (size_t)keep * sizeof(qc_snapshot *));
        qc__dfree(d, held_seq, (size_t)keep * sizeof(uint16_t));
        snprintf(res->message, sizeof res->message, "hello: out of memory for a history of %d", h->history);
        return qc__refuse(res, QC_E_MEMORY);
    }
    memcpy(copy, data, len);
    /* start over: nothing held, latest none, no partial packet */
    qc__forget(d);
    qc__dfree(d, d->held, (size_t)d->held_cap * sizeof(qc_snapshot *));
    qc__dfree(d, d->held_seq, (size_t)d->held_cap * sizeof(uint16_t));
    qc__hello_free(d);
    d->held = held;
    d->held_seq = held_seq;
    d->held_cap = keep;
    d->hello_bytes = copy;
    d->hello_len = len;
    d->adopted = 1;
    d->history = h->history;
    d->keep = keep;
    d->predict = h->predict;
    d->max_datagram = h->max_datagram;
    d->stream_id = h->stream_id;
    d->started = h->started;
    d->chunk = (size_t)h->max_datagram - 8 - (size_t)d->tlen;
    memcpy(key, "quantcodec", 10);
    key[10] = 1;
    memcpy(key + 11, h->fp, 16);
    key[27] = (uint8_t)h->history; key[28] = (uint8_t)(h->history >> 8);
    key[29] = (uint8_t)h->predict;
    key[30] = (uint8_t)h->max_datagram; key[31] = (uint8_t)(h->max_datagram >> 8);
    {
        int i;
        for (i = 0; i < 8; i++) key[32 + i] = (uint8_t)(h->stream_id >> (8 * i));
    }
    memcpy(d->stream_key, key, 40);
    key[40] = 'P';
    d->seed_p = qc_crc32c(key, 41, 0);
    if (d->keyed) qc_mac_sub(d->mk, key, 41, d->k_p);
    key[40] = 'F';
    d->seed_f = qc_crc32c(key, 41, 0);
    if (d->keyed) qc_mac_sub(d->mk, key, 41, d->k_f);
    key[40] = 'R';
    d->seed_r = qc_crc32c(key, 41, 0);
    if (d->keyed) qc_mac_sub(d->mk, key, 41, d->k_r);
    res->status = QC_PENDING;
    res->adopted = 1;
    snprintf(res->message, sizeof res->message, "hello: stream %016llx adopted (history %d, max_datagram %d%s)",
             (unsigned long long)h->stream_id, h->history, h->max_datagram, h->predict ? ", predict" : "");
    return QC_PENDING;
}

static int qc__take_hello(qc_decoder *d, const uint8_t *data, size_t len, qc_result *res) {
    qc__hello h;
    if (qc__parse_hello(data, len, (size_t)d->tlen, &h, res->message, sizeof res->message) < 0) return qc__refuse(res, QC_E_HELLO);
    if (memcmp(h.fp, d->schema->fingerprint, 16) != 0) {
        qc__differences(d->schema, data, &h, res->message, sizeof res->message);
        return qc__refuse(res, QC_E_SCHEMA);
    }
    if (d->adopted) {
        if (h.stream_id == d->stream_id) {
            if (len != d->hello_len || memcmp(data, d->hello_bytes, len - (size_t)d->tlen) != 0) {
                snprintf(res->message, sizeof res->message, "hello: a hello of stream %016llx with other parameters than the one adopted",
                         (unsigned long long)h.stream_id);
                return qc__refuse(res, QC_E_HELLO);
            }
            res->status = QC_PENDING;
            snprintf(res->message, sizeof res->message, "hello: the current stream's hello again");
            return QC_PENDING;
        }
        /* (wire-format 13: a stream that has decoded no packet yet holds nothing, so it refuses
           no other; a stray hello adopted cannot keep the client from its server, whose next
           hello takes it back) */
        if (h.started <= d->started && d->latest >= 0) {
            snprintf(res->message, sizeof res->message, "hello: a hello of an older stream %016llx (started %llu, the current one %llu, "
                     "which has decoded packets)", (unsigned long long)h.stream_id, (unsigned long long)h.started,
                     (unsigned long long)d->started);
            return qc__refuse(res, QC_E_HELLO);
        }
    }
    {
        /* wire-format 19, check 1: a window of empty snapshots and full reassembly */
        uint64_t need = (uint64_t)(2 * h.history - 1) * 256 + 256 * (uint64_t)h.max_datagram;
        if (need > d->max_bytes) {
            snprintf(res->message, sizeof res->message, "hello: history %d and max_datagram %d need %llu bytes "
                     "((2 * history - 1) * 256 + 256 * max_datagram), above max_bytes %llu",
                     h.history, h.max_datagram, (unsigned long long)need, (unsigned long long)d->max_bytes);
            return qc__refuse(res, QC_E_LIMITS);
        }
    }
    if (h.history > d->max_history) {
        snprintf(res->message, sizeof res->message, "hello: history %d above this decoder's max_history %d", h.history, d->max_history);
        return qc__refuse(res, QC_E_HELLO);
    }
    return qc__adopt(d, data, len, &h, res);
}

static int qc__packet(qc_decoder *d, const uint8_t *p, size_t n, qc_result *res) {
    qc_snapshot *snap = NULL;
    int st = qc__decode_packet(d, p, n, &snap, res);
    if (st != QC_SNAPSHOT) return qc__refuse(res, st);
    qc__keep(d, snap);
    res->status = QC_SNAPSHOT;
    res->snapshot = snap;
    res->ack = 1;
    res->ack_seq = (uint16_t)d->latest;
    return QC_SNAPSHOT;
}

/* How far packet `seq` is behind latest (wire-format 12, rule 4): (latest - seq) mod 65536, less
   65536 from 32768 on (a packet newer than latest is behind by a negative number); 0 for every
   packet while no packet is decoded. */
static int qc__behind(const qc_decoder *d, int seq) {
    int dd;
    if (d->latest < 0) return 0;
    dd = (d->latest - seq) & QC__M;
    return dd >= 0x8000 ? dd - 0x10000 : dd;
}

/* Room for one more chunk of the partial packet `own` (NULL: one begun now, packet `seq`), under
   both bounds: the chunks' 256 * max_datagram (wire-format 12, rule 4) and max_partials (this
   client's, for a new partial packet). Until both hold, the partial packets are dropped oldest
   first: the furthest behind latest, equals in the order begun (the list's order; a new one
   last among its equals). When `own` comes up it is dropped (if it was held) and 0 is returned:
   the chunk is not kept, and the packets ranked after it stay. Allocates nothing. */
static int qc__make_room(qc_decoder *d, qc_partial *own, int seq) {
    size_t limit = 256 * (size_t)d->max_datagram;
    int own_rank = qc__behind(d, seq);
    while (d->chunk_bytes + d->chunk > limit || (own == NULL && d->npartials >= d->max_partials)) {
        qc_partial *p, *oldest = NULL, **pp, **at = NULL;
        int best = 0;
        for (pp = &d->partials; (p = *pp) != NULL; pp = &p->next) {
            int r = qc__behind(d, p->seq);
            if (oldest == NULL || r > best) { oldest = p; at = pp; best = r; }
        }
        if (oldest == NULL || (own == NULL && own_rank > best)) return 0;   /* a new own packet the oldest */
        *at = oldest->next;
        qc__partial_free(d, oldest);
        if (oldest == own) return 0;
    }
    return 1;
}

static int qc__fragment(qc_decoder *d, const uint8_t *data, size_t len, qc_result *res) {
    const uint8_t *body = data;
    size_t blen = len - (size_t)d->tlen, clen = blen - 8, C = d->chunk;
    int seq = (int)qc__le16(body), index = body[2], count = body[3] + 1, last;
    uint32_t pcheck = qc__le32(body + 4);
    qc_partial *p, **pp;
    qc__chunk_node *node;
    if (count == 1) {
        snprintf(res->message, sizeof res->message, "fragment of packet %d: a count of 1 (a packet that fits is sent whole)", seq);
        return qc__refuse(res, QC_E_FRAGMENT);
    }
    if (index >= count) {
        snprintf(res->message, sizeof res->message, "fragment of packet %d: index %d of %d", seq, index, count);
        return qc__refuse(res, QC_E_FRAGMENT);
    }
    last = index == count - 1;
    if (last ? !(clen >= 1 && clen <= C) : clen != C) {
        snprintf(res->message, sizeof res->message, "fragment %d of %d of packet %d: a chunk of %lu bytes (%s%lu expected)",
                 index, count, seq, (unsigned long)clen, last ? "at most " : "", (unsigned long)C);
        return qc__refuse(res, QC_E_FRAGMENT);
    }
    res->status = QC_PENDING;
    if (d->latest >= 0) {
        int dd;
        pp = &d->partials;
        while (*pp != NULL) {
            dd = (d->latest - (*pp)->seq) & QC__M;
            if (dd >= d->history && dd < 0x8000) {
                p = *pp;
                *pp = p->next;
                qc__partial_free(d, p);
            } else {
                pp = &(*pp)->next;
            }
        }
        dd = (d->latest - seq) & QC__M;
        if (dd >= d->history && dd < 0x8000) {
            snprintf(res->message, sizeof res->message, "fragment of packet %d: given up (too old)", seq);
            return QC_PENDING;
        }
    }
    for (p = d->partials; p != NULL; p = p->next)
        if (p->seq == seq && p->count == count && p->pcheck == pcheck) break;
    if (p != NULL && ((p->have[index >> 6] >> (index & 63)) & 1)) {
        snprintf(res->message, sizeof res->message, "fragment %d of packet %d: a duplicate", index, seq);
        return QC_PENDING;
    }
    /* every chunk counts as a full one (docs/wire-format.md section 12, rule 4); no room: the
       oldest partial packets give way, the packet's own ranked with them */
    if (!qc__make_room(d, p, seq)) {
        snprintf(res->message, sizeof res->message, "fragment %d of packet %d: not kept (its packet the oldest held, "
                 "the reassembly's bound reached)", index, seq);
        return QC_PENDING;
    }
    if (p != NULL && p->nheld + 1 == count) {
        /* the chunk that completes the packet: P is the chunks in order and this one, joined
           without keeping it; the partial packet goes only once P is decoded or refused for
           what it is, so that a refusal for memory (the join, or the packet's snapshot) leaves
           it as it was, and the same fragment again completes it */
        size_t total = p->bytes + clen;
        uint8_t *packet = (uint8_t *)qc__dalloc(d, total);
        int st;
        if (packet == NULL) {
            snprintf(res->message, sizeof res->message, "packet %d: out of memory reassembling it", seq);
            return qc__refuse(res, QC_E_MEMORY);
        }
        for (node = p->chunks; node != NULL; node = node->next)
            memcpy(packet + (size_t)node->index * C, (uint8_t *)node + QC__NODE_HEAD, node->len);
        memcpy(packet + (size_t)index * C, body + 8, clen);
        if (qc_crc32c(packet, total, d->seed_p) != pcheck || total < 2 || qc__le16(packet) != (unsigned)seq) {
            qc__dfree(d, packet, total);
            qc__partial_unlink(d, p);
            qc__partial_free(d, p);
            snprintf(res->message, sizeof res->message, "fragments of packet %d: the reassembled packet fails its check", seq);
            return qc__refuse(res, QC_E_FRAGMENT);
        }
        st = qc__packet(d, packet, total, res);
        qc__dfree(d, packet, total);
        if (st != QC_E_MEMORY) {
            qc__partial_unlink(d, p);
            qc__partial_free(d, p);
        }
        return st;
    }
    node = (qc__chunk_node *)qc__dalloc(d, QC__NODE_HEAD + clen);
    if (node == NULL) {
        snprintf(res->message, sizeof res->message, "fragment of packet %d: out of memory", seq);
        return qc__refuse(res, QC_E_MEMORY);
    }
    if (p == NULL) {
        p = (qc_partial *)qc__dalloc(d, sizeof *p);
        if (p == NULL) {
            qc__dfree(d, node, QC__NODE_HEAD + clen);
            snprintf(res->message, sizeof res->message, "fragment of packet %d: out of memory", seq);
            return qc__refuse(res, QC_E_MEMORY);
        }
        memset(p, 0, sizeof *p);
        p->seq = seq; p->count = count; p->pcheck = pcheck;
        d->npartials++;
        for (pp = &d->partials; *pp != NULL; pp = &(*pp)->next) {}
        *pp = p;
    }
    node->len = clen;
    node->index = index;
    memcpy((uint8_t *)node + QC__NODE_HEAD, body + 8, clen);
    node->next = p->chunks;
    p->chunks = node;
    p->have[index >> 6] |= ((uint64_t)1) << (index & 63);
    p->nheld++;
    p->bytes += clen;
    d->chunk_bytes += C;   /* every chunk counted as a full one */
    snprintf(res->message, sizeof res->message, "fragment %d of %d of packet %d kept", index, count, seq);
    return QC_PENDING;
}

/* a call's result before anything is read (pending, nothing decoded), and the snapshot the
   previous call handed out without keeping it freed now */
static void qc__result_begin(qc_decoder *d, qc_result *res) {
    res->status = QC_PENDING;
    res->snapshot = NULL;
    res->ack = 0;
    res->ack_seq = 0;
    res->adopted = 0;
    res->kind = NULL;
    res->message[0] = 0;
    if (d->loose != NULL) { qc__snap_free(d, d->loose); d->loose = NULL; }
}

int qc_decoder_packet(qc_decoder *d, const uint8_t *packet, size_t len, qc_result *res) {
    qc__result_begin(d, res);
    if (d->held == NULL) {
        int keep = 2 * d->history - 1;
        d->held = (qc_snapshot **)qc__dalloc(d, (size_t)keep * sizeof(qc_snapshot *));
        d->held_seq = (uint16_t *)qc__dalloc(d, (size_t)keep * sizeof(uint16_t));
        if (d->held == NULL || d->held_seq == NULL) {
            qc__dfree(d, d->held, (size_t)keep * sizeof(qc_snapshot *));
            qc__dfree(d, d->held_seq, (size_t)keep * sizeof(uint16_t));
            d->held = NULL;
            d->held_seq = NULL;
            snprintf(res->message, sizeof res->message, "out of memory");
            return qc__refuse(res, QC_E_MEMORY);
        }
        d->held_cap = keep;
        d->keep = keep;
    }
    return qc__packet(d, packet, len, res);
}

/* whether the datagram's last T bytes are the check of the bytes before: CRC-32C with the seed,
   or SipHash-2-4 under the key (wire-format 11, 17) */
static int qc__sealed(const qc_decoder *d, const uint8_t *data, size_t len, uint32_t seed, const uint8_t *key) {
    if (d->keyed) return qc_siphash(key, data, len - 8) == qc__load_le64(data + len - 8);
    return qc_crc32c(data, len - 4, seed) == qc__le32(data + len - 4);
}

int qc_decoder_datagram(qc_decoder *d, const uint8_t *data, size_t len, qc_result *res) {
    size_t T = (size_t)d->tlen;
    qc__result_begin(d, res);
    if (len >= 1 + T) {
        if (d->adopted) {
            if (qc__sealed(d, data, len, d->seed_p, d->k_p)) return qc__packet(d, data, len - T, res);
            if (len >= 9 + T && qc__sealed(d, data, len, d->seed_f, d->k_f)) return qc__fragment(d, data, len, res);
        }
        if (len >= 51 + T && memcmp(data, "QCHL", 4) == 0 &&
            qc__sealed(d, data, len, qc_crc32c((const uint8_t *)"quantcodec hello", 16, 0), d->k_h))
            return qc__take_hello(d, data, len, res);
    }
    if (!d->adopted) {
        snprintf(res->message, sizeof res->message, "no hello adopted yet, so no datagram can be checked (a datagram of %lu bytes refused)",
                 (unsigned long)len);
        return qc__refuse(res, QC_E_NO_HELLO);
    }
    snprintf(res->message, sizeof res->message, "a datagram of %lu bytes fails the check of stream %016llx", (unsigned long)len,
             (unsigned long long)d->stream_id);
    return qc__refuse(res, QC_E_CHECK);
}

/* ---- the session client (wire-format 18) ----------------------------------------------------------- */

/* A 32-bit nonce from what portable C offers: /dev/urandom where it exists, else time, clock and
   addresses (of the client, a local, a function), mixed by SipHash. A game should pass its own. */
static uint32_t qc__draw_nonce(const void *where) {
    uint8_t buf[64], k[16];
    size_t n = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    time_t t = time(NULL);
    clock_t c = clock();
    uintptr_t a = (uintptr_t)where, b = (uintptr_t)&n, fn = (uintptr_t)&qc__draw_nonce;
    if (f != NULL) {
        n = fread(buf, 1, 16, f);
        fclose(f);
    }
    memcpy(buf + n, &t, sizeof t); n += sizeof t;
    memcpy(buf + n, &c, sizeof c); n += sizeof c;
    memcpy(buf + n, &a, sizeof a); n += sizeof a;
    memcpy(buf + n, &b, sizeof b); n += sizeof b;
    memcpy(k, &fn, sizeof fn < 16 ? sizeof fn : 16);
    memset(k + (sizeof fn < 16 ? sizeof fn : 16), 0x5A, 16 - (sizeof fn < 16 ? sizeof fn : 16));
    return (uint32_t)(qc_siphash(k, buf, n) >> 16);
}

int qc_client_init_config(qc_client *c, const qc_schema *s, const qc_decoder_config *cfg, int64_t nonce, qc_error *err) {
    memset(c, 0, sizeof *c);
    if (nonce != QC_NONCE_RANDOM && (nonce < 0 || nonce > (int64_t)0xFFFFFFFF)) {
        if (err != NULL) {
            err->kind = -1;
            snprintf(err->message, sizeof err->message, "nonce %lld: a nonce is 0 .. 2**32 - 1, or QC_NONCE_RANDOM", (long long)nonce);
        }
        return -1;
    }
    if (qc_decoder_init(&c->dec, s, cfg, err) < 0) return -1;
    c->nonce = nonce == QC_NONCE_RANDOM ? qc__draw_nonce(c) : (uint32_t)nonce;
    c->rseq = 0;
    c->due = 1;     /* a client starts with a reply due: a hello request, asking to be connected */
    c->idle = 0;    /* no call of qc_client_reply yet (keep-alives, wire-format 18) */
    return 0;
}

int qc_client_init(qc_client *c, const qc_schema *s, const uint8_t *key, size_t key_len, size_t max_bytes, int64_t nonce, qc_error *err) {
    qc_decoder_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.key = key;
    cfg.key_len = key_len;
    cfg.max_bytes = max_bytes;
    return qc_client_init_config(c, s, &cfg, nonce, err);
}

void qc_client_free(qc_client *c) { if (c != NULL) qc_decoder_free(&c->dec); }   /* NULL: like free(NULL) */

int qc_client_receive(qc_client *c, const uint8_t *data, size_t len, qc_result *res) {
    int st = qc_decoder_datagram(&c->dec, data, len, res);
    /* due: a view, a hello adopted (a new stream), a refusal of kind no-hello or baseline;
       nothing else, so that junk cannot make the client send */
    if (st == QC_SNAPSHOT || (st == QC_PENDING && res->adopted) || st == QC_E_NO_HELLO || st == QC_E_BASELINE) c->due = 1;
    return st;
}

static void qc__put_le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

size_t qc_client_reply(qc_client *c, uint8_t *out) {
    const qc_decoder *d = &c->dec;
    size_t n;
    if (!c->due) {
        /* a keep-alive (wire-format 18): the reply all the same when the 31 calls before this one
           returned nothing */
        if (c->idle < QC_KEEPALIVE_CALLS - 1) {
            c->idle++;
            return 0;
        }
    }
    c->idle = 0;                                /* any reply made starts the count again */
    c->due = 0;
    qc__put_le32(out + 2, c->nonce);
    qc__put_le32(out + 6, c->rseq);
    c->rseq++;                                  /* mod 2**32 */
    if (d->adopted) {
        /* an ack: has_latest, latest, and the possible baselines among the 32 before it */
        uint32_t acks = 0;
        out[0] = 0x41;
        out[1] = d->latest >= 0 ? 1 : 0;
        if (d->latest >= 0) {
            int i;
            for (i = 0; i < 32 && i + 1 < d->history; i++)
                if (qc__find(d, (d->latest - 1 - i) & QC__M) >= 0) acks |= (uint32_t)1 << i;
        }
        out[10] = (uint8_t)(d->latest >= 0 ? d->latest : 0);
        out[11] = (uint8_t)(d->latest >= 0 ? d->latest >> 8 : 0);
        qc__put_le32(out + 12, acks);
        n = 16;
        if (d->keyed) qc__put_le64(out + n, qc_siphash(d->k_r, out, n));
        else qc__put_le32(out + n, qc_crc32c(out, n, d->seed_r));
    } else {
        /* a hello request: the client holds no stream */
        out[0] = 0x48;
        out[1] = 0;
        memcpy(out + 10, d->schema->fingerprint, 16);
        n = 26;
        if (d->keyed) qc__put_le64(out + n, qc_siphash(d->k_q, out, n));
        else qc__put_le32(out + n, qc_crc32c(out, n, qc_crc32c((const uint8_t *)"quantcodec hello request", 24, 0)));
    }
    return n + (size_t)d->tlen;
}

/* ---- snapshot interpolation (docs/interpolation.md) ------------------------------------------ */

static void *qc__ip_alloc(qc_interp *ip, size_t n) {
    void *p = ip->al.alloc(ip->al.ud, n ? n : 1);
    if (p != NULL) ip->bytes += n ? n : 1;
    return p;
}
static void qc__ip_free(qc_interp *ip, void *p, size_t n) {
    if (p == NULL) return;
    ip->al.free(ip->al.ud, p, n ? n : 1);
    ip->bytes -= n ? n : 1;
}

/* a scalar codec's column rule: 0 linear, 1 angle, 2 held; -1 none */
static int qc__ip_rule(const qc_codec *c, double *full, double *lo) {
    QC__NOFMA
    *full = 0.0; *lo = 0.0;
    switch (c->kind) {
    case QC_BOUNDED: case QC_FIXED: case QC_POWERCURVE: case QC_HALF: case QC_GRID: return 0;
    case QC_UINT: case QC_INT: case QC_INTRANGE: case QC_ENUM: case QC_BOOL: return 2;
    case QC_ANGLE:
        *full = c->deg ? 360.0 : 2.0 * 3.14159265358979323846;
        *lo = c->mode ? -*full / 2.0 : 0.0;
        return 1;
    default: return -1;
    }
}

void qc_interp_free(qc_interp *ip) {
    int i, nf, nv;
    if (ip == NULL || ip->schema == NULL) return;   /* NULL: like free(NULL); freed already: nothing */
    nf = ip->schema->nfields; nv = ip->nvalues;
    for (i = 0; i < ip->nviews; i++) qc__ip_free(ip, ip->views[i].ids, ip->views[i].bytes);
    qc__ip_free(ip, ip->views, ((size_t)ip->capacity + 1) * sizeof(qc_interp_view));
    qc__ip_free(ip, ip->offset, (size_t)(nf + 1) * sizeof(int));
    qc__ip_free(ip, ip->frule, (size_t)(nf + 1) * sizeof(int));
    qc__ip_free(ip, ip->crule, (size_t)(nv + 1) * sizeof(int));
    qc__ip_free(ip, ip->cfull, (size_t)(nv + 1) * sizeof(double));
    qc__ip_free(ip, ip->clo, (size_t)(nv + 1) * sizeof(double));
    qc__ip_free(ip, ip->out, ip->out_cap * sizeof(double));
    memset(ip, 0, sizeof *ip);
}

int qc_interp_init(qc_interp *ip, const qc_schema *s, int capacity, double max_extrapolation, const qc_allocator *al, qc_error *err) {
    int f, k, col;
    memset(ip, 0, sizeof *ip);
    if (capacity < 2) return qc__fail(err, "qc_interp_init: capacity must be an integer of at least 2, got %d", capacity);
    if ((size_t)capacity >= SIZE_MAX / sizeof(qc_interp_view))
        return qc__fail(err, "qc_interp_init: a capacity of %d views cannot be allocated", capacity);
    if (!(max_extrapolation >= 0.0 && max_extrapolation - max_extrapolation == 0.0))
        return qc__fail(err, "qc_interp_init: max_extrapolation must be finite and >= 0, got %g", max_extrapolation);
    ip->al = qc__allocator_of(al);
    ip->schema = s;
    ip->capacity = capacity;
    ip->max_extrapolation = max_extrapolation;
    for (f = 0; f < s->nfields; f++) ip->nvalues += s->fields[f].nvalues;
    ip->views = (qc_interp_view *)qc__ip_alloc(ip, ((size_t)capacity + 1) * sizeof(qc_interp_view));
    ip->offset = (int *)qc__ip_alloc(ip, (size_t)(s->nfields + 1) * sizeof(int));
    ip->frule = (int *)qc__ip_alloc(ip, (size_t)(s->nfields + 1) * sizeof(int));
    ip->crule = (int *)qc__ip_alloc(ip, (size_t)(ip->nvalues + 1) * sizeof(int));
    ip->cfull = (double *)qc__ip_alloc(ip, (size_t)(ip->nvalues + 1) * sizeof(double));
    ip->clo = (double *)qc__ip_alloc(ip, (size_t)(ip->nvalues + 1) * sizeof(double));
    if (!ip->views || !ip->offset || !ip->frule || !ip->crule || !ip->cfull || !ip->clo) {
        qc_interp_free(ip);
        return qc__fail(err, "qc_interp_init: out of memory");
    }
    col = 0;
    for (f = 0; f < s->nfields; f++) {
        const qc_codec *c = s->fields[f].codec;
        ip->offset[f] = col;
        if (c->kind == QC_NEARLYZERO) c = c->inner;
        ip->frule[f] = c->kind == QC_QUAT ? 1 : c->kind == QC_UNITVECTOR ? 2 : 0;
        for (k = 0; k < s->fields[f].nvalues; k++, col++) {
            const qc_codec *cc = c->kind == QC_VECTOR ? &c->inner[k] : c;
            if (ip->frule[f]) { ip->crule[col] = 0; ip->cfull[col] = ip->clo[col] = 0.0; continue; }
            ip->crule[col] = qc__ip_rule(cc, &ip->cfull[col], &ip->clo[col]);
            if (ip->crule[col] < 0) {
                const char *name = s->fields[f].name;
                qc_interp_free(ip);
                return qc__fail(err, "qc_interp_init: field '%s': no interpolation rule for its codec", name);
            }
        }
    }
    return 0;
}

int64_t qc_interp_tick(const qc_interp *ip, uint16_t seq) {
    int64_t d;
    if (!ip->has_newest) return seq;
    d = (int64_t)(((uint64_t)seq - (uint64_t)ip->newest) & 0xFFFFu);
    return ip->newest + (d >= 0x8000 ? d - 0x10000 : d);
}

int qc_interp_push(qc_interp *ip, const qc_snapshot *view) {
    const qc_schema *s = ip->schema;
    int64_t t;
    int i, at, f;
    size_t e, bytes;
    qc_interp_view v;
    /* a decoder's view carries its allocation, qc_snapshot_bytes(its schema, n): rows of
       another width are another schema's, read past their end (fewer slots) or misread (more);
       a view the caller built has bytes 0 and is taken on trust */
    if (view->bytes != 0 && view->bytes != qc_snapshot_bytes(s, view->n)) return -2;
    t = qc_interp_tick(ip, view->seq);
    for (i = 0; i < ip->nviews; i++)
        if (ip->views[i].tick == t) { ip->stats.dropped++; return 0; }
    if (ip->nviews >= ip->capacity && t < ip->views[0].tick) { ip->stats.dropped++; return 0; }
    bytes = view->n * 8 + view->n * (size_t)ip->nvalues * sizeof(double);
    v.tick = t; v.n = view->n; v.bytes = bytes;
    v.ids = (uint64_t *)qc__ip_alloc(ip, bytes);
    if (v.ids == NULL) return -1;
    v.values = (double *)(v.ids + view->n);
    if (view->n) memcpy(v.ids, view->ids, view->n * 8);
    for (e = 0; e < view->n; e++)
        for (f = 0; f < s->nfields; f++)
            qc_field_values(s, f, view->rows + e * (size_t)s->nslots, v.values + e * (size_t)ip->nvalues + ip->offset[f]);
    if (ip->has_last && (double)t <= ip->last_t) ip->stats.late++;
    for (at = 0; at < ip->nviews && ip->views[at].tick < t; at++) {}
    memmove(ip->views + at + 1, ip->views + at, (size_t)(ip->nviews - at) * sizeof(qc_interp_view));
    ip->views[at] = v;
    ip->nviews++;
    if (ip->nviews > ip->capacity) {
        qc__ip_free(ip, ip->views[0].ids, ip->views[0].bytes);
        memmove(ip->views, ip->views + 1, (size_t)(ip->nviews - 1) * sizeof(qc_interp_view));
        ip->nviews--;
    }
    if (!ip->has_newest || t > ip->newest) { ip->newest = t; ip->has_newest = 1; }
    ip->stats.pushed++;
    return 1;
}

void qc_interp_reset(qc_interp *ip) {
    int i;
    for (i = 0; i < ip->nviews; i++) qc__ip_free(ip, ip->views[i].ids, ip->views[i].bytes);
    ip->nviews = 0;
    ip->has_newest = 0;             /* the next push: its tick its seq */
    ip->newest = 0;
    ip->has_last = 0;               /* no render time sampled */
    ip->last_t = 0.0;
}

/* index of id in ids[0..n) (ascending), or -1 */
static ptrdiff_t qc__ip_find(const uint64_t *ids, size_t n, uint64_t id) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < id) lo = mid + 1; else hi = mid;
    }
    return lo < n && ids[lo] == id ? (ptrdiff_t)lo : -1;
}

static double qc__ip_short(double d, double full) { QC__NOFMA return d - full * floor(d / full + 0.5); }
static double qc__ip_wrap(double v, double full, double lo) { QC__NOFMA return v - full * floor((v - lo) / full); }

/* nlerp of k components (k 4: hemisphere, q and -q alike) */
static void qc__ip_nlerp(const double *x0, const double *x1, double a, int k, double *out) {
    QC__NOFMA
    double y[4], q[4], n = 0.0, dot = 0.0;
    int i;
    for (i = 0; i < k; i++) y[i] = x1[i];
    if (k == 4) {
        for (i = 0; i < k; i++) dot = dot + x0[i] * x1[i];
        if (dot < 0.0) for (i = 0; i < k; i++) y[i] = -y[i];
    }
    for (i = 0; i < k; i++) { q[i] = x0[i] + (y[i] - x0[i]) * a; n = n + q[i] * q[i]; }
    n = sqrt(n);
    if (n == 0.0) { for (i = 0; i < k; i++) out[i] = x0[i]; return; }
    for (i = 0; i < k; i++) out[i] = q[i] / n;
}

/* how: 0 hold, 1 between, 2 extrapolate */
static int qc__ip_out(qc_interp *ip, const qc_interp_view *A, const qc_interp_view *O, int how, double x, qc_interp_frame *fr) {
    QC__NOFMA
    const qc_schema *s = ip->schema;
    size_t need = A->n * (size_t)ip->nvalues, e;
    int nv = ip->nvalues;
    if (need > ip->out_cap) {
        double *nb = (double *)qc__ip_alloc(ip, need * sizeof(double));
        if (nb == NULL) return -1;
        qc__ip_free(ip, ip->out, ip->out_cap * sizeof(double));
        ip->out = nb;
        ip->out_cap = need;
    }
    if (need) memcpy(ip->out, A->values, need * sizeof(double));
    if (how != 0) {
        for (e = 0; e < A->n; e++) {
            ptrdiff_t j = qc__ip_find(O->ids, O->n, A->ids[e]);
            const double *ra = A->values + e * (size_t)nv, *ro;
            double *r = ip->out + e * (size_t)nv;
            int f;
            if (j < 0) continue;
            ro = O->values + (size_t)j * (size_t)nv;
            for (f = 0; f < s->nfields; f++) {
                int c0 = ip->offset[f], c;
                if (ip->frule[f]) {
                    if (how == 1) qc__ip_nlerp(ra + c0, ro + c0, x, ip->frule[f] == 1 ? 4 : 3, r + c0);
                    continue;
                }
                for (c = c0; c < c0 + s->fields[f].nvalues; c++) {
                    double xa = ra[c], xo = ro[c], full = ip->cfull[c];
                    if (ip->crule[c] == 2) continue;
                    if (how == 1)
                        r[c] = ip->crule[c] == 0 ? xa + (xo - xa) * x
                             : qc__ip_wrap(xa + qc__ip_short(xo - xa, full) * x, full, ip->clo[c]);
                    else
                        r[c] = ip->crule[c] == 0 ? xa + (xa - xo) * x
                             : qc__ip_wrap(xa + qc__ip_short(xa - xo, full) * x, full, ip->clo[c]);
                }
            }
        }
    }
    fr->n = A->n;
    fr->ids = A->ids;
    fr->values = ip->out;
    fr->a = A->tick;
    fr->has_b = how == 1;
    fr->b = how == 1 ? O->tick : 0;
    fr->alpha = x;
    return 0;
}

int qc_interp_sample(qc_interp *ip, double t, qc_interp_frame *out) {
    QC__NOFMA
    int ia = -1, i;
    const qc_interp_view *A;
    if (ip->nviews == 0) return -1;
    if (t == t) {                   /* (a NaN is no render time: it leaves the latest one) */
        if (!ip->has_last || t > ip->last_t) ip->last_t = t;
        ip->has_last = 1;
    }
    for (i = 0; i < ip->nviews; i++) if ((double)ip->views[i].tick <= t) ia = i;
    if (ia < 0) {
        if (qc__ip_out(ip, &ip->views[0], NULL, 0, 0.0, out) < 0) return -1;
        ip->stats.early++;
        return 0;
    }
    A = &ip->views[ia];
    if (ia + 1 < ip->nviews) {
        const qc_interp_view *B = &ip->views[ia + 1];
        return qc__ip_out(ip, A, B, 1, (t - (double)A->tick) / (double)(B->tick - A->tick), out);
    }
    if (ia == 0 || t == (double)A->tick) return qc__ip_out(ip, A, NULL, 0, 0.0, out);
    {
        const qc_interp_view *P = &ip->views[ia - 1];
        double d = t - (double)A->tick, e = ip->max_extrapolation < d ? ip->max_extrapolation : d;
        if (qc__ip_out(ip, A, P, 2, e / (double)(A->tick - P->tick), out) < 0) return -1;
        ip->stats.extrapolated++;
        return 0;
    }
}

#ifdef QC__GCC_OPTIONS_PUSHED
#pragma GCC pop_options
#undef QC__GCC_OPTIONS_PUSHED
#endif

#ifdef __cplusplus
}
#endif

#endif /* QUANTCODEC_IMPLEMENTATION_DONE */
#endif /* QUANTCODEC_IMPLEMENTATION */
