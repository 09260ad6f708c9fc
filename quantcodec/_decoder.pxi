# The snapshot decoder (included into _delta.pyx, one module with the Layout it reads: every step
# below inlines into the one call): DeltaDecoder, and the pipeline of steps its _decode runs over
# one packet's context (dec_t, _delta.pxd), each named after its step of docs/wire-format.md's
# packet; each returns D_OK or the error it recorded (dec_fail):
#
#   dec_read_head       the removed set, the new entities' count (and the client's limit),
#   dec_read_new_ids    their ids,
#   dec_read_records    their records (whole, every slot's fixed width)
#   dec_merge_rows      the kept baseline rows and the new rows in id order into the output
#   dec_read_sets       the changed entities (dec_classes: the context classes first), per field
#                       the changed entities whose field changed (dec_read_field_sets), and the
#                       components' parameters (dec_read_params)
#   dec_read_changed    the changed fields: the per-packet tables (dec_tables), then the fast path
#                       (_delta_fast.h) for the entities it takes, dec_read_entity (slot by slot:
#                       dec_read_ord_field, dec_read_slot, dec_read_quat) for the others
#   dec_finish          nothing but zero padding after the end


ctypedef struct rd_t:     # a read off a reader held in locals: status, value, new position
    int st
    int alt
    Py_ssize_t pos
    uint64_t v


cdef enum:
    RD_BITS = 0         # br_get of k bits
    RD_EGX = 1          # get_egx(k, b)
    RD_EGX_ALT = 2      # get_egx(k, b) whose escape carries one more bit (rd_t.alt)


cdef rd_t rd_slow(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t pos, int k, int b,
                  int how) noexcept nogil:
    """A read at bit ``pos`` for the slot-by-slot loop's rare cases (escapes, the packet's last 8
    bytes, flips), out of line: the new position comes back in the result, so the caller's own
    never has its address taken."""
    cdef br_t t
    cdef rd_t o
    br_init(&t, buf, nbytes)
    t.pos = pos
    o.alt = 0
    o.v = 0
    if how == RD_BITS:
        o.st = D_SHORT if br_get(&t, k, &o.v) < 0 else D_OK
    else:
        o.st = get_egx(&t, k, b, &o.v, &o.alt if how == RD_EGX_ALT else NULL)
    o.pos = t.pos
    return o


cdef inline rd_t rd_egx(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t pos, const qc_dcomp* d,
                        int how) noexcept nogil:
    """One component's Exp-Golomb code (get_egx with the packet's masks, qc_egx_fast_m inline,
    rd_slow for the rest)."""
    cdef rd_t o
    cdef int st = qc_egx_fast_m(buf, nbytes, &pos, d.k, d.emask, d.kmask, d.umax, &o.v)
    if st == 1:
        o.st = D_OK
        o.alt = 0
        o.pos = pos
        return o
    if st == 0:
        return rd_slow(buf, nbytes, pos, d.k, d.b, how)
    o.st = D_STRUCT
    o.alt = 0
    o.pos = pos
    return o


cdef inline rd_t rd_flag_into(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t pos,
                              bint implied, uint64_t* orw, const uint64_t* br, Py_ssize_t s,
                              Py_ssize_t span, uint64_t* dacc) noexcept nogil:
    """A NearlyZero flag at slot s: 1 without reading if ``implied``, else one bit (position by
    value, as rd_slow), stored into the output row; a 0 flag zeroes the ``span`` slots it
    governs. What differs from the baseline row is or'ed into ``dacc``."""
    cdef rd_t o
    cdef uint64_t v = 1
    cdef Py_ssize_t t
    if not implied and not qc_bits_fast(buf, nbytes, &pos, 1, &v):
        o = rd_slow(buf, nbytes, pos, 1, 0, RD_BITS)
        if o.st:
            return o
        pos = o.pos
        v = o.v
    o.st = D_OK
    o.v = v
    o.pos = pos
    o.alt = 0
    orw[s] = v
    dacc[0] |= v ^ br[s]
    if v == 0:
        for t in range(s + 1, s + 1 + span):
            orw[t] = 0
            dacc[0] |= br[t]
    return o


cdef inline rd_t rd_ord(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t pos, const comp_t* cp,
                        const qc_dcomp* d, uint64_t bw, uint64_t pw, bint usep, int sign,
                        int64_t num, int64_t den) noexcept nogil:
    """One ordered component read at bit ``pos``: its difference, and its code rebuilt from the
    baseline's carrier ``bw`` (and, with ``usep``, extrapolated through ``pw``), sign-extended
    if ``sign``. Status D_OK or a read error, the code in .v, the new position in .pos (the
    caller's own position never has its address taken)."""
    cdef uint64_t ref
    cdef rd_t o = rd_egx(buf, nbytes, pos, d, RD_EGX)
    if o.st:
        return o
    ref = top_lin(bw, cp)
    if usep:
        ref = qc_top_ref(ref, top_lin(pw, cp), cp.sh, num, den)
    ref = top_code(ref, o.v, cp)
    # signed codes are carried sign-extended
    o.v = <uint64_t>((<int64_t>ref) >> cp.sh) if sign else ref >> cp.sh
    return o


cdef inline int dec_fail(dec_t* x, int kind, const char* msg) noexcept nogil:
    x.err.kind = kind
    x.err.msg = msg
    return kind


cdef inline bint dec_valid(const dec_t* x, Py_ssize_t s, uint64_t v) noexcept nogil:
    """Whether v is a valid code of slot s (a full-range slot skips the test, a Quat takes its
    table)."""
    cdef const sinfo_t* si = &x.SI[s]
    return si.allvalid or (quat_valid_tab(si, v) if si.qtab != NULL else slot_valid(&x.slots[s], v))


# ------------------------------------------------------------------------------------------------
# the head: removed entities, new entities


