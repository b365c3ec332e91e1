// The steps of one partition's proof on the GPU (partition_proof), which cuzk_gpu_prove
// calls top to bottom. Included by groth16.cu inside its anonymous namespace, after
// cuzk_gpu, upload_witness and the multiexps (split_msm.cuh, beside_h.cuh); not a
// standalone header.

// One partition's proof on a cuzk_gpu, in the order of the paper (cuzk_gpu_prove calls the
// steps top to bottom). Two domain-sized device vectors, x and y, do the work:
//   x = a, y = b; both to the coset; x *= y          (quotient, first half; evaluating
//                                                     over g·H, in the last step instead)
//   y = c; x, y interpolated; x = h = (y - x) / 2    (second half, over s·H; over g·H, with
//                                                     H's bases there: y to the coset,
//                                                     x = (x - y) / Z, the evaluations)
//   y = aux; the queries split from it beside H (beside_h.cuh); H over x
//   L, A, B: each query's tail and sums; or, for one not done beside H,
//   L over y; x = the A query's scalars; A;  x = the B query's scalars; B in G1 and G2.
// With the constraints on the device, x, y = A·w, B·w from the witness's slot and z = x ∘ y,
// which is C·w (evaluate_constraints says why).
// `step` names what runs, for the error message of a failure.
struct partition_proof {
    using clock = std::chrono::steady_clock;

    cuzk_gpu* g;
    const cuzk_partition* p;
    const set_slot_t& set;      // the bases and constraints of the partition's parameter set
    const char*& step;
    const gpu_t& gpu;
    stream_t& s0;
    size_t n, sms, a_len, b_len;
    bool evaluate;
    int slot = -1;              // the witness's slot, when evaluating
    bool is_staged = false;     // the witness was uploaded ahead, by the previous call
    fr_t* x = nullptr;
    fr_t* y = nullptr;
    fr_t* z = nullptr;          // c: its own vector when evaluating, else y
    const fr_t* aux_dev = nullptr;
    size_t words_a = 0, words_bi = 0;
    uint64_t *w_a = nullptr, *w_bi = nullptr, *w_ba = nullptr;
    uint32_t *pf_a = nullptr, *pf_bi = nullptr, *pf_ba = nullptr;
    double upload_ms = 0, evaluate_ms = 0, aux_upload_ms = 0;
    uint64_t sent_bytes = 0;    // host to device, for the timeline (see cuzk_step_ms)
    ahead_t taken;              // its query multiexps, done by the previous call
    uint32_t left_out = 0;      // the multiexps whose ones the batch sums (CUZK_LEFT_OUT_*)

    partition_proof(cuzk_gpu* gpu_handle, const cuzk_partition* partition, const char*& name)
        : g(gpu_handle), p(partition), set(set_at(gpu_handle, partition->set_slot)), step(name),
          gpu(gpu_handle->gpu), s0(gpu_handle->gpu[0]),
          n((size_t)1 << partition->lg_domain), sms(gpu_handle->gpu.sm_count()),
          a_len(partition->input_len + partition->a_aux_total),
          b_len(partition->b_input_total + partition->b_aux_total),
          evaluate(partition->evaluate != 0)
    {}

    // H's bases in coset evaluation form (params/coset_h.rs): n of them, H'_j for the
    // quotient's evaluation at g·ω^j. A file's own query has n - 1, always odd, so the
    // count tells the two apart. sum_j e_j H'_j equals sum_i h_i H_i for any e, so the
    // quotient stops at the evaluations, one inverse transform short.
    bool h_on_coset() const { return set.counts.h == n; }
    size_t h_len() const { return h_on_coset() ? n : n - 1; }

    // The partition against the parameters on the device, and against the constraints
    // when they evaluate it.
    void check() const
    {
        const auto& counts = set.counts;
        if (p->abc_len > n || a_len > n || b_len > n || counts.h + 1 < n ||
            counts.l != p->aux_len || counts.a != a_len || counts.b != b_len)
            throw sppark_error{cudaErrorInvalidValue,
                               std::string("the partition does not match the parameters")};
        // An even count other than n is a coset query of another domain: read as
        // coefficients it would make a wrong proof.
        if (counts.h % 2 == 0 && counts.h != 0 && !h_on_coset())
            throw sppark_error{cudaErrorInvalidValue,
                               std::string("H's bases on the coset are for another domain")};
        if (evaluate && set.matrix_rows != p->abc_len)
            throw sppark_error{cudaErrorInvalidValue,
                               std::string("the partition does not match the uploaded constraints")};
        if (p->batch_position < -1 || p->batch_position >= batch_kept_t::POSITIONS)
            throw sppark_error{cudaErrorInvalidValue,
                               std::string("a batch position past the batch's store")};
    }

