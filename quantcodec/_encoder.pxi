# The snapshot encoder (included into _delta.pyx: one module with the Layout it reads, so the
# steps below inline into the one call as they did when they were one function): DeltaEncoder,
# and the pipeline of steps its _encode runs over one packet's context (enc_t, _delta.pxd), each
# named after its step (the sections of docs/wire-format.md):
#
#   enc_scratch         the scratch, sized for the packet, into the context
#   1. enc_match_ids    match the current entities with the baseline's (and the extrapolation's):
#                       removed, new, changed, each kept entity's context class (7.1 - 7.3)
#   2. enc_diff         per changed entity, its changed fields and the components' differences,
#                       counted into the histograms (enc_diff_vec: the same with AVX-512) (8)
#   3. enc_choose_k     per component, the Exp-Golomb parameter and whether to extrapolate (8)
#   4. the writes: enc_write_head (6, 7.1), enc_write_new_ids (7.2, then Plan.put_row for the
#      records), enc_write_sets (7.3: changed entities, changed fields, the parameters),
#      enc_write_fields (7.3, per changed entity: enc_write_entity, by field shape;
#      enc_write_slots, slot by slot; enc_write_quat, one smallest three)


cdef inline void _diff(const comp_t* cp, Py_ssize_t c, const uint64_t* cr, const uint64_t* br,
                       const uint64_t* pr, int64_t num, int64_t den, uint64_t* Ue,
                       uint32_t* hist) noexcept nogil:
    """Component c (descriptor cp) of one changed entity whose field changed: unless its
    NearlyZero flag is 0, or (smallest three) its largest component is not the baseline's, the
    zigzagged difference from the baseline into Ue[2c] and from the extrapolation (``pr``, if
    any and usable) into Ue[2c + 1] (the baseline's again where there is none), each counted by
    bit length into the component's histograms (unless ``hist`` is NULL: an entity the
    histograms' sample leaves out). Works on values shifted to the top of 64 bits, so that the
    wrap to the width costs nothing."""
    cdef int nz = cp.nzslot, slot = cp.slot, qs = cp.qshift, sh = cp.sh
    cdef int usep = cp.predictable and pr != NULL
    cdef uint64_t cw = cr[slot], bw = br[slot], xc, xb, u0, u1
    cdef uint32_t* h
    if nz >= 0 and cr[nz] == 0:
        return
    if qs:
        if (cw >> qs) != (bw >> qs):
            # the largest component changed: the difference from the baseline re-expressed
            # without the new index (qc_quat_remap_ref); the writer sends it or the absolute code,
            # whichever is shorter. Not counted in the histograms: the Exp-Golomb parameters
            # stay those of the same-index differences (counting these too made no difference
            # on the bench scene and on MuJoCo recordings)
            xb = qc_quat_remap_ref(bw, <int>((cw >> qs) & 3), cp.qpos, cp.b, cp.qtop)
            u0 = zz_top(((cw >> cp.shift) << sh) - (xb << sh), sh)
            Ue[2 * c] = u0
            Ue[2 * c + 1] = u0
            return
        if usep and (pr[slot] >> qs) != (bw >> qs):
            usep = 0
    xc = top_lin(cw, cp)
    xb = top_lin(bw, cp)
    u0 = zz_top(xc - xb, sh)
    u1 = u0
    if usep:
        u1 = zz_top(xc - qc_top_ref(xb, top_lin(pr[slot], cp), sh, num, den), sh)
    Ue[2 * c] = u0
    Ue[2 * c + 1] = u1
    if hist != NULL:
        h = hist + 2 * c * HIST
        h[qc_bitlen_top(u0, sh)] += 1
        h[HIST + qc_bitlen_top(u1, sh)] += 1


