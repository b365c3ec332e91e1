// The quotient h = (a*b - c) / Z on one stream (quotient_steps), and the next partition's
// quotient computed beside this partition's multiexps (quotient_ahead). Included by
// groth16.cu inside its anonymous namespace, after cuzk_gpu, upload_into_slot and the
// kernels; not a standalone header.
//
// Why ahead: the H multiexp's digit count and placement (about 120 of its 840 ms at
// 2^27) and its reductions leave the GPU's integer units idle, and the quotient's
// transforms (about 290 ms) need nothing but those units and the partition's witness.
// Where the GPU evaluates the constraints, the next partition's witness already goes up
// during this call's multiexps; its quotient then runs on its own stream into the two
// vectors this call no longer reads (y, z), and the next call starts at its H multiexp.
//
// Ownership: the ahead work writes only y and z of this call, the other witness slot and
// the handle's d_inputs_ahead, on the handle's ahead_stream; its thread syncs that stream
// before it ends, also after a failure, and the call joins the thread before it returns.
// A failure drops the result (the next call computes its quotient itself) and never
// reaches this call's proof.

// The quotient's transforms on stream `s`, over a domain of 2^lg: h is taken over the
// coset s·H (s a primitive 2n-th root of unity, backend/quotient.rs) with the file's own
// H query, over g·H with H's bases there (params/coset_h.rs). A domain of sppark's largest
// size has no s in its tables: the textbook's steps there.
struct quotient_steps {
    stream_t& s;
    uint32_t lg;
    size_t n, sms;
    bool h_on_coset;

    quotient_steps(stream_t& stream, uint32_t lg_domain, bool coset_h)
        : s(stream), lg(lg_domain), n((size_t)1 << lg_domain), sms(stream.sm_count()),
          h_on_coset(coset_h)
    {}

    bool over_half_root() const { return !h_on_coset && lg < MAX_LG_DOMAIN_SIZE; }

    // v = its evaluations on the quotient's coset: iNTT, the shift, the NTT.
    void to_coset(fr_t* v)
    {
        NTT::Base_dev_ptr(s, v, lg, NTT::InputOutputOrder::NR, NTT::Direction::inverse,
                          NTT::Type::standard);
        bool half_root = over_half_root();
        if (half_root) {
            shift_to_half_root<<<sms, 1024, 0, s>>>(v, lg,
                                                     NTTParameters::all(false)[s].partial_twiddles);
            CUDA_OK(cudaGetLastError());
        }
        // sppark's coset NTT shifts by g itself.
        NTT::Base_dev_ptr(s, v, lg, NTT::InputOutputOrder::RN, NTT::Direction::forward,
                          half_root ? NTT::Type::standard : NTT::Type::coset);
    }

    // prod = â·b̂ on the coset, c = C·w on the domain (overwritten): h into prod, as the
    // H query reads it. Over s·H the product and c are interpolated and combined,
    // h = (C - S) / 2; over g·H, c goes to the coset and prod = (prod - c) / Z, the
    // evaluations, interpolated back unless H's bases are on the coset. Returns once done.
    void finish(fr_t* prod, fr_t* c)
    {
        if (over_half_root()) {
            // Both inverse NTTs leave bit-reversed order, which the combination keeps;
            // one permutation puts h in natural order for H's bases.
            NTT::Base_dev_ptr(s, prod, lg, NTT::InputOutputOrder::NR, NTT::Direction::inverse,
                              NTT::Type::standard);
            NTT::Base_dev_ptr(s, c, lg, NTT::InputOutputOrder::NR, NTT::Direction::inverse,
                              NTT::Type::standard);
            half_root_quotient<<<sms, 1024, 0, s>>>(
                prod, c, half(), lg, NTTParameters::all(true)[s].partial_twiddles);
            CUDA_OK(cudaGetLastError());
            ntt_steps::bit_rev(prod, prod, lg, s);
            s.sync();
            return;
        }
        to_coset(c);
        sub_scale<<<sms, 1024, 0, s>>>(prod, c, z_inverse_on_coset(lg), n);
        CUDA_OK(cudaGetLastError());
        // The coset NTTs above (RN) leave natural order: prod[j] is the evaluation at
        // g·ω^j, the order of H's bases on the coset, and sppark's coset shift is cuzk's g.
        if (!h_on_coset)
            NTT::Base_dev_ptr(s, prod, lg, NTT::InputOutputOrder::NN, NTT::Direction::inverse,
                              NTT::Type::coset);
        s.sync();
    }
};