cdef inline int dec_read_head(dec_t* x) noexcept nogil:
    """The removed set and the new entities' count, checked against the packet and the
    client's limit before anything is allocated for them."""
    cdef br_t* r = &x.r
    cdef Py_ssize_t m = x.m
    cdef uint64_t v
    cdef int st
    x.nrem = 0
    x.nnew = 0
    if buf_need(&x.b.removed, sizeof(Py_ssize_t) * (m + 1)):
        return dec_fail(x, D_NOMEM, b"out of memory")
    x.removed = <Py_ssize_t*>x.b.removed.p
    if x.bdist and m:
        st = get_set(r, x.removed, &x.nrem, m)
        if st:
            return dec_fail(x, st, b"bad set of removed entities")
    st = get_egx(r, 0, 32, &v, NULL)
    if st:
        return dec_fail(x, st, b"bad count of new entities")
    # every new entity takes at least one bit (its id gap): a count beyond the bits left
    # is a lie, caught before anything is allocated for it
    if <Py_ssize_t>v > br_remaining(r) or v > MAX_ENTITIES - <uint64_t>(m - x.nrem):
        return dec_fail(x, D_STRUCT, b"count of new entities larger than the packet can hold")
    x.nnew = <Py_ssize_t>v
    # docs/wire-format.md section 19: the client's limit, known now that the snapshot's
    # entities are, before anything is allocated for them
    if m - x.nrem + x.nnew > x.max_entities:
        x.err.code = <uint64_t>(m - x.nrem + x.nnew)
        return dec_fail(x, D_LIMITS, b"")
    x.kept = m - x.nrem
    return D_OK


cdef inline int dec_read_new_ids(dec_t* x) noexcept nogil:
    """The new entities' ids: ascending, Exp-Golomb gaps."""
    cdef br_t* r = &x.r
    cdef Py_ssize_t i, n = x.nnew
    cdef uint64_t v, prev = 0
    cdef uint64_t* nid
    cdef int st, kid
    if buf_need(&x.b.newid, sizeof(uint64_t) * n) or \
            buf_need(&x.b.newrow, sizeof(uint64_t) * n * (x.S if x.S else 1)):
        return dec_fail(x, D_NOMEM, b"out of memory")
    nid = <uint64_t*>x.b.newid.p
    x.nid = nid
    x.nrow = <uint64_t*>x.b.newrow.p
    if br_get(r, ID_KBITS, &v) < 0:
        return dec_fail(x, D_SHORT, b"")
    kid = <int>v
    x.kid = kid
    for i in range(n):
        st = get_egx(r, kid, 64, &v, NULL)
        if st:
            return dec_fail(x, st, b"bad id of a new entity")
        if i:
            if v >= 0xFFFFFFFFFFFFFFFFULL - prev:
                return dec_fail(x, D_STRUCT, b"new entity id beyond 2**64 - 1")
            v = prev + 1 + v
        nid[i] = v
        prev = v
    return D_OK


cdef inline int dec_read_records(dec_t* x) noexcept nogil:
    """The new entities' whole records (every slot's fixed width) into x.nrow, each code
    checked as the changed fields' are. Plan.get_row's rule, with the reader held in locals (as
    dec_read_entity) and the decoder's own validity tests. An error leaves the position at the
    start of the code."""
    cdef const uint8_t* buf = x.r.buf
    cdef Py_ssize_t nbytes = x.r.nbytes, pos = x.r.pos, S = x.S, i, s, t
    cdef const sinfo_t* SI = x.SI
    cdef const sinfo_t* si
    cdef uint64_t* nrow = x.nrow
    cdef uint64_t* row
    cdef uint64_t v
    cdef int bits, st = D_OK
    cdef rd_t o
    for i in range(x.nnew):
        row = nrow + i * S
        s = 0
        while s < S:
            si = &SI[s]
            bits = si.bits
            if bits > 57 or not qc_bits_fast(buf, nbytes, &pos, bits, &v):
                o = rd_slow(buf, nbytes, pos, bits, 0, RD_BITS)
                if o.st:
                    st = D_SHORT
                    break
                pos = o.pos
                v = o.v
            if si.role == R_FLAG:
                row[s] = v
                if v == 0:
                    for t in range(s + 1, s + 1 + si.span):
                        row[t] = 0
                    s += si.span
                s += 1
                continue
            if si.sign:             # (the carriers of signed kinds: sign-extended)
                v = from_wire(&x.slots[s].d, v)
            row[s] = v
            if not dec_valid(x, s, v):
                pos -= bits
                st = D_CODE
                break
            s += 1
        if st:
            x.r.pos = pos
            x.err.id = x.nid[i]
            x.err.slot = <int>s
            x.err.code = row[s] if st == D_CODE else 0
            return dec_fail(x, st, b"")
    x.r.pos = pos
    return D_OK


# ------------------------------------------------------------------------------------------------
# the output rows


cdef inline void _copy_rows(uint64_t* oid, uint64_t* orow, const uint64_t* bid,
                            const uint64_t* brow, Py_ssize_t o, Py_ssize_t i, Py_ssize_t n,
                            Py_ssize_t S) noexcept nogil:
    # (no memcpy of 0 bytes: its pointers must be valid even then, and a 0-slot schema's rows
    # have none)
    if n and oid + o != bid + i:      # (a decoded snapshot that shares its baseline's ids)
        memcpy(oid + o, bid + i, sizeof(uint64_t) * n)
    if n and S:
        memcpy(orow + o * S, brow + i * S, sizeof(uint64_t) * S * n)