cdef inline void _diff_comps(const comp_t* CI, int c0, int c1, const uint64_t* cr,
                             const uint64_t* br, const uint64_t* pr, int mode, int quat,
                             int64_t num, int64_t den, uint64_t* Ue, uint32_t* hist) noexcept nogil:
    """_diff for components c0..c1 of a field of a common shape (SHAPE_ORD, SHAPE_NZORD with its flag
    set, SHAPE_QUAT with the same largest component), whose per-slot tests the caller made once.
    ``mode``: 0 no extrapolation, 1 extrapolation by a whole ratio (den == 1), 2 by another;
    ``quat``:
    the components are the coordinates of one smallest-three slot, whose carriers are loaded
    once (else each its own ordered slot's, at shift 0: one shift instead of two). Both are the
    same for every component of the call, so their branches predict. The same values into Ue
    and the same counts into the histograms (none if ``hist`` is NULL) as _diff."""
    cdef const comp_t* cp
    cdef uint64_t xc, xb, xp = 0, u0, u1, cw = 0, bw = 0, pw = 0
    cdef int c, sh, shift
    cdef uint32_t* h = hist + 2 * c0 * HIST if hist != NULL else NULL
    if quat:
        cw = cr[CI[c0].slot]
        bw = br[CI[c0].slot]
        if mode:
            pw = pr[CI[c0].slot]
    for c in range(c0, c1):
        cp = &CI[c]
        sh = cp.sh
        if quat:
            shift = cp.shift
            xc = (cw >> shift) << sh
            xb = (bw >> shift) << sh
            if mode:
                xp = (pw >> shift) << sh
        else:
            xc = cr[cp.slot] << sh
            xb = br[cp.slot] << sh
            if mode:
                xp = pr[cp.slot] << sh
            if cp.smt:
                xc ^= <uint64_t>((<int64_t>xc) >> 63) & cp.smt
                xb ^= <uint64_t>((<int64_t>xb) >> 63) & cp.smt
                if mode:
                    xp ^= <uint64_t>((<int64_t>xp) >> 63) & cp.smt
        u0 = zz_top(xc - xb, sh)
        Ue[2 * c] = u0
        if mode == 1:
            u1 = zz_top(xc - qc_top_ref(xb, xp, sh, num, 1), sh)
        elif mode == 2:
            u1 = zz_top(xc - qc_top_ref(xb, xp, sh, num, den), sh)
        else:
            u1 = u0
        Ue[2 * c + 1] = u1
        if hist != NULL:
            h[qc_bitlen_top(u0, sh)] += 1
            h[HIST + qc_bitlen_top(u1, sh)] += 1
            h += 2 * HIST


cdef inline int _field_changed(const finfo_t* fi, const uint64_t* cr, const uint64_t* br) noexcept nogil:
    """Whether any slot of field fi differs between the two rows."""
    cdef uint64_t x = 0
    cdef Py_ssize_t s
    for s in range(fi.first, fi.end):
        x |= cr[s] ^ br[s]
    return x != 0


cdef inline void _diff_field(const finfo_t* fi, const comp_t* CI, const uint64_t* cr,
                             const uint64_t* br, const uint64_t* pr, int64_t num, int64_t den,
                             uint64_t* Ue, uint32_t* hist) noexcept nogil:
    """_diff for every component of changed field fi: by shape, the flag and smallest-three
    tests once for the field, then _diff_comps; the rest (and a new largest component) by _diff."""
    cdef int c, q, qs
    cdef int usep = pr != NULL and fi.pred
    if fi.shape == SHAPE_NZORD or fi.shape == SHAPE_ORD:
        if fi.shape == SHAPE_NZORD and cr[fi.nz] == 0:
            return
        if not usep:
            _diff_comps(CI, fi.c0, fi.c1, cr, br, pr, 0, 0, num, den, Ue, hist)
        elif den == 1:
            _diff_comps(CI, fi.c0, fi.c1, cr, br, pr, 1, 0, num, den, Ue, hist)
        else:
            _diff_comps(CI, fi.c0, fi.c1, cr, br, pr, 2, 0, num, den, Ue, hist)
    elif fi.shape == SHAPE_QUAT:
        q = fi.quat
        qs = CI[fi.c0].qshift
        if (cr[q] >> qs) != (br[q] >> qs):
            for c in range(fi.c0, fi.c1):
                _diff(&CI[c], c, cr, br, pr, num, den, Ue, hist)
        elif not usep or (pr[q] >> qs) != (br[q] >> qs):
            _diff_comps(CI, fi.c0, fi.c1, cr, br, pr, 0, 1, num, den, Ue, hist)
        elif den == 1:
            _diff_comps(CI, fi.c0, fi.c1, cr, br, pr, 1, 1, num, den, Ue, hist)
        else:
            _diff_comps(CI, fi.c0, fi.c1, cr, br, pr, 2, 1, num, den, Ue, hist)
    else:
        for c in range(fi.c0, fi.c1):
            _diff(&CI[c], c, cr, br, pr, num, den, Ue, hist)


# ------------------------------------------------------------------------------------------------
# the scratch