// Turned on by CUZK_QUOTIENT_AHEAD=1 (or on); read once. Off by default until a GPU has
// measured it against the quotient in its own call (BENCHMARKS.md).
bool quotient_ahead_on()
{
    static const bool on = [] {
        const char* choice = std::getenv("CUZK_QUOTIENT_AHEAD");
        return choice && (std::strcmp(choice, "1") == 0 || std::strcmp(choice, "on") == 0);
    }();
    return on;
}

// The next partition `q`'s quotient into `y`, with `z` for c, from its witness in slot
// `slot` (uploaded here first) and its inputs, over the constraints of set `set`: the
// steps of partition_proof::quotient with two vectors, c evaluated once the product is
// made (evaluate_rows' `times`: A·w, then times B·w). Runs on its own thread; records
// the result on the handle, or nothing after a failure.
void quotient_ahead(cuzk_gpu* g, const cuzk_partition* q, const set_slot_t& set, size_t set_slot,
                    int slot, fr_t* y, fr_t* z, uint32_t lg, bool h_on_coset)
{
    using clock = std::chrono::steady_clock;
    stream_t& s = *g->ahead_stream;
    if (!upload_into_slot(g, q, slot))
        return;
    try {
        const fr_t* aux = g->slot_aux[slot].ptr;
        const size_t n = (size_t)1 << lg;
        const unsigned sms = (unsigned)s.sm_count();
        g->d_inputs_ahead.reserve(q->input_len ? q->input_len : 1);
        CUDA_OK(cudaMemcpyAsync(g->d_inputs_ahead.ptr, q->inputs, q->input_len * sizeof(fr_t),
                                cudaMemcpyHostToDevice, s));
        auto rows = [&](fr_t* out, int matrix, bool times) {
            evaluate_rows<<<sms * 8, 256, 0, s>>>(out, set.row_ptr[matrix].ptr,
                                                  set.entries[matrix].ptr, set.coeffs.ptr,
                                                  g->d_inputs_ahead.ptr, aux, q->abc_len, n,
                                                  set.one_id, set.minus_one_id, times);
            CUDA_OK(cudaGetLastError());
        };
        auto t0 = clock::now();
        rows(y, 0, false);
        rows(z, 1, false);
        s.sync();
        double evaluate_ms = ms_between(t0, clock::now());
        auto t1 = clock::now();
        quotient_steps steps{s, lg, h_on_coset};
        steps.to_coset(y);
        steps.to_coset(z);
        pointwise_product<<<sms, 1024, 0, s>>>(y, y, z, n);
        CUDA_OK(cudaGetLastError());
        s.sync();
        double product_ms = ms_between(t1, clock::now());
        auto t2 = clock::now();
        rows(z, 0, false);
        rows(z, 1, true);
        s.sync();
        evaluate_ms += ms_between(t2, clock::now());
        auto t3 = clock::now();
        steps.finish(y, z);
        quotient_ahead_t& done = g->quotient_ahead;
        done.witness_id = q->witness_id;
        done.set_slot = set_slot;
        done.lg_domain = lg;
        done.h = y;
        done.evaluate_ms = evaluate_ms;
        done.quotient_ms = product_ms + ms_between(t3, clock::now());
    } catch (...) {
        g->quotient_ahead.clear();
        (void)cudaGetLastError();
        (void)cudaStreamSynchronize(s);
    }
}