cdef inline int dec_merge_rows(dec_t* x) noexcept nogil:
    """The kept baseline rows and the new rows merged in id order into the output; runs of
    consecutive kept rows are copied in one go. The maps kept index -> baseline and output row
    (unless x.ident: the baseline's entities, row for row, the identity, not written)."""
    cdef Py_ssize_t S = x.S, m = x.m, nnew = x.nnew, nrem = x.nrem
    cdef Py_ssize_t i = 0, xr = 0, j = 0, o = 0, e = 0, run_i = 0, run_o = 0, run_n = 0
    cdef const uint64_t* bid = x.bid
    cdef const uint64_t* brow = x.brow
    cdef const uint64_t* nid = x.nid
    cdef const uint64_t* nrow = x.nrow
    cdef const Py_ssize_t* removed = x.removed
    cdef Py_ssize_t* kept_base = x.kept_base
    cdef Py_ssize_t* kept_out = x.kept_out
    cdef uint64_t* oid = x.oid
    cdef uint64_t* orow = x.orow
    if x.ident:
        _copy_rows(oid, orow, bid, brow, 0, 0, m, S)
        i = m
    while i < m or j < nnew:
        if i < m and xr < nrem and removed[xr] == i:
            if run_n:
                _copy_rows(oid, orow, bid, brow, run_o, run_i, run_n, S)
                run_n = 0
            xr += 1
            i += 1
            continue
        if i < m and (j >= nnew or bid[i] < nid[j]):
            if run_n == 0:
                run_i = i
                run_o = o
            run_n += 1
            kept_base[e] = i
            kept_out[e] = o
            e += 1
            i += 1
            o += 1
        else:
            if i < m and bid[i] == nid[j]:
                x.err.id = nid[j]
                return dec_fail(x, D_STRUCT, b"a new entity has the id of a kept one")
            if run_n:
                _copy_rows(oid, orow, bid, brow, run_o, run_i, run_n, S)
                run_n = 0
            oid[o] = nid[j]
            memcpy(orow + o * S, nrow + j * S, sizeof(uint64_t) * S)
            j += 1
            o += 1
    if run_n:
        _copy_rows(oid, orow, bid, brow, run_o, run_i, run_n, S)
    return D_OK


# ------------------------------------------------------------------------------------------------
# the sets: changed entities, changed fields, parameters


cdef inline int dec_classes(dec_t* x) noexcept nogil:
    """With an extrapolation snapshot: each kept entity's context class (1: it changed between
    the two references, or is not in the older one) and its row there (x.kept_pred)."""
    cdef Py_ssize_t S = x.S, m = x.m, p = x.p, kept = x.kept, e, kb, pj = 0
    cdef Py_ssize_t n1 = 0, n0 = 0
    cdef const uint64_t* brow = x.brow
    cdef const uint64_t* prow = x.prow
    cdef const uint64_t* bid = x.bid
    cdef const uint64_t* pid = x.pid
    cdef const Py_ssize_t* kept_base = x.kept_base
    cdef Py_ssize_t* kept_pred = x.kept_pred
    cdef Py_ssize_t* cls1 = x.cls1
    cdef Py_ssize_t* cls0 = x.cls0
    cdef const uint8_t* ctxv
    cdef uint8_t* ctxw
    cdef int ctx, same
    if x.nrem == 0 and p == m and _same_ids(x.pid, x.bid, m):
        # the common case: the same entities in both references, row for row
        # (nrem == 0: kept index e is baseline row e, and extrapolation row e)
        x.pred_ident = 1
        if x.ctxmap != NULL:
            ctxv = x.ctxmap         # known from decoding the baseline (SnapshotData._diff)
        else:
            if buf_need(&x.b.cctx, m + 1):
                return dec_fail(x, D_NOMEM, b"out of memory")
            ctxw = <uint8_t*>x.b.cctx.p
            qc_rows_differ(brow, prow, m, S, ctxw)
            ctxv = ctxw
        x.ctxv = ctxv
        for e in range(kept):
            n1 += ctxv[e]
        x.n1 = n1
        x.n0 = kept - n1
        return D_OK
    same = p == m and _same_ids(pid, bid, m)
    for e in range(kept):
        kb = e if x.ident else kept_base[e]
        if same:
            kept_pred[e] = kb
            ctx = rows_differ(brow + kb * S, prow + kb * S, S)
        else:
            kept_pred[e] = -1
            ctx = 1
            while pj < p and pid[pj] < bid[kb]:
                pj += 1
            if pj < p and pid[pj] == bid[kb]:
                kept_pred[e] = pj
                ctx = rows_differ(brow + kb * S, prow + pj * S, S)
        if ctx:
            cls1[n1] = e
            n1 += 1
        else:
            cls0[n0] = e
            n0 += 1
    x.n1 = n1
    x.n0 = n0
    return D_OK


cdef inline int dec_read_changed_set(dec_t* x) noexcept nogil:
    """The changed entities: one set over all kept entities, or (with an extrapolation
    snapshot) one over those that changed between the two references, then one over the
    others, merged back into kept indices (x.chg, ascending)."""
    cdef br_t* r = &x.r
    cdef Py_ssize_t m1 = 0, m0 = 0, a1 = 0, a0 = 0, nchg = 0
    cdef Py_ssize_t* cls1 = x.cls1
    cdef Py_ssize_t* cls0 = x.cls0
    cdef Py_ssize_t* set1 = x.set1
    cdef Py_ssize_t* set0 = x.set0
    cdef Py_ssize_t* chg = x.chg
    cdef int st
    if not x.pdist:
        if x.kept:
            st = get_set(r, x.chg, &nchg, x.kept)
            if st:
                return dec_fail(x, st, b"bad set of changed entities")
        x.nchg = nchg
        return D_OK
    if x.n1:
        st = get_set(r, set1, &m1, x.n1)
        if st:
            return dec_fail(x, st, b"bad set of changed entities")
    if x.n0:
        st = get_set(r, set0, &m0, x.n0)
        if st:
            return dec_fail(x, st, b"bad set of changed entities")
    if x.pred_ident:
        # the changed kept indices from the two classes' positions (cls1 / cls0 lend their
        # room to the classes' bit masks, (m + 63) / 64 words each)
        nchg = qc_changed_rows(x.ctxv, x.kept, set1, m1, set0, m0, <uint64_t*>cls1,
                               <uint64_t*>cls0, x.chg)
        if nchg < 0:
            return dec_fail(x, D_STRUCT, b"bad set of changed entities")
        a1 = m1
        a0 = m0
    while a1 < m1 or a0 < m0:
        if a0 >= m0 or (a1 < m1 and cls1[set1[a1]] < cls0[set0[a0]]):
            chg[nchg] = cls1[set1[a1]]
            a1 += 1
        else:
            chg[nchg] = cls0[set0[a0]]
            a0 += 1
        nchg += 1
    x.nchg = nchg
    return D_OK


