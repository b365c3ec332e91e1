// The quotient h = (a*b - c) / Z: its transforms on one stream (quotient_steps), which
// partition_proof::quotient runs between its uploads or evaluations. Included by groth16.cu
// inside its anonymous namespace, after the kernels; not a standalone header.

// The quotient's transforms on stream `s`, over a domain of 2^lg: h is taken over the
// coset s·H (s a primitive 2n-th root of unity, backend/quotient.rs) with the file's own
// H query, over g·H with H's bases there (params/coset_h.rs). A domain of sppark's largest
// size has no s in its tables: the textbook's steps there.
//
// h comes out canonical, not in Montgomery form: its last multiplication takes a constant's
// canonical words (quotient_on_coset says why), and every step after it is linear with
// Montgomery constants, which keeps it so. The H multiexp then takes its digits directly.
struct quotient_steps {
    stream_t& s;
    uint32_t lg;
    size_t n, sms;
    bool h_on_coset;
    // The coset shift's root, its low window scaled by 1/n (scale_low_powers), and the
    // exponent's step (shift_and_scale): s's or g's.
    const fr_t (*powers)[WINDOW_SIZE];
    uint32_t step;
    pool_buffer<fr_t> low;

    quotient_steps(stream_t& stream, uint32_t lg_domain, bool coset_h)
        : s(stream), lg(lg_domain), n((size_t)1 << lg_domain), sms(stream.sm_count()),
          h_on_coset(coset_h)
    {
        const NTTParameters& forward = NTTParameters::all(false)[s];
        powers = over_half_root() ? forward.partial_twiddles : forward.partial_group_gen_powers;
        step = over_half_root() ? MAX_LG_DOMAIN_SIZE - 1 - lg : 0;
        low = pool_buffer<fr_t>{WINDOW_SIZE, s};
        scale_low_powers<<<WINDOW_SIZE / 256, 256, 0, s>>>(low.ptr, powers,
                                                           domain_size_inverse[lg]);
        CUDA_OK(cudaGetLastError());
    }

    bool over_half_root() const { return !h_on_coset && lg < MAX_LG_DOMAIN_SIZE; }

    // The inverse NTT (natural order in, bit-reversed out) without its 1/n, which the step
    // after it takes: sppark's passes, split as its NTT splits them.
    void inverse_unscaled(fr_t* v)
    {
        if (lg == 0)
            return;
        GS_launcher passes{v, (int)lg, false, NTTParameters::all(true)[s], s};
        if (lg <= 10) {
            passes.step((int)lg);
        } else if (lg <= 18) {
            passes.step((int)lg / 2);
            passes.step((int)lg / 2 + (int)lg % 2);
        } else {
            passes.step((int)lg / 3 + (int)lg % 3);
            passes.step((int)lg / 3);
            passes.step((int)lg / 3);
        }
    }

    // v = its evaluations on the quotient's coset: the inverse NTT, the shift with the
    // inverse's 1/n in it (sppark's coset NTT would shift in a pass with as many
    // multiplications, and its inverse multiply by 1/n in one more), the NTT.
    void to_coset(fr_t* v)
    {
        inverse_unscaled(v);
        shift_and_scale<<<sms, 1024, 0, s>>>(v, lg, step, low.ptr, powers);
        CUDA_OK(cudaGetLastError());
        NTT::Base_dev_ptr(s, v, lg, NTT::InputOutputOrder::RN, NTT::Direction::forward,
                          NTT::Type::standard);
    }

    // A constant's canonical words as an element (quotient_on_coset says why).
    static fr_t canonical(fr_t k)
    {
        k.from();
        return k;
    }

    // Whether finish takes b̂ and the product with it (over g·H), or only the product.
    bool takes_product() const { return !over_half_root(); }

    // x = â b̂ on the coset, or â with b̂ there where finish takes the product (b, else
    // null), c = C·w on the domain (overwritten): h into x, canonical, as the H query reads
    // it. Over s·H the product and c are interpolated and combined, h = (C - S) / 2; over
    // g·H, c goes to the coset and x = (x b̂ - c) / Z, the evaluations, interpolated back
    // unless H's bases are on the coset. Returns once done.
    void finish(fr_t* x, const fr_t* b, fr_t* c)
    {
        if (b && !takes_product())
            throw sppark_error{cudaErrorInvalidValue,
                               std::string("over s·H the quotient is given the product, not b")};
        if (over_half_root()) {
            // Both inverse NTTs leave bit-reversed order, which the combination keeps, and
            // their 1/n to it; one permutation puts h in natural order for H's bases.
            inverse_unscaled(x);
            inverse_unscaled(c);
            half_root_quotient<<<sms, 1024, 0, s>>>(
                x, c, canonical(half() * domain_size_inverse[lg]), lg,
                NTTParameters::all(true)[s].partial_twiddles);
            CUDA_OK(cudaGetLastError());
            ntt_steps::bit_rev(x, x, lg, s);
            s.sync();
            return;
        }
        to_coset(c);
        quotient_on_coset<<<sms, 1024, 0, s>>>(x, b, c, canonical(z_inverse_on_coset(lg)), n);
        CUDA_OK(cudaGetLastError());
        // The NTTs above (RN) leave natural order: x[j] is the evaluation at g·ω^j, the
        // order of H's bases on the coset, and sppark's coset shift is cuzk's g.
        if (!h_on_coset)
            NTT::Base_dev_ptr(s, x, lg, NTT::InputOutputOrder::NN, NTT::Direction::inverse,
                              NTT::Type::coset);
        s.sync();
    }
};