    // A batch's first call drops what an earlier batch left on the handle.
    void begin_batch()
    {
        if (p->batch_position == 0)
            g->kept.clear();
    }

    // Where this call is a batch's (batch_position) and the query's bases are resident, its
    // split's ones go to the batch's store, their sum left to the batch's pattern pass
    // (batch_ones.cuh: a base's one addition serves every partition of the batch), where
    // the query is large enough for that to pay and the device has room for the bit map
    // beside the work still to come here.
    bool keep_for_batch(bit_split& split, batch_kept_t::query query, bool resident)
    {
        constexpr size_t MARGIN = (size_t)1 << 30;
        // CUZK_TEST_GPU_FAULT=small-batches: a test circuit's small queries kept too.
        const size_t from = injects("small-batches") ? 0 : batch_ones::FROM_TERMS;
        if (p->batch_position < 0 || !resident || !split.is_split || split.n < from)
            return false;
        const size_t bytes = ((split.n + 1023) / 1024 * 32 + 1) * sizeof(uint32_t);
        if (!g->has_room_for(bytes, MARGIN))
            return false;
        const int position = p->batch_position;
        split.keep_ones(g->kept.ones[position][query]);
        g->kept.terms[position][query] = split.n;
        return true;
    }

    // The query multiexps the previous call did for this partition over the pass it shared
    // with it; the handle holds them only until this call either way.
    void take_ahead()
    {
        if (g->ahead.witness_id != 0 && g->ahead.witness_id == p->witness_id &&
            g->ahead.set_slot == p->set_slot) {
            taken = g->ahead;
            sent_bytes += taken.sent_bytes;
        }
        g->ahead.clear();
    }

    // The working buffers (kept by the handle, grown only for a larger domain) and the slot
    // of the witness: the one holding it already, else one to upload it into.
    void allocate()
    {
        step = "allocating working buffers";
        g->d_a.reserve(n);                                   // x
        g->d_b.reserve(n > p->aux_len ? n : p->aux_len);     // y
        if (evaluate) {
            g->d_c.reserve(n);                               // z
            for (int k = 0; k < 2; k++)
                if (p->witness_id != 0 && g->slot_id[k] == p->witness_id &&
                    g->slot_aux[k].len >= p->aux_len)
                    slot = k;
        }
        is_staged = slot >= 0;
        if (evaluate && !is_staged) {
            slot = 0;
            g->slot_id[0] = 0;
            g->slot_aux[0].reserve(p->aux_len ? p->aux_len : 1);
        }
        g->d_inputs.reserve(p->input_len ? p->input_len : 1);
        words_a = (p->aux_len + 63) / 64;
        words_bi = (p->input_len + 63) / 64;
        size_t words = 2 * words_a + words_bi;
        g->d_words.reserve(words ? words : 1);
        g->d_prefix.reserve(words ? words : 1);
        x = g->d_a.ptr;
        y = g->d_b.ptr;
        z = evaluate ? g->d_c.ptr : y;
    }

    // The inputs, and the A and B densities with their prefix counts, for the filters.
    void upload_densities()
    {
        step = "uploading the densities";
        w_a = g->d_words.ptr;
        w_bi = w_a + words_a;
        w_ba = w_bi + words_bi;
        pf_a = g->d_prefix.ptr;
        pf_bi = pf_a + words_a;
        pf_ba = pf_bi + words_bi;
        CUDA_OK(cudaMemcpyAsync(g->d_inputs.ptr, p->inputs, p->input_len * sizeof(fr_t),
                                cudaMemcpyHostToDevice, s0));
        CUDA_OK(cudaMemcpyAsync(w_a, p->a_aux_words, words_a * 8, cudaMemcpyHostToDevice, s0));
        CUDA_OK(cudaMemcpyAsync(w_bi, p->b_input_words, words_bi * 8, cudaMemcpyHostToDevice, s0));
        CUDA_OK(cudaMemcpyAsync(w_ba, p->b_aux_words, words_a * 8, cudaMemcpyHostToDevice, s0));
        CUDA_OK(cudaMemcpyAsync(pf_a, p->a_aux_prefix, words_a * 4, cudaMemcpyHostToDevice, s0));
        CUDA_OK(cudaMemcpyAsync(pf_bi, p->b_input_prefix, words_bi * 4, cudaMemcpyHostToDevice, s0));
        CUDA_OK(cudaMemcpyAsync(pf_ba, p->b_aux_prefix, words_a * 4, cudaMemcpyHostToDevice, s0));
        sent_bytes += p->input_len * sizeof(fr_t) + (2 * words_a + words_bi) * 12;
    }