cdef inline int dec_read_field_sets(dec_t* x) noexcept nogil:
    """Per field, the changed entities whose field changed (x.fch, a byte an entity and field),
    and which fields any changed (x.fmode)."""
    cdef Py_ssize_t F = x.F, nchg = x.nchg, f, a, m1 = 0
    cdef Py_ssize_t* set1 = x.set1
    cdef uint8_t* fch
    cdef int st
    if buf_need(&x.b.fch, nchg * F + 1):
        return dec_fail(x, D_NOMEM, b"out of memory")
    fch = <uint8_t*>x.b.fch.p
    x.fch = fch
    memset(fch, 0, nchg * F)
    for f in range(F):
        st = get_set(&x.r, set1, &m1, nchg)
        if st:
            return dec_fail(x, st, b"bad set of changed fields")
        x.fmode[f] = m1 > 0
        if m1 == nchg:      # (every changed entity: the common case moving)
            for a in range(nchg):
                fch[a * F + f] = 1
        else:
            for a in range(m1):
                fch[set1[a] * F + f] = 1
    return D_OK


cdef inline int dec_read_params(dec_t* x) noexcept nogil:
    """Per component of a changed field: whether it is extrapolated, and its Exp-Golomb
    parameter (at most its width)."""
    cdef const comp_t* CI = x.CI
    cdef Py_ssize_t f, c
    cdef uint64_t v
    for f in range(x.F):
        if not x.fmode[f]:
            # (not read in this packet: defined values for the per-packet table, whose masks
            # shift by egx_E(k, b))
            for c in range(x.FI[f].c0, x.FI[f].c1):
                x.pp[c] = 0
                x.kk[c] = 0
            continue
        for c in range(x.FI[f].c0, x.FI[f].c1):
            x.pp[c] = 0
            if x.pdist and CI[c].predictable:
                if br_get(&x.r, 1, &v) < 0:
                    return dec_fail(x, D_SHORT, b"")
                x.pp[c] = <uint8_t>v
            if br_get(&x.r, kbits_for(CI[c].b), &v) < 0:
                return dec_fail(x, D_SHORT, b"")
            if <int>v > CI[c].b:
                return dec_fail(x, D_STRUCT, b"Exp-Golomb parameter above the code width")
            x.kk[c] = <uint8_t>v
    return D_OK


cdef inline int dec_read_sets(dec_t* x) noexcept nogil:
    """The changed entities, the changed fields, and the changed fields' parameters; x.nchg 0:
    nothing more (the caller finishes)."""
    cdef int st
    if x.pdist:
        st = dec_classes(x)
        if st:
            return st
    st = dec_read_changed_set(x)
    if st or x.nchg == 0:
        return st
    st = dec_read_field_sets(x)
    if st:
        return st
    return dec_read_params(x)


# ------------------------------------------------------------------------------------------------
# the changed fields


cdef inline void dec_comp_table(dec_t* x) noexcept nogil:
    """Each component's coding in this packet (qc_dcomp, the one table of both paths)."""
    cdef const comp_t* CI = x.CI
    cdef const sinfo_t* SI = x.SI
    cdef qc_dcomp* dc = x.dc
    cdef const qdesc* qd
    cdef Py_ssize_t c, s
    cdef int b, k
    for c in range(x.C):
        b = CI[c].b
        k = x.kk[c]
        s = CI[c].slot
        qd = &x.slots[s].d
        dc[c].k = k
        dc[c].b = b
        dc[c].p = x.pp[c]
        dc[c].E = egx_E(k, b)
        dc[c].emask = ((<uint64_t>1) << dc[c].E) - 1
        dc[c].kmask = qc_mask(k)
        dc[c].umax = qc_mask(b)
        dc[c].numc = <uint64_t>x.num if x.pp[c] and CI[c].predictable else 0
        dc[c].smt = CI[c].smt
        dc[c].sh = CI[c].sh
        dc[c].shift = CI[c].shift
        dc[c].slot = CI[c].slot
        dc[c].vmask = ~(<uint64_t>0) if SI[s].sign else qc_mask(b)
        dc[c].vbad = (<uint64_t>1) << 62
        if SI[s].sign:
            dc[c].vlo = <uint64_t>qd.smin
            dc[c].vspan = <uint64_t>qd.smax - <uint64_t>qd.smin
        else:
            dc[c].vlo = 0
            dc[c].vspan = qd.maxcode
            if qd.kind == K_POWER:
                dc[c].vbad = (<uint64_t>1) << (qd.bits - 1)