cdef inline int enc_scratch(enc_t* x, enc_buf_t* b, const enc_in_t* a, Py_ssize_t S,
                            Py_ssize_t F, Py_ssize_t C) noexcept nogil:
    """The encoder's scratch grown to the packet's sizes, and the context's pointers into it
    and counts zeroed. -1: out of memory."""
    cdef Py_ssize_t lim = a.n if a.n < a.m else a.m
    if (buf_need(&b.removed, sizeof(Py_ssize_t) * (a.m + 1)) or
            buf_need(&b.new, sizeof(Py_ssize_t) * (a.n + 1)) or
            buf_need(&b.ccur, sizeof(Py_ssize_t) * (lim + 1)) or
            buf_need(&b.cbase, sizeof(Py_ssize_t) * (lim + 1)) or
            buf_need(&b.ckpos, sizeof(Py_ssize_t) * (lim + 1)) or
            buf_need(&b.cpred, sizeof(Py_ssize_t) * (lim + 1)) or
            buf_need(&b.fch, (lim + 1) * (F + 1)) or
            buf_need(&b.hist, sizeof(uint32_t) * HIST * 2 * (C + 1)) or
            buf_need(&b.k, C + 1) or buf_need(&b.pred, C + 1) or
            buf_need(&b.E, C + 1) or buf_need(&b.fmode, F + 1) or
            buf_need(&b.par, sizeof(cpar_t) * (C + 1)) or
            buf_need(&b.fcount, sizeof(Py_ssize_t) * (F + 1)) or
            buf_need(&b.lists, sizeof(Py_ssize_t) * 2 * (lim + 1)) or
            buf_need(&b.u, sizeof(uint64_t) * (2 * (C + 1) * (lim + 1) + 32)) or
            buf_need(&b.cctx, lim + 1) or
            buf_need(&b.vm, sizeof(uint32_t) * (lim + 1))):
        return -1
    x.S = S
    x.F = F
    x.C = C
    x.lim = lim
    x.nrem = 0
    x.nnew = 0
    x.nchg = 0
    x.kctx[0] = 0
    x.kctx[1] = 0
    x.nlist[0] = 0
    x.nlist[1] = 0
    x.removed = <Py_ssize_t*>b.removed.p
    x.newr = <Py_ssize_t*>b.new.p
    x.ccur = <Py_ssize_t*>b.ccur.p
    x.cbase = <Py_ssize_t*>b.cbase.p
    x.cpred = <Py_ssize_t*>b.cpred.p
    x.ckpos = <Py_ssize_t*>b.ckpos.p
    x.cctx = <uint8_t*>b.cctx.p
    x.lists = <Py_ssize_t*>b.lists.p
    x.fch = <uint8_t*>b.fch.p
    x.fcount = <Py_ssize_t*>b.fcount.p
    x.U = <uint64_t*>b.u.p
    x.hist = <uint32_t*>b.hist.p
    x.vm = <uint32_t*>b.vm.p
    x.fmode = <uint8_t*>b.fmode.p
    x.kk = <uint8_t*>b.k.p
    x.pp = <uint8_t*>b.pred.p
    x.EE = <uint8_t*>b.E.p
    x.par = <cpar_t*>b.par.p
    return 0


# ------------------------------------------------------------------------------------------------
# 1. match ids


cdef inline void enc_match_same(enc_t* x) noexcept nogil:
    """Step 1's common case: the same entities in all the snapshots, row for row: one scan of
    the rows (of their narrower keys when the three have them)."""
    cdef enc_in_t* a = x.a
    cdef Py_ssize_t e
    cdef const Py_ssize_t* ccur = x.ccur
    cdef Py_ssize_t* cbase = x.cbase
    cdef Py_ssize_t* cpred = x.cpred
    cdef int has_pred = x.has_pred
    if a.ckey != NULL:
        x.nchg = qc_scan_rows(a.ckey, a.bkey, a.pkey if x.has_pred else NULL,
                              a.ctxmap if x.has_pred else NULL, a.n, a.kw, 1, x.ccur, x.cctx,
                              x.ckpos, x.kctx)
    else:
        x.nchg = qc_scan_rows(a.crow, a.brow, a.prow if x.has_pred else NULL,
                              a.ctxmap if x.has_pred else NULL, a.n, x.S, 0, x.ccur, x.cctx,
                              x.ckpos, x.kctx)
    a.same = 1
    for e in range(x.nchg):
        cbase[e] = ccur[e]
        cpred[e] = ccur[e] if has_pred else -1


cdef inline void enc_match_merge(enc_t* x) noexcept nogil:
    """Step 1 in general: the current and baseline ids merged (both ascending), and each kept
    entity's row in the extrapolation snapshot, if there, and its context class."""
    cdef const enc_in_t* a = x.a
    cdef Py_ssize_t S = x.S, i = 0, j = 0, pj = 0, prow_i, nchg = 0, nrem = 0, nnew = 0
    cdef Py_ssize_t kctx[2]
    cdef Py_ssize_t* removed = x.removed
    cdef Py_ssize_t* newr = x.newr
    cdef Py_ssize_t* ccur = x.ccur
    cdef Py_ssize_t* cbase = x.cbase
    cdef Py_ssize_t* cpred = x.cpred
    cdef Py_ssize_t* ckpos = x.ckpos
    cdef uint8_t* cctx = x.cctx
    cdef const uint64_t* cr
    cdef const uint64_t* br
    cdef int ctx, has_pred = x.has_pred
    kctx[0] = 0
    kctx[1] = 0
    while i < a.n and j < a.m:
        if a.cid[i] == a.bid[j]:
            cr = a.crow + i * S
            br = a.brow + j * S
            ctx = 1
            prow_i = -1
            if has_pred:
                while pj < a.p and a.pid[pj] < a.bid[j]:
                    pj += 1
                if pj < a.p and a.pid[pj] == a.bid[j]:
                    prow_i = pj
                    ctx = rows_differ(br, a.prow + pj * S, S)
            if rows_differ(cr, br, S):
                ccur[nchg] = i
                cbase[nchg] = j
                cpred[nchg] = prow_i
                ckpos[nchg] = kctx[ctx]
                cctx[nchg] = <uint8_t>ctx
                nchg += 1
            kctx[ctx] += 1
            i += 1
            j += 1
        elif a.cid[i] < a.bid[j]:
            newr[nnew] = i
            nnew += 1
            i += 1
        else:
            removed[nrem] = j
            nrem += 1
            j += 1
    while j < a.m:
        removed[nrem] = j
        nrem += 1
        j += 1
    while i < a.n:
        newr[nnew] = i
        nnew += 1
        i += 1
    x.nchg = nchg
    x.nrem = nrem
    x.nnew = nnew
    x.kctx[0] = kctx[0]
    x.kctx[1] = kctx[1]


