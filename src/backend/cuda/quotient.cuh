// The quotient h = (a*b - c) / Z: its transforms on one stream (quotient_steps), which
// partition_proof::quotient runs between its uploads or evaluations. Included by groth16.cu
// inside its anonymous namespace, after the kernels; not a standalone header.

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