cdef inline void dec_field_table(dec_t* x, Py_ssize_t f) noexcept nogil:
    """Field f's shape in the fast path (qc_dfield): QC_F_NONE for the slot-by-slot loop."""
    cdef const comp_t* CI = x.CI
    cdef const sinfo_t* SI = x.SI
    cdef const finfo_t* fi = &x.FI[f]
    cdef qc_dfield* d = &x.dfd[f]
    cdef const qdesc* qd
    cdef Py_ssize_t c, s = fi.first
    d.c0 = fi.c0
    d.c1 = fi.c1
    d.shape = QC_F_NONE
    if fi.shape == SHAPE_ORD or fi.shape == SHAPE_NZORD:
        d.shape = QC_F_ORD if fi.shape == SHAPE_ORD else QC_F_NZORD
        d.slot = fi.nz
        d.span = SI[s].span if fi.shape == SHAPE_NZORD else 0
        d.plain = 1
        for c in range(fi.c0, fi.c1):
            qd = &x.slots[CI[c].slot].d
            if CI[c].smt or SI[CI[c].slot].sign or not SI[CI[c].slot].allvalid:
                d.plain = 0
            if (SI[CI[c].slot].role != R_ORD or CI[c].b > 32 or CI[c].shift
                    or (qd.kind == K_POWER and qd.maxcode != qc_mask(qd.bits))):
                d.shape = QC_F_NONE    # (not the shapes' components: none today)
    elif fi.shape == SHAPE_QUAT and SI[fi.quat].qtab != NULL:
        d.shape = QC_F_QUAT
        d.slot = fi.quat
        d.cb = SI[fi.quat].cb
        d.maxcode = SI[fi.quat].maxcode
        d.bits = SI[fi.quat].bits
        d.qtop = SI[fi.quat].qtop
        d.qsq = SI[fi.quat].qsq


cdef inline int dec_tables(dec_t* x, qc_fastrun* run, int* gf) noexcept nogil:
    """The per-packet tables of the changed fields (dec_comp_table, dec_field_table), and the
    fast path's run over them: 1 when it is taken (the layout not general; at most GEN_FAST
    changed fields of no fast shape, listed in gf: an entity with one of them changed skips
    it; a padded copy of the packet made), else 0. -1: out of memory."""
    cdef Py_ssize_t f, t, gen = 0, nbytes = x.r.nbytes
    cdef int fast = not x.general
    dec_comp_table(x)
    for f in range(x.F):
        dec_field_table(x, f)
        if x.fmode[f] and x.dfd[f].shape == QC_F_NONE:
            if gen == GEN_FAST:
                fast = 0
            else:
                gf[gen] = <int>f
                gen += 1
    # the fast path reads a copy of the packet with room after it for an entity's loads,
    # zeros, so that it takes the entities up to the end: one whose bits would run past
    # the packet is left to the slot-by-slot loop (which says where it is short)
    t = nbytes + 16 + (QC_FAST_MAXBITS * (x.C + x.S) + 7) // 8
    if fast:
        if buf_need(&x.b.pad, t):
            fast = 0
        else:
            memcpy(x.b.pad.p, x.r.buf, nbytes)
            memset(<uint8_t*>x.b.pad.p + nbytes, 0, t - nbytes)
    run.buf = <const uint8_t*>x.b.pad.p
    run.lastfast = nbytes
    run.nbits = 8 * nbytes
    run.fch = x.fch
    run.F = x.F
    run.S = x.S
    run.FD = x.dfd
    run.D = x.dc
    run.gf = gf
    run.gen = gen
    run.brow = x.brow
    run.prow = x.prow
    run.orow = x.orow
    run.chg = x.chg
    run.kept_base = NULL if x.ident else x.kept_base
    run.kept_out = NULL if x.ident else x.kept_out
    run.kept_pred = NULL if x.pred_ident else x.kept_pred
    run.num = x.num
    run.den = x.den
    return fast


cdef inline rd_t dec_read_quat(dec_t* x, Py_ssize_t pos, Py_ssize_t s, const uint64_t* br,
                               const uint64_t* pr) noexcept nogil:
    """One smallest-three slot s (or a unit vector: two components) of a changed field, at bit
    pos: the code in .v. The first component's code doubles as the "same largest component"
    signal (an escape with one more bit, 1: the absolute code, or the new index and the
    differences from the remapped baseline, follow)."""
    cdef const uint8_t* buf = x.r.buf
    cdef Py_ssize_t nbytes = x.r.nbytes
    cdef const sinfo_t* si = &x.SI[s]
    cdef const comp_t* cp
    cdef int c = si.comp, j, t, quat = si.role == R_QUAT, qs, qpred
    cdef uint64_t code, ref
    cdef rd_t o
    if quat:
        qs = 3 * si.cb
        qpred = pr != NULL and (pr[s] >> qs) == (br[s] >> qs)
        code = (br[s] >> qs) << qs
    else:
        qpred = pr != NULL
        code = 0
    for j in range(3 if quat else 2):
        cp = &x.CI[c + j]
        o = rd_egx(buf, nbytes, pos, &x.dc[c + j], RD_EGX_ALT if j == 0 and quat else RD_EGX)
        pos = o.pos
        if o.st:
            x.err.msg = b"bad difference"
            return o
        if o.alt:
            break
        ref = top_lin(br[s], cp)
        if qpred and x.dc[c + j].p:
            ref = qc_top_ref(ref, top_lin(pr[s], cp), cp.sh, x.num, x.den)
        code |= (top_code(ref, o.v, cp) >> cp.sh) << cp.shift
    if not o.alt:
        o.v = code
        return o
    # a new largest component: the absolute code, or the new index and the differences from
    # the remapped baseline
    o = rd_slow(buf, nbytes, pos, 1, 0, RD_BITS)
    t = <int>o.v                # 0: the absolute code follows, 1: the new index
    if not o.st:
        o = rd_slow(buf, nbytes, o.pos, 2 if t else si.bits, 0, RD_BITS)
    if o.st or t == 0:
        return o
    if o.v == (br[s] >> (3 * si.cb)):
        x.err.msg = b"a smallest-three remap to the baseline's own index"
        o.st = D_STRUCT
        return o
    j = <int>o.v
    code = o.v << (3 * si.cb)
    for t in range(3):
        cp = &x.CI[c + t]
        o = rd_slow(buf, nbytes, o.pos, x.kk[c + t], cp.b, RD_EGX)
        if o.st:
            x.err.msg = b"bad difference"
            return o
        code |= ((qc_quat_remap_ref(br[s], j, t, cp.b, cp.qtop) + qc_unzz(o.v))
                 & qc_mask(cp.b)) << cp.shift
    o.v = code
    return o