cdef inline void enc_match_ids(enc_t* x) noexcept nogil:
    """Step 1. Match the current entities with the baseline's by id (both sorted ascending);
    with an extrapolation snapshot, also each kept entity's row there and its context: 1 if it
    changed between that snapshot and the baseline (or is not in it), else 0. Then the changed
    entities of each context class, as positions within their class (x.lists)."""
    cdef enc_in_t* a = x.a
    cdef Py_ssize_t e, t, lim1 = x.lim + 1
    cdef Py_ssize_t nlist[2]
    cdef Py_ssize_t* lists = x.lists
    cdef const Py_ssize_t* ckpos = x.ckpos
    cdef const uint8_t* cctx = x.cctx
    if (x.has_base and a.n == a.m and _same_ids(a.cid, a.bid, a.n)
            and (not x.has_pred or a.ctxmap != NULL       # (remembered: the same ids)
                 or (a.p == a.m and _same_ids(a.pid, a.bid, a.m)))):
        enc_match_same(x)
    elif x.has_base:
        enc_match_merge(x)
    else:
        for e in range(a.n):
            x.newr[e] = e
        x.nnew = a.n
    a.nchg = x.nchg
    nlist[0] = 0
    nlist[1] = 0
    for e in range(x.nchg):
        t = cctx[e]
        lists[t * lim1 + nlist[t]] = ckpos[e]
        nlist[t] += 1
    x.nlist[0] = nlist[0]
    x.nlist[1] = nlist[1]


# ------------------------------------------------------------------------------------------------
# 2. the differences


cdef inline void enc_diff_vec(enc_t* x) noexcept nogil:
    """Step 2 with AVX-512 (x.vec, at most VEC_FIELDS fields; without extrapolation or by a
    whole ratio, den == 1): every changed entity's changed fields and the components of those
    of the common shapes in one qc_vdiff_run call, and the rest (other fields, a smallest three
    whose largest component changed) by _diff after it. The same values and counts as
    enc_diff's loop."""
    cdef Py_ssize_t S = x.S, F = x.F, C = x.C, nchg = x.nchg, e, f, s, c, nposts, i
    cdef const finfo_t* FI = x.FI
    cdef const comp_t* CI = x.CI
    cdef const uint64_t* cr
    cdef const uint64_t* br
    cdef const uint64_t* pr
    cdef const uint64_t* prow = x.a.prow
    cdef uint8_t* fe
    cdef qc_vfield fv[VEC_FIELDS]
    for f in range(F):
        fv[f].slots = 0
        for s in range(FI[f].first, FI[f].end):
            fv[f].slots |= (<uint32_t>1) << s
        fv[f].lanes = FI[f].lanes
        fv[f].shape = FI[f].shape
        fv[f].nz = FI[f].nz
        fv[f].quat = FI[f].quat
        fv[f].qs = CI[FI[f].c0].qshift if FI[f].shape == SHAPE_QUAT else 0
    nposts = qc_vdiff_run(x.vp, nchg, x.a.crow, x.a.brow, prow, x.ccur, x.cbase, x.cpred, S, fv,
                          F, x.fch, x.fcount, x.U, 2 * C, x.hist, nchg >= HIST_SAMPLE_FROM, x.num,
                          x.vm)
    for i in range(nposts):     # after qc_vdiff_run, whose stores cover every lane
        e = x.vm[i]
        cr = x.a.crow + x.ccur[e] * S
        br = x.a.brow + x.cbase[e] * S
        pr = prow + x.cpred[e] * S if x.cpred[e] >= 0 else NULL
        fe = x.fch + e * F
        for f in range(F):
            if not fe[f] or FI[f].shape == SHAPE_ORD or FI[f].shape == SHAPE_NZORD:
                continue
            if FI[f].shape == SHAPE_QUAT and ((cr[FI[f].quat] >> CI[FI[f].c0].qshift)
                                          == (br[FI[f].quat] >> CI[FI[f].c0].qshift)):
                continue
            for c in range(FI[f].c0, FI[f].c1):
                _diff(&CI[c], c, cr, br, pr, x.num, x.den, x.U + e * 2 * C,
                      x.hist if (nchg < HIST_SAMPLE_FROM or (e & 3) == 0) else NULL)