    // The bytes of the partition's witness as it crosses the bus: whole, or as bits and wide
    // values when compact.
    uint64_t witness_bytes() const { return witness_bytes_of(p); }

    static uint64_t witness_bytes_of(const cuzk_partition* q)
    {
        if (!q->aux_ones)
            return q->aux_len * sizeof(fr_t);
        return (q->aux_len + 63) / 64 * sizeof(uint64_t) +
               q->aux_wide_len * (sizeof(uint32_t) + sizeof(fr_t));
    }

    // Bases of `count` points of `size` bytes went up from the host, unless `resident`.
    void count_streamed(bool resident, size_t count, size_t size)
    {
        if (!resident)
            sent_bytes += (uint64_t)count * size;
    }

    // dst = a, b or c (`which`: abc_len values from the host) padded with zeros to the
    // domain, timed: whole, or as the host holds it compact, its bits and each chunk's
    // packed wide values, made whole here.
    void upload_padded(fr_t* dst, int which)
    {
        const fr_t* src = which == 0 ? p->a : which == 1 ? p->b : p->c;
        const cuzk_compact_abc& compact = p->abc_compact[which];
        auto u0 = clock::now();
        if (!compact.ones) {
            g->stage.copy(dst, src, p->abc_len * sizeof(fr_t));
            sent_bytes += p->abc_len * sizeof(fr_t);
        } else {
            upload_compact(dst, src, compact);
        }
        if (p->abc_len < n)
            CUDA_OK(cudaMemsetAsync(dst + p->abc_len, 0, (n - p->abc_len) * sizeof(fr_t), s0));
        upload_ms += ms_between(u0, clock::now());
    }