cdef inline rd_t dec_read_ord_field(dec_t* x, Py_ssize_t pos, const finfo_t* fi,
                                    const uint64_t* br, const uint64_t* pr, uint64_t* orw,
                                    uint64_t* dacc) noexcept nogil:
    """A changed field of a common shape (SHAPE_ORD, SHAPE_NZORD) without the slot loop's
    dispatch (as its R_FLAG and R_ORD branches)."""
    cdef const uint8_t* buf = x.r.buf
    cdef Py_ssize_t nbytes = x.r.nbytes, s = fi.first, end = fi.end
    cdef const sinfo_t* si
    cdef rd_t o
    cdef Py_ssize_t c
    o.st = D_OK
    o.pos = pos
    if fi.shape == SHAPE_NZORD:      # (its flag governs the rest of the field)
        o = rd_flag_into(buf, nbytes, pos, br[s] == 0, orw, br, s, x.SI[s].span, dacc)
        if o.st or o.v == 0:
            return o
        s += 1
    for c in range(fi.c0, fi.c1):
        si = &x.SI[s]
        o = rd_ord(buf, nbytes, o.pos, &x.CI[c], &x.dc[c], br[s], pr[s] if pr != NULL else 0,
                   pr != NULL and x.dc[c].p, si.sign, x.num, x.den)
        if o.st:
            x.err.msg = b"bad difference"
            return o
        if not si.allvalid and not slot_valid(&x.slots[s], o.v):
            x.err.slot = <int>s
            x.err.code = o.v
            o.st = D_CODE
            return o
        orw[s] = o.v
        dacc[0] |= o.v ^ br[s]
        s += 1
    return o


cdef inline rd_t dec_read_slots(dec_t* x, Py_ssize_t pos, const finfo_t* fi, const uint64_t* br,
                                const uint64_t* pr, uint64_t* orw,
                                uint64_t* dacc) noexcept nogil:
    """A changed field slot by slot, by role (docs/wire-format.md 7), each code checked."""
    cdef const uint8_t* buf = x.r.buf
    cdef Py_ssize_t nbytes = x.r.nbytes, s = fi.first, end = fi.end
    cdef const sinfo_t* si
    cdef rd_t o
    cdef uint64_t v
    o.st = D_OK
    o.pos = pos
    while s < end:
        si = &x.SI[s]
        if si.role == R_ORD:
            # one ordered component, at the top of 64 bits: the wrap to the width is free
            o = rd_ord(buf, nbytes, o.pos, &x.CI[si.comp], &x.dc[si.comp], br[s],
                       pr[s] if pr != NULL else 0, pr != NULL and x.dc[si.comp].p, si.sign,
                       x.num, x.den)
            if o.st:
                x.err.msg = b"bad difference"
                return o
        elif si.role == R_QUAT or si.role == R_UVEC:
            o = dec_read_quat(x, o.pos, s, br, pr)
            if o.st:
                return o
        elif si.role == R_FLAG:
            o = rd_flag_into(buf, nbytes, o.pos, fi.implied_flag and br[s] == 0, orw, br, s,
                             si.span, dacc)
            if o.st:
                return o
            s += 1 + (si.span if o.v == 0 else 0)
            continue
        elif fi.implied_flip:       # R_ABS, one bit: its change implies the flip
            o.v = br[s] ^ 1
        else:                       # R_ABS
            o = rd_slow(buf, nbytes, o.pos, si.bits, 0, RD_BITS)
            if o.st:
                return o
        v = o.v
        if not dec_valid(x, s, v):
            x.err.slot = <int>s
            x.err.code = v
            o.st = D_CODE
            return o
        orw[s] = v
        dacc[0] |= v ^ br[s]
        s += 1
    return o


cdef inline rd_t dec_read_entity(dec_t* x, Py_ssize_t pos, Py_ssize_t e) noexcept nogil:
    """Changed entity e's changed fields, slot by slot, into its output row (a copy of its
    baseline row): each field must change, and some field."""
    cdef Py_ssize_t S = x.S, F = x.F, f, t, c = x.chg[e]
    cdef const uint64_t* br = x.brow + (c if x.ident else x.kept_base[c]) * S
    cdef uint64_t* orw = x.orow + (c if x.ident else x.kept_out[c]) * S
    cdef const uint64_t* pr = NULL
    cdef const uint8_t* fe = x.fch + e * F
    cdef uint64_t dacc
    cdef int any_ = 0
    cdef rd_t o
    o.st = D_OK
    o.pos = pos
    if x.prow != NULL:
        t = c if x.pred_ident else x.kept_pred[c]
        if t >= 0:
            pr = x.prow + t * S
    for f in range(F):
        if not fe[f]:
            continue
        any_ = 1
        dacc = 0
        x.err.field = <int>f            # (an error from here on is this field's)
        if x.FI[f].shape == SHAPE_ORD or x.FI[f].shape == SHAPE_NZORD:
            o = dec_read_ord_field(x, o.pos, &x.FI[f], br, pr, orw, &dacc)
        else:
            o = dec_read_slots(x, o.pos, &x.FI[f], br, pr, orw, &dacc)
        if o.st:
            return o
        if dacc == 0:
            x.err.msg = b"marked changed but unchanged"
            o.st = D_STRUCT
            return o
    if not any_:
        x.err.msg = b"marked changed, but none of its fields is"
        o.st = D_STRUCT
    return o