cdef inline void enc_diff(enc_t* x) noexcept nogil:
    """Step 2. Per changed entity, in one pass over its rows: which fields changed, and for each
    component of a changed field its zigzagged differences (from the baseline, from the
    extrapolation), counted by bit length into the component's two histograms (entity by
    entity, so consecutive increments hit different counters). With many changed entities only
    every 4th is counted (docs/wire-format.md section 8): the parameters of a sample of 64 or
    more are nearly as good, for much less work (the figures are in docs/wire-format.md and
    bench/README.md). Then x.fmode: the fields some changed entity changed."""
    cdef Py_ssize_t S = x.S, F = x.F, C = x.C, nchg = x.nchg, e, f, t, done = 0
    cdef const finfo_t* FI = x.FI
    cdef const comp_t* CI = x.CI
    cdef const uint64_t* cr
    cdef const uint64_t* br
    cdef const uint64_t* pr
    cdef uint8_t* fe
    # (the inputs in locals: with -fno-strict-aliasing every store below would reload them)
    cdef const uint64_t* crow = x.a.crow
    cdef const uint64_t* brow = x.a.brow
    cdef const uint64_t* prow = x.a.prow
    cdef Py_ssize_t* fcount = x.fcount
    cdef const Py_ssize_t* ccur = x.ccur
    cdef const Py_ssize_t* cbase = x.cbase
    cdef const Py_ssize_t* cpred = x.cpred
    cdef uint8_t* fch = x.fch
    cdef uint64_t* U = x.U
    cdef uint32_t* hist = x.hist
    cdef int64_t num = x.num, den = x.den
    for f in range(F):
        fcount[f] = 0
    if nchg:
        memset(hist, 0, sizeof(uint32_t) * HIST * 2 * C)
    if x.vec and F <= VEC_FIELDS and (not x.has_pred or den == 1):
        enc_diff_vec(x)
        done = nchg
    for e in range(done, nchg):
        cr = crow + ccur[e] * S
        br = brow + cbase[e] * S
        pr = prow + cpred[e] * S if cpred[e] >= 0 else NULL
        fe = fch + e * F
        for f in range(F):
            t = _field_changed(&FI[f], cr, br)
            fe[f] = <uint8_t>t
            fcount[f] += t
            if t:
                _diff_field(&FI[f], CI, cr, br, pr, num, den, U + e * 2 * C,
                            hist if (nchg < HIST_SAMPLE_FROM or (e & 3) == 0) else NULL)
    for f in range(F):
        x.fmode[f] = fcount[f] > 0          # some changed entity changed field f


# ------------------------------------------------------------------------------------------------
# 3. choose k and prediction


cdef inline void enc_choose_k(enc_t* x) noexcept nogil:
    """Step 3. Per component of a field some changed entity changed: the Exp-Golomb parameter with
    the fewest expected bits (best_k over its histograms), and whether to extrapolate (when
    that costs fewer). Into kk, pp, EE, par and the AVX-512 lanes."""
    cdef const comp_t* CI = x.CI
    cdef Py_ssize_t c
    cdef Py_ssize_t cost0, cost1
    cdef int k0, k1
    for c in range(x.C):
        x.pp[c] = 0
        x.kk[c] = 0
        if not x.fmode[CI[c].field]:
            continue                # (no changed entity changed it: not written)
        k0 = best_k(x.hist + (2 * c) * HIST, CI[c].b, &cost0)
        x.kk[c] = <uint8_t>k0
        if x.has_pred and CI[c].predictable:
            k1 = best_k(x.hist + (2 * c + 1) * HIST, CI[c].b, &cost1)
            if cost1 < cost0:
                x.pp[c] = 1
                x.kk[c] = <uint8_t>k1
        x.EE[c] = <uint8_t>egx_E(x.kk[c], CI[c].b)
        x.par[c].k = x.kk[c]
        x.par[c].E = x.EE[c]
        x.par[c].b = <uint8_t>CI[c].b
        x.par[c].p = x.pp[c]
        if x.vec:
            x.vp.k[c] = x.kk[c]
            x.vp.E[c] = x.EE[c]
            x.vp.b[c] = CI[c].b
            x.vp.sel[c] = 2 * (c & 7) + x.pp[c]


# ------------------------------------------------------------------------------------------------
# 4. write


cdef inline Py_ssize_t enc_bound(const enc_t* x) noexcept nogil:
    """The most bits the packet can take (the writer reserves them once)."""
    return (256 + set_bits_upper(x.a.m) + 2 * set_bits_upper(x.lim) + 40 + ID_KBITS
            + x.nnew * (x.rec_bits + 100) + x.nchg * x.chg_bits + x.F * set_bits_upper(x.nchg)
            + x.C * 8)


cdef inline void enc_write_head(const enc_t* x, bw_t* w) noexcept nogil:
    """The header (sequence, baseline and extrapolation distances; section 6) and the removed
    entities (7.1)."""
    cdef const enc_in_t* a = x.a
    bw_put(w, <uint64_t>a.seq, 16)
    bw_put(w, <uint64_t>x.has_base, 1)
    if x.has_base:
        put_egx(w, <uint64_t>(a.bdist - 1), HDR_K, 16)
        bw_put(w, <uint64_t>x.has_pred, 1)
        if x.has_pred:
            put_egx(w, <uint64_t>(a.pdist - 1), HDR_K, 16)
        if a.m:
            put_set(w, x.removed, x.nrem, a.m)