    void upload_compact(fr_t* dst, const fr_t* src, const cuzk_compact_abc& compact)
    {
        size_t rows = p->abc_len, chunk_rows = compact.chunk_rows;
        if (chunk_rows == 0 || chunk_rows % 64 != 0)
            throw sppark_error{cudaErrorInvalidValue,
                               std::string("a compact vector's chunks are not whole words")};
        size_t words = (rows + 63) / 64, chunks = (rows + chunk_rows - 1) / chunk_rows;
        stager_t& stage = g->stage;
        pool_buffer<uint64_t> bits{2 * words + 1, stage.stream};
        pool_buffer<uint32_t> before{words + 1, stage.stream};
        stage.copy(bits.ptr, compact.ones, words * sizeof(uint64_t));
        stage.copy(bits.ptr + words, compact.wide, words * sizeof(uint64_t));
        stage.copy(before.ptr, compact.wide_before, words * sizeof(uint32_t));
        sent_bytes += words * (2 * sizeof(uint64_t) + sizeof(uint32_t));
        for (size_t k = 0; k < chunks; k++) {
            size_t packed = compact.chunk_wide[k];
            if (packed > chunk_rows || k * chunk_rows + packed > rows)
                throw sppark_error{cudaErrorInvalidValue,
                                   std::string("a compact vector's chunk holds more than its rows")};
            stage.copy(dst + k * chunk_rows, src + k * chunk_rows, packed * sizeof(fr_t));
            sent_bytes += packed * sizeof(fr_t);
        }
        if (chunks)
            expand_abc_chunks<<<(unsigned)chunks, 1024, 0, stage.stream>>>(
                dst, rows, chunk_rows, bits.ptr, bits.ptr + words, before.ptr, fr_t::one());
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaStreamSynchronize(stage.stream));
    }

    // x, y, z = A·w, B·w, C·w from the witness's slot, uploading the witness first unless
    // the previous call did (then its upload costs this call nothing). z as x ∘ y, not from
    // C: a witness that satisfies the circuit has (A·w)_r (B·w)_r = (C·w)_r in every row (the
    // inputs' rows, input · 0 = 0, and the rows past the constraints, 0 · 0 = 0, too), so
    // the quotient is the same, and C's entries (39% of a PoRep circuit's) are neither read
    // nor kept on the device. One that does not satisfy it gave a proof that fails
    // verification and still does: the proof's C element carries C through the L query
    // (sum_i w_i (β u_i + α v_i + w_i)(τ)), so the verifier's check holds only if
    // A·w ∘ B·w = C·w, and x ∘ y in place of C·w makes h exact but not the check.
    void evaluate_constraints()
    {
        step = "uploading the witness";
        auto u0 = clock::now();
        s0.sync();      // the inputs, on s0
        sent_bytes += witness_bytes();  // now, or ahead by the previous call
        if (!is_staged) {
            upload_witness(g, g->slot_aux[slot].ptr, p);
            g->slot_id[slot] = p->witness_id;
            upload_ms += ms_between(u0, clock::now());
        }
        aux_dev = g->slot_aux[slot].ptr;
        step = "evaluating the constraints";
        auto e0 = clock::now();
        fr_t* outs[2] = {x, y};
        for (int k = 0; k < 2; k++) {
            evaluate_rows<<<sms * 8, 256, 0, s0>>>(outs[k], set.row_ptr[k].ptr,
                                                   set.entries[k].ptr, set.coeffs.ptr,
                                                   g->d_inputs.ptr, aux_dev, p->abc_len, n,
                                                   set.one_id, set.minus_one_id);
            CUDA_OK(cudaGetLastError());
        }
        pointwise_product<<<sms, 1024, 0, s0>>>(z, x, y, n);
        CUDA_OK(cudaGetLastError());
        s0.sync();
        evaluate_ms = ms_between(e0, clock::now());
    }

    // h into x (quotient.cuh): a and b to the coset and multiplied there, then combined
    // with c. Without the constraints on the device, b goes up while a's NTTs run, and c
    // into y once the product no longer reads it.
    void quotient()
    {
        quotient_steps steps{s0, (uint32_t)p->lg_domain, h_on_coset()};
        if (evaluate) {
            evaluate_constraints();
            step = "computing the quotient";
            steps.to_coset(x);
        } else {
            step = "uploading a";
            upload_padded(x, 0);
            // a's NTTs run on s0 while b goes up on the stager's stream.
            step = "computing the quotient";
            steps.to_coset(x);
            step = "uploading b";
            upload_padded(y, 1);
        }
        step = "computing the quotient";
        steps.to_coset(y);
        // Where c has its own vector (evaluating) and h is taken over g·H, the product is
        // the last step's, a pass over the domain fewer; else it is taken here.
        const bool product_last = evaluate && steps.takes_product();
        if (!product_last) {
            pointwise_product<<<sms, 1024, 0, s0>>>(x, x, y, n);
            CUDA_OK(cudaGetLastError());
        }
        if (!evaluate) {
            step = "uploading c";
            s0.sync();      // the product above still reads y; the stager has its own stream
            upload_padded(z, 2);
        }
        step = "computing the quotient";
        steps.finish(x, product_last ? y : nullptr, z);
    }

    // The next partition's witness goes up into the other slot while the multiexps run,
    // where the device evaluates both and has room for a second slot; a failure only means
    // it goes up at its own call. The caller joins the thread.
    std::thread upload_next_witness(const cuzk_partition* next)
    {
        if (!(evaluate && next && next->evaluate && next->witness_id != 0 &&
              next->witness_id != p->witness_id && next->aux_len == p->aux_len))
            return std::thread();
        int other = 1 - slot;
        size_t bytes = next->aux_len * sizeof(fr_t);
        bool has_room = g->slot_aux[other].len >= next->aux_len ||
                        g->has_room_for(bytes, (size_t)2 << 30);
        if (!has_room)
            return std::thread();
        g->slot_id[other] = 0;
        cuzk_gpu* handle = g;
        int device = gpu.cid();
        return std::thread([handle, next, other, device] {
            (void)cudaSetDevice(device);
            (void)upload_into_slot(handle, next, other);
        });
    }

    // The witness into y, where the host evaluated a, b and c (evaluating, it is in its slot
    // already): compact where it came so, a few hundred MB at most, else whole.
    void upload_aux()
    {
        if (evaluate)
            return;
        step = "uploading the witness";
        auto u0 = clock::now();
        sent_bytes += witness_bytes();
        upload_witness(g, y, p);
        aux_dev = y;
        aux_upload_ms = ms_between(u0, clock::now());
    }

    // Splits the queries from the witness and allocates what their work beside H needs
    // (beside_h.cuh); a query that does not fit is left to the steps after H. The partition
    // after this one (`next`) shares the pass where it can (split_next).
    void prepare_beside(beside_h& side, const cuzk_partition* next)
    {
        step = "preparing the queries beside H";
        // The faults of the bit split's fallbacks exercise the steps after H.
        if (injects("beside-oom") || injects("split-oom") || injects("tail-oom"))
            return;
        side.margin = pippenger_bytes(h_len(), sizeof(affine_t), sizeof(bucket_t::mem_t),
                                      !set.resident[CUZK_H], sms) + ((size_t)256 << 20);
        // Only streamed sets: a resident set's multiexp is kernels alone, which H's keep
        // busy, so beside H it would only take turns with them. Nor sets done ahead.
        bool streams[5];
        for (int k = 0; k < 5; k++)
            streams[k] = !set.resident[k];
        streams[CUZK_L] &= !taken.has_l;
        streams[CUZK_A] &= !taken.has_a;
        streams[CUZK_B_G1] &= !taken.has_b_g1;
        streams[CUZK_B_G2] &= !taken.has_b_g2;
        bool b_streams = streams[CUZK_B_G1] || streams[CUZK_B_G2];
        if (!streams[CUZK_L] && !streams[CUZK_A] && !b_streams)
            return;
        auto& own = side.own;
        try {
            split_queries(side, own, streams, g->d_inputs.ptr, witness_view::whole(aux_dev),
                          w_a, w_bi, w_ba, pf_a, pf_bi, pf_ba);
            split_next(side, next, streams);
            // The chunks get what the sets' own buffers leave.
            if (!side.allocate_chunks(own.bytes(side, streams) + side.next.bytes(side, streams)))
                return;
            for (auto* q : {&own, &side.next}) {
                if (streams[CUZK_L])
                    side.prepare(q->l_g1, q->l, p->host_l);
                if (streams[CUZK_A])
                    side.prepare(q->a_g1, q->a, p->host_a);
                if (streams[CUZK_B_G1])
                    side.prepare(q->b_g1, q->b, p->host_b_g1);
                if (streams[CUZK_B_G2])
                    side.prepare(q->b_g2, q->b, p->host_b_g2);
            }
        } catch (const cuda_error& e) {
            if (error_of(e) != cudaErrorMemoryAllocation)
                throw;
            (void)cudaGetLastError();   // what was prepared runs; the rest after H
        }
    }

    // Splits a partition's queries over the sets that stream (L over the aux witness, A over
    // [inputs, aux used in A], B over [inputs used in B, aux used in B]) into `q`, from its
    // inputs, aux witness (whole or compact) and densities on the device.
    void split_queries(beside_h& side, beside_h::queries_t& q, const bool* streams,
                       const fr_t* inputs, witness_view aux, const uint64_t* wa,
                       const uint64_t* wbi, const uint64_t* wba, const uint32_t* pfa,
                       const uint32_t* pfbi, const uint32_t* pfba)
    {
        const witness_view in = witness_view::whole(inputs);
        if (streams[CUZK_L])
            side.split(q.l, p->aux_len, {{aux, nullptr, nullptr, words_a, p->aux_len, 0}});
        if (streams[CUZK_A])
            side.split(q.a, a_len,
                       {{in, nullptr, nullptr, words_bi, p->input_len, 0},
                        {aux, wa, pfa, words_a, p->aux_len, p->input_len}});
        if (streams[CUZK_B_G1] || streams[CUZK_B_G2])
            side.split(q.b, b_len,
                       {{in, wbi, pfbi, words_bi, p->input_len, 0},
                        {aux, wba, pfba, words_a, p->aux_len, p->b_input_total}});
    }

    // Whether partition `q`, the one proved after this one, may share this one's pass over
    // the streamed bases: the same parameter set and query lengths, its densities given
    // (the view the host passes for it when a, b and c are not evaluated here), and no
    // multiexp of this one done ahead (a partition taken ahead leaves the next pass to the
    // partition after it). CUZK_SHARED_PASS=0 turns it off, for measuring.
    bool shares_pass_with(const cuzk_partition* q) const
    {
        static const char* choice = std::getenv("CUZK_SHARED_PASS");
        if (choice && (std::strcmp(choice, "0") == 0 || std::strcmp(choice, "off") == 0))
            return false;
        return q && !evaluate && !q->evaluate && q->witness_id != 0 &&
               q->witness_id != p->witness_id && q->set_slot == p->set_slot &&
               q->aux_len == p->aux_len && q->input_len == p->input_len &&
               q->a_aux_total == p->a_aux_total && q->b_input_total == p->b_input_total &&
               q->b_aux_total == p->b_aux_total && q->a_aux_words && q->b_input_words &&
               q->b_aux_words && !taken.any();
    }

    // The next partition's queries split like this one's into side.next: its witness,
    // inputs and densities go up into buffers of their own for the split, given back (and
    // the pool trimmed, so that the chunks and H find the room) before the pass. A compact
    // witness is split as it is (witness_view): at 32GiB ~100 MB on the device where
    // expanded it took 4.2 GB, which a 16 GB card does not have beside H.
    void split_next(beside_h& side, const cuzk_partition* q, const bool* streams)
    {
        if (!shares_pass_with(q))
            return;
        step = "splitting the next partition's queries";
        stager_t& stage = g->stage;
        const size_t words = 2 * words_a + words_bi;
        // A compact witness also takes the lookup's bit and count per 64 variables.
        const size_t lookup_bytes = q->aux_ones ? (q->aux_len + 63) / 64 * 12 : 0;
        const size_t bytes =
            witness_bytes_of(q) + lookup_bytes + q->input_len * sizeof(fr_t) + words * 12;
        if (!g->has_room_for(bytes, side.margin))
            return;
        try {
            pool_buffer<fr_t> inputs{q->input_len, stage.stream};
            pool_buffer<uint64_t> w{words, stage.stream};
            pool_buffer<uint32_t> pf{words, stage.stream};
            next_witness_t aux;
            aux.upload(g, q);
            CUDA_OK(cudaMemcpyAsync(inputs.ptr, q->inputs, q->input_len * sizeof(fr_t),
                                    cudaMemcpyHostToDevice, stage.stream));
            const uint64_t* host_w[3] = {q->a_aux_words, q->b_input_words, q->b_aux_words};
            const uint32_t* host_pf[3] = {q->a_aux_prefix, q->b_input_prefix, q->b_aux_prefix};
            const size_t lens[3] = {words_a, words_bi, words_a};
            size_t at = 0;
            for (int k = 0; k < 3; k++) {
                CUDA_OK(cudaMemcpyAsync(w.ptr + at, host_w[k], lens[k] * 8,
                                        cudaMemcpyHostToDevice, stage.stream));
                CUDA_OK(cudaMemcpyAsync(pf.ptr + at, host_pf[k], lens[k] * 4,
                                        cudaMemcpyHostToDevice, stage.stream));
                at += lens[k];
            }
            CUDA_OK(cudaStreamSynchronize(stage.stream));
            sent_bytes += witness_bytes_of(q) + q->input_len * sizeof(fr_t) + words * 12;
            split_queries(side, side.next, streams, inputs.ptr, aux.view, w.ptr,
                          w.ptr + words_a, w.ptr + words_a + words_bi, pf.ptr,
                          pf.ptr + words_a, pf.ptr + words_a + words_bi);
        } catch (const cuda_error& e) {
            if (error_of(e) != cudaErrorMemoryAllocation)
                throw;
            (void)cudaGetLastError();
            side.next.l.release();
            side.next.a.release();
            side.next.b.release();
        }
        // The split's kernels ran on `work` and ended (split() syncs it); the buffers above
        // went back to the pool on the stager's stream.
        CUDA_OK(cudaStreamSynchronize(stage.stream));
        cudaMemPool_t pool;
        if (cudaDeviceGetDefaultMemPool(&pool, gpu.cid()) == cudaSuccess)
            (void)cudaMemPoolTrimTo(pool, 0);
        step = "preparing the queries beside H";
    }

    // The next partition's witness on the device for its split, as it came: whole, or its
    // bits and wide values with the lookup's bits and counts made here (witness_view).
    struct next_witness_t {
        pool_buffer<fr_t> whole, values;
        pool_buffer<uint64_t> ones, wide;
        pool_buffer<uint32_t> index, before;
        witness_view view;

        void upload(cuzk_gpu* g, const cuzk_partition* q)
        {
            stager_t& stage = g->stage;
            if (!q->aux_ones) {
                whole = pool_buffer<fr_t>{q->aux_len, stage.stream};
                upload_witness(g, whole.ptr, q);
                view = witness_view::whole(whole.ptr);
                return;
            }
            const size_t nwords = (q->aux_len + 63) / 64, n = q->aux_wide_len;
            ones = pool_buffer<uint64_t>{nwords ? nwords : 1, stage.stream};
            wide = pool_buffer<uint64_t>{nwords ? nwords : 1, stage.stream};
            before = pool_buffer<uint32_t>{nwords ? nwords : 1, stage.stream};
            index = pool_buffer<uint32_t>{n ? n : 1, stage.stream};
            values = pool_buffer<fr_t>{n ? n : 1, stage.stream};
            stage.copy(ones.ptr, q->aux_ones, nwords * sizeof(uint64_t));
            stage.copy(index.ptr, q->aux_wide_index, n * sizeof(uint32_t));
            stage.copy(values.ptr, q->aux_wide, n * sizeof(fr_t));
            CUDA_OK(cudaMemsetAsync(wide.ptr, 0, nwords * sizeof(uint64_t), stage.stream));
            const int grid = (int)g->gpu.sm_count() * 4;
            if (n)
                mark_wide<<<grid, 256, 0, stage.stream>>>(
                    reinterpret_cast<unsigned long long*>(wide.ptr), index.ptr, n);
            CUDA_OK(cudaGetLastError());
            if (nwords)
                count_wide_before<<<grid, 256, 0, stage.stream>>>(before.ptr, index.ptr, n,
                                                                  nwords);
            CUDA_OK(cudaGetLastError());
            view.ones = ones.ptr;
            view.wide = wide.ptr;
            view.wide_before = before.ptr;
            view.values = values.ptr;
        }
    };

    // The next partition's multiexps over the shared pass: finished here (their tails'
    // Pippenger, their sums) and kept on the handle for its call, with its share of the
    // pass's bytes; this partition counts the rest. Out of device memory only leaves them
    // to that call.
    void keep_next(beside_h& side, const cuzk_partition* q)
    {
        uint64_t next_share = side.shared_bytes / 2;
        auto& n = side.next;
        if (!q || !n.any_done())
            next_share = 0;
        sent_bytes += side.sent_bytes - next_share;
        if (next_share == 0)
            return;
        step = "finishing the next partition's queries";
        ahead_t kept;
        kept.witness_id = q->witness_id;
        kept.set_slot = q->set_slot;
        kept.sent_bytes = next_share;
        try {
            kept.has_l = side.finish(kept.l, n.l_g1, n.l);
            kept.has_a = side.finish(kept.a, n.a_g1, n.a);
            kept.has_b_g1 = side.finish(kept.b_g1, n.b_g1, n.b);
            kept.has_b_g2 = side.finish(kept.b_g2, n.b_g2, n.b);
        } catch (const cuda_error& e) {
            if (error_of(e) != cudaErrorMemoryAllocation)
                throw;
            (void)cudaGetLastError();
            return;
        }
        n.l.release();
        n.a.release();
        n.b.release();
        g->ahead = kept;
    }

    // sum_j h_j H_j over x: the coefficients, or on the coset the evaluations; canonical,
    // as the quotient leaves them.
    void multiexp_h(point_t& out)
    {
        step = "the H multiexp";
        count_streamed(set.resident[CUZK_H], h_len(), sizeof(affine_t));
        run_msm<bucket_t>(gpu, out, set.resident[CUZK_H] ? set.h.ptr : nullptr, p->host_h, x,
                          h_len(), true, scalar_form::canonical);
    }

    // sum_i w_i L_i over the aux witness: split, its scalars are mostly bits; from its work
    // beside H where it ran there.
    void multiexp_l(point_t& out, beside_h& side)
    {
        step = "the L multiexp";
        if (injects("sticky", g->index)) {
            write_through_null<<<1, 1, 0, gpu[0]>>>();
            gpu[0].sync();
        }
        if (injects("hang", g->index)) {
            spin_forever<<<1, 1, 0, gpu[0]>>>();
            gpu[0].sync();
        }
        if (taken.has_l) {
            out = taken.l;
            return;
        }
        bool done = side.finish(out, side.own.l_g1, side.own.l);
        side.own.l.release();
        if (done)
            return;
        bit_split split{gpu, aux_dev, p->aux_len};
        if (keep_for_batch(split, batch_kept_t::L, set.resident[CUZK_L]))
            left_out |= CUZK_LEFT_OUT_L;
        count_streamed(set.resident[CUZK_L], p->aux_len, sizeof(affine_t));
        run_query_msm<bucket_t>(gpu, split, out, set.resident[CUZK_L] ? set.l.ptr : nullptr,
                                p->host_l, aux_dev);
    }

    // dst[k] = the k-th variable of `src` (of `nbits`) whose density bit is set.
    void filter(fr_t* dst, const fr_t* src, const uint64_t* words, const uint32_t* prefix,
                size_t nwords, size_t nbits)
    {
        if (nwords == 0)
            return;
        filter_by_density<<<(nwords + 255) / 256, 256, 0, s0>>>(dst, src, words, prefix, nwords,
                                                              nbits);
        CUDA_OK(cudaGetLastError());
    }

    // sum_i s_i A_i over the A query, [inputs, aux used in A]: from its work beside H, else
    // built in x.
    void multiexp_a(point_t& out, beside_h& side)
    {
        step = "the A multiexp";
        if (taken.has_a) {
            out = taken.a;
            return;
        }
        bool done = side.finish(out, side.own.a_g1, side.own.a);
        side.own.a.release();
        if (done)
            return;
        step = "filtering the A query";
        CUDA_OK(cudaMemcpyAsync(x, g->d_inputs.ptr, p->input_len * sizeof(fr_t),
                                cudaMemcpyDeviceToDevice, s0));
        filter(x + p->input_len, aux_dev, w_a, pf_a, words_a, p->aux_len);
        s0.sync();
        step = "the A multiexp";
        bit_split split{gpu, x, a_len};
        if (keep_for_batch(split, batch_kept_t::A, set.resident[CUZK_A]))
            left_out |= CUZK_LEFT_OUT_A;
        count_streamed(set.resident[CUZK_A], a_len, sizeof(affine_t));
        run_query_msm<bucket_t>(gpu, split, out, set.resident[CUZK_A] ? set.a.ptr : nullptr,
                                p->host_a, x);
    }

    // The B query's multiexps in G1 and G2, [inputs used in B, aux used in B]: from their
    // work beside H; either not done there over the query built in x, one split of its
    // scalars serving both. Returns when G1's ended.
    clock::time_point multiexp_b(point_t& out_g1, point_fp2_t& out_g2, beside_h& side)
    {
        step = "the B multiexp in G1";
        bool g1 = taken.has_b_g1 || side.finish(out_g1, side.own.b_g1, side.own.b);
        if (taken.has_b_g1)
            out_g1 = taken.b_g1;
        auto g1_done = clock::now();
        step = "the B multiexp in G2";
        bool g2 = taken.has_b_g2 || side.finish(out_g2, side.own.b_g2, side.own.b);
        if (taken.has_b_g2)
            out_g2 = taken.b_g2;
        side.own.b.release();
        if (g1 && g2)
            return g1_done;
        step = "filtering the B query";
        filter(x, g->d_inputs.ptr, w_bi, pf_bi, words_bi, p->input_len);
        filter(x + p->b_input_total, aux_dev, w_ba, pf_ba, words_a, p->aux_len);
        s0.sync();
        bit_split split{gpu, x, b_len};
        // One bit map serves both groups: kept only where both multiexps run here.
        if (!g1 && !g2 &&
            keep_for_batch(split, batch_kept_t::B,
                           set.resident[CUZK_B_G1] && set.resident[CUZK_B_G2]))
            left_out |= CUZK_LEFT_OUT_B_G1 | CUZK_LEFT_OUT_B_G2;
        if (!g1) {
            step = "the B multiexp in G1";
            count_streamed(set.resident[CUZK_B_G1], b_len, sizeof(affine_t));
            run_query_msm<bucket_t>(gpu, split, out_g1,
                                    set.resident[CUZK_B_G1] ? set.b_g1.ptr : nullptr,
                                    p->host_b_g1, x);
            g1_done = clock::now();
        }
        if (!g2) {
            step = "the B multiexp in G2";
            count_streamed(set.resident[CUZK_B_G2], b_len, sizeof(affine_fp2_t));
            run_query_msm<bucket_fp2_t>(gpu, split, out_g2,
                                        set.resident[CUZK_B_G2] ? set.b_g2.ptr : nullptr,
                                        p->host_b_g2, x);
        }
        return g1_done;
    }
};

// Joins a thread when it goes out of scope, also when a step throws.
struct joiner {
    std::thread& t;
    ~joiner() { if (t.joinable()) t.join(); }
};