cdef inline int dec_read_changed(dec_t* x) noexcept nogil:
    """The changed entities' fields, in packet order, into their output rows (already copies of
    their baseline rows): the fast path (_delta_fast.h) for the entities it takes, the
    slot-by-slot loop for the next, and so on. The position is held in a local, passed by
    value (the reads return it), so that it stays in a register along the chain of reads."""
    cdef Py_ssize_t e = 0, nchg = x.nchg, pos
    cdef qc_fastrun run
    cdef int gf[GEN_FAST]
    cdef int fast = dec_tables(x, &run, gf)
    cdef rd_t o
    pos = x.r.pos
    while e < nchg:
        if fast:
            # the entities the fast path takes; the slot-by-slot loop below takes the next
            e = qc_fast_run(&run, e, nchg, &pos)
            if e == nchg:
                break
        x.err.msg = b""
        x.err.field = -1
        o = dec_read_entity(x, pos, e)
        if o.st:
            x.r.pos = o.pos
            x.err.id = x.bid[x.chg[e] if x.ident else x.kept_base[x.chg[e]]]
            x.err.ent = True
            return dec_fail(x, o.st, x.err.msg)
        pos = o.pos
        e += 1
    x.r.pos = pos
    return D_OK


cdef inline int dec_finish(dec_t* x) noexcept nogil:
    """The end: at most 7 bits left, all zero."""
    cdef Py_ssize_t left = br_remaining(&x.r)
    cdef uint64_t v
    if left >= 8:
        return dec_fail(x, D_TRAIL, b"")
    if br_get(&x.r, <int>left, &v) < 0 or v != 0:
        return dec_fail(x, D_TRAIL, b"")
    return D_OK


cdef inline int dec_body_scratch(dec_t* x) noexcept nogil:
    """The scratch of the kept and changed entities and of the per-packet tables."""
    cdef Py_ssize_t kept = x.kept, C = x.C, F = x.F
    cdef Py_ssize_t* kb
    if (buf_need(&x.b.kept, sizeof(Py_ssize_t) * 8 * (kept + 1)) or
            buf_need(&x.b.k, C + 1) or buf_need(&x.b.pred, C + 1) or
            buf_need(&x.b.fmode, F + 1) or
            buf_need(&x.b.dcomp, sizeof(qc_dcomp) * (C + 1) + sizeof(qc_dfield) * (F + 1))):
        return dec_fail(x, D_NOMEM, b"out of memory")
    kb = <Py_ssize_t*>x.b.kept.p
    x.kept_base = kb
    x.kept_out = kb + (kept + 1)
    x.kept_pred = kb + 2 * (kept + 1)
    x.cls1 = kb + 3 * (kept + 1)
    x.cls0 = kb + 4 * (kept + 1)
    x.set1 = kb + 5 * (kept + 1)
    x.set0 = kb + 6 * (kept + 1)
    x.chg = kb + 7 * (kept + 1)
    x.kk = <uint8_t*>x.b.k.p
    x.pp = <uint8_t*>x.b.pred.p
    x.fmode = <uint8_t*>x.b.fmode.p
    x.dc = <qc_dcomp*>x.b.dcomp.p
    x.dfd = <qc_dfield*>(x.dc + C + 1)
    return D_OK


cdef inline int dec_body(dec_t* x) noexcept nogil:
    """After the head: the output rows, the sets, the changed fields, the end."""
    cdef int st
    x.ident = x.nrem == 0 and x.nnew == 0
    x.pred_ident = 0
    x.n1 = 0
    x.n0 = 0
    x.nchg = 0
    st = dec_body_scratch(x)
    if not st:
        st = dec_merge_rows(x)
    if st or not x.bdist:
        return st or dec_finish(x)
    st = dec_read_sets(x)
    if st or x.nchg == 0:
        return st or dec_finish(x)
    ext_ratio(x.bdist, x.pdist, &x.num, &x.den)
    st = dec_read_changed(x)
    return st or dec_finish(x)