cdef inline void enc_write_new_ids(const enc_t* x, bw_t* w) noexcept nogil:
    """The new entities' count and ids (7.2: ascending, as Exp-Golomb gaps whose parameter is chosen
    from their histogram); their records follow (Plan.put_row)."""
    cdef const uint64_t* cid = x.a.cid
    cdef const Py_ssize_t* newr = x.newr
    cdef Py_ssize_t i, nnew = x.nnew, cost
    cdef uint32_t idh[HIST]
    cdef uint64_t g, prev_id = 0
    cdef int kid
    put_egx(w, <uint64_t>nnew, 0, 32)
    if not nnew:
        return
    memset(idh, 0, sizeof(idh))
    for i in range(nnew):
        g = cid[newr[i]] - prev_id - (1 if i else 0)
        idh[qc_bitlen64(g)] += 1
        prev_id = cid[newr[i]]
    kid = best_k(idh, 64, &cost)
    if kid > 63:
        kid = 63
    bw_put(w, <uint64_t>kid, ID_KBITS)
    prev_id = 0
    for i in range(nnew):
        put_egx(w, cid[newr[i]] - prev_id - (1 if i else 0), kid, 64)
        prev_id = cid[newr[i]]


cdef inline void enc_write_sets(const enc_t* x, bw_t* w) noexcept nogil:
    """7.3: the changed entities (one set over the kept ones, or with an extrapolation snapshot one
    over those that changed between the two references, then one over the rest), per field the
    changed entities whose field changed, and the parameters of the changed fields' components."""
    cdef Py_ssize_t F = x.F, nchg = x.nchg, lim = x.lim, e, f, c, t
    cdef Py_ssize_t* lists = x.lists
    if x.has_pred:
        if x.kctx[1]:
            put_set(w, lists + (lim + 1), x.nlist[1], x.kctx[1])
        if x.kctx[0]:
            put_set(w, lists, x.nlist[0], x.kctx[0])
    elif x.kctx[0] + x.kctx[1]:
        put_set(w, lists + (lim + 1), x.nlist[1], x.kctx[0] + x.kctx[1])
    if not nchg:
        return
    # per field: SET(nchg) of the changed entities (by rank) whose field f changed
    for f in range(F):
        t = 0
        for e in range(nchg):       # (branch-free: fields change irregularly)
            lists[t] = e
            t += x.fch[e * F + f]
        put_set(w, lists, t, nchg)
    for f in range(F):
        if x.fmode[f]:
            for c in range(x.FI[f].c0, x.FI[f].c1):
                if x.has_pred and x.CI[c].predictable:
                    bw_put(w, x.pp[c], 1)
                bw_put(w, x.kk[c], kbits_for(x.CI[c].b))


cdef inline void enc_write_quat(const enc_t* x, bw_t* w, const sinfo_t* si, uint64_t cw,
                                uint64_t bw, const uint64_t* Ue) noexcept nogil:
    """One smallest three (current carrier cw, baseline's bw): the first component's code
    doubles as the "same largest component" signal: its escape carries one more bit, 1 = the
    new index and the remapped differences, or the absolute code, follow instead."""
    cdef int c = si.comp, E = x.EE[c], cb = si.cb
    cdef const cpar_t* par = x.par
    cdef const uint8_t* kk = x.kk
    cdef const uint8_t* pp = x.pp
    if (cw >> (3 * cb)) != (bw >> (3 * cb)):
        # a new largest component: its index and the differences from the remapped baseline,
        # or the absolute code, whichever is shorter
        bw_put(w, 0, E)
        bw_put(w, 1, 1)
        if (2 + egx_len(Ue[2 * c], kk[c], cb) + egx_len(Ue[2 * c + 2], kk[c + 1], cb)
                + egx_len(Ue[2 * c + 4], kk[c + 2], cb)) < si.bits:
            bw_put(w, 1, 1)
            bw_put(w, cw >> (3 * cb), 2)
            put_egx32(w, Ue[2 * c], par[c])
            put_egx32(w, Ue[2 * c + 2], par[c + 1])
            put_egx32(w, Ue[2 * c + 4], par[c + 2])
        else:
            bw_put(w, 0, 1)
            bw_put(w, cw, si.bits)
    elif egx_escapes(Ue[2 * c + pp[c]], kk[c], cb):
        bw_put(w, 0, E)
        bw_put(w, 0, 1)
        bw_put(w, Ue[2 * c + pp[c]], cb)
        put_egx32(w, Ue[2 * c + 2 + par[c + 1].p], par[c + 1])
        put_egx32(w, Ue[2 * c + 4 + par[c + 2].p], par[c + 2])
    else:
        put_egx32(w, Ue[2 * c + par[c].p], par[c])
        put_egx32(w, Ue[2 * c + 2 + par[c + 1].p], par[c + 1])
        put_egx32(w, Ue[2 * c + 4 + par[c + 2].p], par[c + 2])


