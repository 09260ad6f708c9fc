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