@cython.final
cdef class DeltaDecoder(CoderBase):
    """One client's decoding workspace over a Layout: the decoder's scratch and the last decode
    error. Not shared between threads (DecoderState serializes its calls). ``decode`` is a thin
    ``def`` over the nogil steps above, which return a status that ``_raise`` turns into
    DecodeError. ``max_entities`` bounds the entities of a decoded snapshot (no bound by
    default; the stream's DecoderState sets it before each packet from its ``max_bytes``)."""

    def __cinit__(self):
        self.max_entities = PY_SSIZE_T_MAX

    def __dealloc__(self):
        cdef buf_t* b = <buf_t*>&self.b
        cdef Py_ssize_t i
        for i in range(<Py_ssize_t>(sizeof(dec_buf_t) // sizeof(buf_t))):
            buf_free(&b[i])

    def _slot_valid(self, Py_ssize_t s, uint64_t code):
        """Whether the decoder accepts ``code`` in slot ``s`` (tests compare it with the codec)."""
        if not 0 <= s < self.nslots:
            raise IndexError(s)
        if self.si[s].allvalid:
            return True
        if self.si[s].qtab != NULL:
            return bool(quat_valid_tab(&self.si[s], code))
        return bool(slot_valid(&self.plan.slots[s], code))

    def _quat_surely_valid(self, Py_ssize_t s, uint64_t code):
        """Whether the decoder's fast path accepts the smallest-three ``code`` in slot ``s``
        without the exact test (None: the slot has no table); tests check that it accepts only
        valid codes, and most of them."""
        if not 0 <= s < self.nslots:
            raise IndexError(s)
        cdef const sinfo_t* si = &self.si[s]
        cdef uint64_t m
        if si.qsq == NULL:
            return None
        m = qc_mask(si.cb)
        return bool(code <= si.maxcode and qc_quat_surely_valid(
            si.qsq, (code >> (2 * si.cb)) & m, (code >> si.cb) & m, code & m))

    def decode(self, data, SnapshotData base=None, SnapshotData pred=None):
        """Decode a packet against the snapshots its header names (pass them). Returns
        ``(seq, ids, matrix)``, new NumPy arrays; raises DecodeError on anything malformed
        (nothing else is touched)."""
        cdef const uint8_t* p
        cdef Py_ssize_t n
        owner = _packet(data, &p, &n)
        cdef SnapshotData snap = self._decode(p, n, base, pred, SnapshotData)
        return snap._seq, snap._ids, snap._matrix

    cdef SnapshotData _decode(self, const uint8_t* data, Py_ssize_t nbytes, SnapshotData base,
                              SnapshotData pred, type kind):
        """The decoded snapshot (an instance of ``kind``, a SnapshotData class its caller gives,
        read-only arrays, ``_seq`` set, schema and the rest left for the caller) or
        DecodeError. ``data`` stays valid for the call (its owner is held by the caller). The
        steps: the header, dec_read_head and the new entities (nogil), the output arrays (the
        baseline's ids when the entities are its), dec_body (nogil)."""
        cdef dec_t x
        cdef int seq, st = 0
        cdef Py_ssize_t S = self.nslots, nout
        cdef bytes dmap = None
        br_init(&x.r, data, nbytes)
        self.err.kind = 0
        self.err.msg = b""
        self.err.slot = -1
        self.err.field = -1
        self.err.ent = False
        st = _read_header(&x.r, &seq, &x.bdist, &x.pdist)
        if st:
            self.err.msg = (b"in the header" if st == D_SHORT
                            else b"sequence distance outside 1..32767")
            self.err.kind = st
            self._raise_at(x.r.pos)
        x.SI = self.si
        x.CI = self.ci
        x.FI = self.fi
        x.slots = self.plan.slots
        x.S = S
        x.F = self.nfields
        x.C = self.ncomps
        x.general = self.layout.general
        x.max_entities = self.max_entities
        x.b = &self.b
        x.err = &self.err
        x.m = 0
        x.p = 0
        x.bid = NULL
        x.brow = NULL
        x.pid = NULL
        x.prow = NULL
        x.ctxmap = NULL
        x.nid = NULL
        x.nrow = NULL
        x.nchg = 0
        if x.bdist:
            self._check(base, "baseline")
            x.m = base.n
            x.bid = base.idp
            x.brow = base.rowp
        if x.pdist:
            self._check(pred, "extrapolation")
            x.p = pred.n
            x.pid = pred.idp
            x.prow = pred.rowp
            # rows of the baseline that differ from the extrapolation snapshot: known when the
            # baseline was decoded here against that very snapshot
            dmap = _diff_of(base, pred)
            if dmap is not None:
                x.ctxmap = <const uint8_t*>PyBytes_AS_STRING(dmap)
        with nogil:
            st = dec_read_head(&x)
            if not st and x.nnew:
                st = dec_read_new_ids(&x)
                if not st:
                    st = dec_read_records(&x)
        if st:
            self._raise_at(x.r.pos)
        nout = x.kept + x.nnew
        if x.bdist and x.nrem == 0 and x.nnew == 0:
            # the baseline's entities: its (immutable) id array is this snapshot's too, neither
            # read nor copied (_copy_rows skips ids onto themselves)
            ids = base._ids
            x.oid = <uint64_t*>x.bid
        else:
            ids = _empty(nout, _U64)
            x.oid = <uint64_t*>_data_of(ids)
        matrix = _empty((nout, S), _U64)
        x.orow = <uint64_t*>_data_of(matrix)
        if not nout:
            x.oid = NULL
            x.orow = NULL
        with nogil:
            st = dec_body(&x)
        self.d_nchg = x.nchg
        if st:
            self._raise_at(x.r.pos)
        cdef SnapshotData snap = SnapshotData.__new__(kind)     # tp_new, called directly
        ids.setflags(False)         # write=False (positional: no keyword dict to build)
        matrix.setflags(False)
        snap._ids = ids
        snap._matrix = matrix
        snap.n = nout
        snap.ncol = S
        snap.idp = x.oid
        snap.rowp = x.orow if nout and S else NULL
        snap._seq = seq
        _untrack(snap)
        if x.bdist and x.nrem == 0 and x.nnew == 0 and x.m:
            # the same entities as the baseline, row for row: keep which rows changed
            _set_diff(snap, base, x.nchg, x.chg)
        return snap

    cdef int _raise_at(self, Py_ssize_t pos) except -1:
        self.err.pos = pos
        self._raise()
        return -1

    cdef int _raise(self) except -1:
        cdef str where = f"at bit {self.err.pos}"
        cdef str msg = (<bytes>self.err.msg).decode("ascii") if self.err.msg != NULL else ""
        cdef str who = ""
        if self.err.kind == D_SHORT:
            raise DecodeError(f"snapshot packet: truncated, a read runs past the end {where}"
                              + (f" ({msg})" if msg else ""))
        if self.err.kind == D_TRAIL:
            raise DecodeError(f"snapshot packet: unexpected data after the end of the packet {where}")
        if self.err.kind == D_NOMEM:
            raise MemoryError()
        if self.err.kind == D_LIMITS:
            raise DecodeError(f"snapshot packet: its snapshot of {self.err.code} entities would make the "
                              f"client hold more than its max_bytes ({max(self.max_entities, 0)} entities "
                              f"fit now; docs/wire-format.md section 19)", kind="limits")
        if self.err.kind == D_CODE:
            s = self.err.slot
            name = self.plan.slot_names[s] if 0 <= s < self.nslots else f"slot {s}"
            code = self.err.code
            if 0 <= s < self.nslots and self.si[s].sign:
                code = <int64_t>self.err.code
            raise DecodeError(f"snapshot packet: entity {self.err.id}: {name}: code {code} "
                              f"is not valid ({where})")
        if self.err.ent:
            # an error in a changed entity's fields: the entity, the field where there is one
            f = self.err.field
            who = f"field {self.plan.names[f]!r}: " if 0 <= f < len(self.plan.names) else ""
            raise DecodeError(f"snapshot packet: entity {self.err.id}: {who}{msg} ({where})")
        raise DecodeError(f"snapshot packet: {msg} {where}")