cdef inline void enc_write_slots(const enc_t* x, bw_t* w, const finfo_t* fi, const uint64_t* cr,
                                 const uint64_t* br, const uint64_t* Ue) noexcept nogil:
    """One changed field, slot by slot, by role (docs/wire-format.md 7)."""
    cdef Py_ssize_t s = fi.first, end = fi.end
    cdef const sinfo_t* si
    cdef const cpar_t* par = x.par
    cdef int c
    while s < end:
        si = &x.SI[s]
        if si.role == R_ORD:
            c = si.comp
            if si.bits <= 32:
                put_egx32(w, Ue[2 * c + par[c].p], par[c])
            else:
                put_egx_E(w, Ue[2 * c + x.pp[c]], x.kk[c], si.bits, x.EE[c])
            s += 1
        elif si.role == R_FLAG:
            if not (fi.implied_flag and br[s] == 0):
                bw_put(w, cr[s], 1)
            s += 1 + (si.span if cr[s] == 0 else 0)
        elif si.role == R_QUAT:
            enc_write_quat(x, w, si, cr[s], br[s], Ue)
            s += 1
        elif si.role == R_UVEC:
            c = si.comp
            put_egx32(w, Ue[2 * c + par[c].p], par[c])
            put_egx32(w, Ue[2 * c + 2 + par[c + 1].p], par[c + 1])
            s += 1
        else:       # R_ABS
            if not fi.implied_flip:
                bw_put(w, cr[s] & si.mask, si.bits)
            s += 1


cdef inline void enc_write_entity(const enc_t* x, bw_t* w, Py_ssize_t e) noexcept nogil:
    """Changed entity e's changed fields: the common shapes directly (with AVX-512, every
    lane's code made at once by qc_vcodes, then the appends in order), the rest slot by slot.
    A smallest three whose largest component changed or whose first component escapes takes
    the slot loop."""
    cdef Py_ssize_t S = x.S, F = x.F, f, s, c
    cdef const finfo_t* FI = x.FI
    cdef const uint64_t* cr = x.a.crow + x.ccur[e] * S
    cdef const uint64_t* br = x.a.brow + x.cbase[e] * S
    cdef const uint8_t* fe = x.fch + e * F
    cdef const uint64_t* Ue = x.U + e * 2 * x.C
    cdef const cpar_t* par = x.par
    cdef uint64_t vcode[16]
    cdef int64_t vlen[16]
    cdef uint32_t vesc = 0
    cdef int shape
    if x.vec:
        qc_vcodes(x.vp, Ue, vcode, vlen, &vesc)
    for f in range(F):
        if not fe[f]:
            continue
        shape = FI[f].shape
        if x.vec and shape != SHAPE_GENERAL:
            if shape == SHAPE_ORD:
                for c in range(FI[f].c0, FI[f].c1):
                    bw_put(w, vcode[c], <int>vlen[c])
                continue
            if shape == SHAPE_NZORD:
                s = FI[f].nz
                if br[s] != 0:      # (else the flag is implied: 1, it changed)
                    bw_put(w, cr[s], 1)
                if cr[s] != 0:
                    for c in range(FI[f].c0, FI[f].c1):
                        bw_put(w, vcode[c], <int>vlen[c])
                continue
            s = FI[f].quat
            c = FI[f].c0
            if ((cr[s] >> x.CI[c].qshift) == (br[s] >> x.CI[c].qshift)
                    and not (vesc >> c) & 1):
                bw_put(w, vcode[c], <int>vlen[c])
                bw_put(w, vcode[c + 1], <int>vlen[c + 1])
                bw_put(w, vcode[c + 2], <int>vlen[c + 2])
                continue
        if shape == SHAPE_ORD:
            for c in range(FI[f].c0, FI[f].c1):
                put_egx32(w, Ue[2 * c + par[c].p], par[c])
            continue
        if shape == SHAPE_NZORD:
            s = FI[f].nz
            if br[s] != 0:      # (else the flag is implied: 1, it changed)
                bw_put(w, cr[s], 1)
            if cr[s] != 0:
                for c in range(FI[f].c0, FI[f].c1):
                    put_egx32(w, Ue[2 * c + par[c].p], par[c])
            continue
        enc_write_slots(x, w, &FI[f], cr, br, Ue)


cdef inline void enc_write_fields(const enc_t* x, bw_t* wp) noexcept nogil:
    """The changed entities' changed fields, in packet order."""
    cdef bw_t w = wp[0]         # a local copy the compiler can keep in registers
    cdef Py_ssize_t e
    for e in range(x.nchg):
        enc_write_entity(x, &w, e)
    wp[0] = w


@cython.final
cdef class DeltaEncoder(CoderBase):
    """One client's encoding workspace over a Layout: the bit writer, the encoder's scratch, the
    last packet's size. Not shared between threads (EncoderState serializes its calls).
    ``encode`` is a thin ``def`` over the nogil ``_encode``, which returns a status."""

    def __cinit__(self):
        self.w.buf = NULL
        self.w.cap = 0
        self.w.nbits = 0
        self.w.acc = 0
        self.w.owned = 1

    def __init__(self, layout not None, bint general=False):
        CoderBase.__init__(self, layout, general)
        self.vec = self.layout.vec
        self.vp = self.layout.vp        # (a copy: its per-packet entries are this coder's)
        if bw_init(&self.w, 256) < 0:
            raise MemoryError()

    def __dealloc__(self):
        cdef buf_t* b = <buf_t*>&self.b
        cdef Py_ssize_t i
        bw_free(&self.w)
        for i in range(<Py_ssize_t>(sizeof(enc_buf_t) // sizeof(buf_t))):
            buf_free(&b[i])

    cdef int _encode(self, enc_in_t* a) noexcept nogil:
        """One packet, the steps of the pipeline in order. -1: out of memory."""
        cdef enc_t x
        cdef Py_ssize_t i
        if enc_scratch(&x, &self.b, a, self.nslots, self.nfields, self.ncomps) < 0:
            return -1
        x.a = a
        x.SI = self.si
        x.CI = self.ci
        x.FI = self.fi
        x.rec_bits = self.rec_bits
        x.chg_bits = self.chg_bits
        x.vec = self.vec
        x.vp = &self.vp
        x.has_base = a.bdist > 0
        x.has_pred = a.pdist > 0
        ext_ratio(a.bdist, a.pdist, &x.num, &x.den)
        enc_match_ids(&x)                       # 1.
        enc_diff(&x)                            # 2.
        if x.nchg:
            enc_choose_k(&x)                    # 3.
        bw_reset(&self.w)                       # 4.
        if bw_reserve(&self.w, enc_bound(&x)) < 0:
            return -1
        enc_write_head(&x, &self.w)
        enc_write_new_ids(&x, &self.w)
        for i in range(x.nnew):
            self.plan.put_row(&self.w, a.crow + x.newr[i] * x.S)
        if x.has_base:
            enc_write_sets(&x, &self.w)
            enc_write_fields(&x, &self.w)
        bw_flush(&self.w)
        return 0

    def encode(self, int seq, SnapshotData cur not None, int bdist=0, SnapshotData base=None,
               int pdist=0, SnapshotData pred=None):
        """One packet: ``cur`` against an optional baseline (``bdist`` sequence numbers back)
        and an optional older snapshot for extrapolation (``pdist`` back from the baseline)."""
        return self._encode_call(seq, cur, bdist, base, pdist, pred)

    cdef bytes _encode_call(self, int seq, SnapshotData cur, int bdist, SnapshotData base,
                            int pdist, SnapshotData pred):
        cdef enc_in_t a
        cdef int rc
        cdef bytes dmap = None
        if not 0 <= seq <= 0xFFFF:
            raise ValueError(f"seq {seq} outside 0..65535")
        self._check(cur, "current")
        a.seq = seq
        a.cid = cur.idp
        a.crow = cur.rowp
        a.n = cur.n
        a.bdist = 0
        a.pdist = 0
        a.m = 0
        a.p = 0
        a.bid = NULL
        a.brow = NULL
        a.pid = NULL
        a.prow = NULL
        a.ctxmap = NULL
        a.ckey = NULL
        a.bkey = NULL
        a.pkey = NULL
        a.kw = 0
        a.same = 0
        a.nchg = 0
        if bdist:
            if not 1 <= bdist <= 0x7FFF:
                raise ValueError(f"baseline distance {bdist} outside 1..32767")
            self._check(base, "baseline")
            a.bdist = bdist
            a.m = base.n
            a.bid = base.idp
            a.brow = base.rowp
            if pdist:
                if not 1 <= pdist <= 0x7FFF or bdist + pdist > 0x7FFF:
                    raise ValueError(f"extrapolation distance {pdist} outside 1..{0x7FFF - bdist}")
                self._check(pred, "extrapolation")
                a.pdist = pdist
                a.p = pred.n
                a.pid = pred.idp
                a.prow = pred.rowp
                dmap = _diff_of(base, pred)
                if dmap is not None:
                    a.ctxmap = <const uint8_t*>PyBytes_AS_STRING(dmap)
            if _keys_match(cur, base) and (a.pdist == 0 or dmap is not None or _keys_match(cur, pred)):
                a.ckey = cur.keyp
                a.bkey = base.keyp
                a.pkey = pred.keyp if a.pdist and dmap is None else NULL
                a.kw = cur.kw
        with nogil:
            rc = self._encode(&a)
        if rc < 0:
            raise MemoryError()
        if a.same:
            _set_diff(cur, base, a.nchg, <Py_ssize_t*>self.b.ccur.p)
        self.last_bits = self.w.nbits
        return PyBytes_FromStringAndSize(<char*>self.w.buf, bw_nbytes(&self.w))
