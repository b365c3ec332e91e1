// The multiexps of groth16.cu: sppark's Pippenger on device or host bases, or the wide
// multiexp (wide_msm.cuh) on device bases where it is turned on (run_msm), and
// the split of a query whose scalars are mostly bits into a batch addition of the ones'
// bases and a Pippenger over the rest (bit_split). Included by groth16.cu inside its
// anonymous namespace, after pool_buffer and the kernels; not a standalone header.

// Bytes sppark's Pippenger allocates for `n` points of `point_bytes` (buckets of
// `bucket_bytes`) with the scalars on the device: its buckets and histogram, and the digits,
// the sort's space and, from host bases, a chunk's points twice (msm_t in pippenger.cuh).
size_t pippenger_bytes(size_t n, size_t point_bytes, size_t bucket_bytes, bool host_bases,
                       size_t sms)
{
    if (n == 0)
        return 0;
    auto lg2 = [](size_t v) { int r = 0; while (v >>= 1) r++; return r; };
    size_t np = (n + WARP_SZ - 1) & ~(size_t)(WARP_SZ - 1);
    int wbits = 10;
    if (np > 192)
        wbits = std::max(std::min(lg2(np + np / 2) - 8, 18), 10);
    size_t nwins = (scalar_t::bit_length() - 1) / wbits + 1;
    size_t row = (size_t)1 << (wbits - 1);
    size_t buckets = (nwins * row + sms * BATCH_ADD_BLOCK_SIZE / WARP_SZ) * bucket_bytes +
                     nwins * row * sizeof(uint32_t);
    int lg = lg2(n + n / 2);
    size_t batch = ((size_t)1 << (std::max(lg, wbits) - wbits)) >> 6;
    batch = batch ? batch : 1;
    size_t stride = ((n + batch - 1) / batch + WARP_SZ - 1) & ~(size_t)(WARP_SZ - 1);
    size_t points = host_bases ? (batch > 1 ? 2 : 1) * stride * point_bytes : 0;
    return buckets + stride * 2 * sizeof(uint2) + nwins * stride * sizeof(uint32_t) + points;
}

// Device bytes the wide multiexp may take for n bases (on the device, or streamed from the
// host): what sppark's Pippenger would take, which the prover's plan holds for it, so that
// --gpu-memory still holds.
template<class bucket, class affine>
size_t wide_msm_bytes(const gpu_t& gpu, size_t n, bool host_bases)
{
    return pippenger_bytes(n, sizeof(affine), sizeof(typename bucket::mem_t), host_bases,
                           gpu.sm_count()) + ((size_t)64 << 20);
}

// Owns a heap-allocated sppark msm_t, whose destructor syncs the device through calls that
// throw once a sticky error broke the context (a throwing destructor is std::terminate): it
// is destroyed only while the device answers, else left behind with the lost context (the
// handle is poisoned then, and its prover stops).
template<class M>
struct msm_owner {
    const gpu_t& gpu;
    M* msm;
    msm_owner(const gpu_t& g, M* m) : gpu(g), msm(m) {}
    msm_owner(const msm_owner&) = delete;
    msm_owner& operator=(const msm_owner&) = delete;
    ~msm_owner()
    {
        cudaError_t state = cudaStreamQuery(gpu[0]);
        if (state == cudaSuccess || state == cudaErrorNotReady)
            delete msm;
    }
};

// out = sum_i scalars[i] bases[i]: by the wide multiexp where it takes their number
// (wide_msm::wanted), over the bases on the device or streamed from pinned host memory,
// within the device memory sppark's would take (where that is too little for it, sppark's
// after all), else by sppark's Pippenger. The scalars are held as `form` says.
template<class bucket, class point, class affine>
void run_msm(const gpu_t& gpu, point& out, const affine* device_bases, const affine* host_bases,
             const fr_t* device_scalars, size_t n, bool may_widen = true,
             scalar_form form = scalar_form::montgomery)
{
    if (n == 0) {
        out.inf();
        return;
    }
    if ((device_bases || host_bases) && may_widen && wide_msm::wanted<bucket>(n, !device_bases)) {
        try {
            size_t held = wide_msm_bytes<bucket, affine>(gpu, n, !device_bases);
            if (device_bases)
                wide_msm::multiexp<bucket>(gpu, out,
                                           reinterpret_cast<const typename affine::mem_t*>(device_bases),
                                           device_scalars, n, held, form);
            else
                wide_msm::multiexp_streamed<bucket>(gpu, out, host_bases, device_scalars, n, held,
                                                    wide_msm::test_chunk_points(sizeof(affine)),
                                                    form);
            return;
        } catch (const cuda_error& e) {
            if (error_of(e) != cudaErrorMemoryAllocation)
                throw;
            (void)cudaGetLastError();
        }
    }
    using msm_type = msm_t<bucket, point, affine, scalar_t>;
    msm_owner<msm_type> owner{gpu, new msm_type{nullptr, n, sizeof(affine), gpu.id()}};
    msm_type& msm = *owner.msm;
    RustError err;
    const bool montgomery = form == scalar_form::montgomery;
    if (device_bases)
        err = msm.invoke(out, device_span<affine>{const_cast<affine*>(device_bases)}, n,
                         device_span<fr_t>{const_cast<fr_t*>(device_scalars)}, montgomery);
    else
        err = msm.invoke(out, host_bases, n,
                         device_span<fr_t>{const_cast<fr_t*>(device_scalars)}, montgomery);
    std::string message = err.message ? err.message : "multiexp failed";
    std::free(err.message);     // sppark strdup()s it for Rust; we own it here
    if (err.code != cudaSuccess)
        throw cuda_error{err.code, message};
}

// The sum of a batch addition's n bucket sums, by a block tree on the device
// (wide_msm::sum_runs), one point back. Not sppark's sum_up on the host: about a thousand
// XYZZ additions in turn there (three times the work in G2) while the GPU waits, for each of
// a partition's four split multiexps, which at 2KiB is a fair share of a 72 ms proof.
template<class bucket, class stream>
bucket sum_on_device(const stream& s, const typename bucket::mem_t* d_sums, size_t n)
{
    using bucket_h = typename bucket::mem_t;
    constexpr uint32_t threads = wide_msm::TREE_THREADS;
    pool_buffer<bucket_h> d_total{1, s};
    wide_msm::sum_runs<bucket><<<1, threads, threads / bucket::degree * sizeof(bucket_h), s>>>(
        d_total.ptr, d_sums, (uint32_t)n);
    CUDA_OK(cudaGetLastError());
    bucket total;
    s.DtoH(&total, d_total.ptr, 1);
    s.sync();
    return total;
}

// The sum of bases[i] over the set bits i < n of `ones` (a bit a term, in batch
// addition's rows of 1024 terms), by batch addition on the stream 0 of `gpu`.
template<class bucket>
bucket sum_ones(const gpu_t& gpu, const typename bucket::affine_t::mem_t* bases, size_t n,
                const uint32_t* ones)
{
    stream_t& s = gpu[0];
    const int sms = (int)gpu.sm_count();
    const size_t nbuckets = (size_t)sms * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
    pool_buffer<typename bucket::mem_t> d_sums{nbuckets, s};
    s.launch_coop(cuzk_batch_addition<bucket>, {sms, BATCH_ADD_BLOCK_SIZE}, d_sums.ptr, bases,
                  (uint32_t)n, ones, false, (uint32_t)0);
    return sum_on_device<bucket>(s, d_sums.ptr, nbuckets);
}

// A query whose scalars are mostly zero and one (L, A and B: a PoRep witness is mostly the
// bits of its SHA-256 gadgets), split once and used for every base set over it. Pippenger
// sorts every window of every scalar, so such a multiexp cost a fifth of the full-width H
// one; split, the ones' bases are summed by batch addition and only the tail (the other
// scalars, about 1-2% of a PoRep query) goes through Pippenger. Its buffers are the
// stream's, freed when it goes out of scope.
struct bit_split {
    // Past this share of wide scalars the split saves little and its buffers grow large.
    static constexpr size_t MAX_TAIL_SHARE = 8;

    const gpu_t& gpu;
    const fr_t* scalars;        // on the device, n of them
    size_t n = 0, tail = 0;
    bool is_split = false;      // else: prove with plain Pippenger
    pool_buffer<uint32_t> ones;
    pool_buffer<fr_t> tail_scalars;
    pool_buffer<uint32_t> tail_index;
    // The ones' bit map once a batch keeps it (keep_ones): their sum is the batch's pattern
    // pass's (batch_ones.cuh), left out of every multiexp over this split.
    const uint32_t* kept = nullptr;

    // Hands the ones' bit map (a bit a term, rows of 1024) to a batch's store.
    void keep_ones(pool_buffer<uint32_t>& into)
    {
        into = std::move(ones);
        kept = into.ptr;
    }

    bit_split(const gpu_t& g, const fr_t* d_scalars, size_t len) : gpu(g), scalars(d_scalars), n(len)
    {
        // Batch addition takes 31-bit positions and reads the ones in rows of 1024.
        if (n == 0 || n >= ((size_t)1 << 31))
            return;
        stream_t& s = gpu[0];
        const int grid = (int)gpu.sm_count() * 4;
        size_t nwords = (n + 1023) / 1024 * 32;
        pool_buffer<uint32_t> words{nwords + 1, s};
        uint32_t* count = words.ptr + nwords;
        CUDA_OK(cudaMemsetAsync(count, 0, sizeof(uint32_t), s));
        split_bits<<<grid, 256, 0, s>>>(words.ptr, count, scalars, n, nwords, fr_t::one());
        CUDA_OK(cudaGetLastError());
        uint32_t wide = 0;
        s.DtoH(&wide, count, 1);
        s.sync();
        if ((size_t)wide > n / MAX_TAIL_SHARE)
            return;
        if (wide) {
            // Out of device memory here only means the plain multiexp.
            try {
                if (injects("split-oom"))
                    throw cuda_error{-cudaErrorMemoryAllocation,
                                     std::string("injected: no memory for the split's tail")};
                pool_buffer<fr_t> t_scalars{wide, s};
                pool_buffer<uint32_t> t_index{wide, s};
                CUDA_OK(cudaMemsetAsync(count, 0, sizeof(uint32_t), s));
                gather_tail<<<grid, 256, 0, s>>>(t_scalars.ptr, t_index.ptr, count, scalars, n,
                                                 fr_t::one());
                CUDA_OK(cudaGetLastError());
                s.sync();
                tail_scalars = std::move(t_scalars);
                tail_index = std::move(t_index);
            } catch (const cuda_error& e) {
                if (error_of(e) != cudaErrorMemoryAllocation)
                    throw;
                (void)cudaGetLastError();
                return;
            }
        }
        tail = wide;
        ones = std::move(words);
        is_split = true;
    }

    // out = the multiexp of the split scalars over `bases` (on the device, n of them), less
    // the ones' sum where a batch keeps them; plain Pippenger over them all when the tail's
    // bases find no room (less the ones' sum, then, by a subtraction).
    template<class bucket, class point, class affine>
    void multiexp(point& out, const affine* bases)
    {
        using affine_h = typename affine::mem_t;
        stream_t& s = gpu[0];
        const int sms = (int)gpu.sm_count();
        out.inf();
        if (tail) {
            pool_buffer<affine_h> tail_bases;
            try {
                if (injects("tail-oom"))
                    throw cuda_error{-cudaErrorMemoryAllocation,
                                     std::string("injected: no memory for the tail's bases")};
                tail_bases = pool_buffer<affine_h>{tail, s};
            } catch (const cuda_error& e) {
                if (error_of(e) != cudaErrorMemoryAllocation)
                    throw;
                (void)cudaGetLastError();
                run_msm<bucket>(gpu, out, bases, (const affine*)nullptr, scalars, n);
                if (kept) {
                    point ones_sum = sum_ones<bucket>(gpu, (const affine_h*)bases, n, kept);
                    ones_sum.cneg(true);
                    out.add(ones_sum);
                }
                return;
            }
            gather_bases<<<sms * 4, 256, 0, s>>>(tail_bases.ptr, (const affine_h*)bases,
                                                 (const uint32_t*)tail_index.ptr, tail);
            CUDA_OK(cudaGetLastError());
            s.sync();
            run_msm<bucket>(gpu, out, (const affine*)tail_bases.ptr, (const affine*)nullptr,
                            (const fr_t*)tail_scalars.ptr, tail);
        }
        if (kept)
            return;
        point ones_sum = sum_ones<bucket>(gpu, (const affine_h*)bases, n, ones.ptr);
        out.add(ones_sum);
    }
};

// A multiexp of a query's scalars: split where the bases are resident and the split pays,
// else plain Pippenger.
template<class bucket, class point, class affine>
void run_query_msm(const gpu_t& gpu, bit_split& split, point& out, const affine* device_bases,
                   const affine* host_bases, const fr_t* device_scalars)
{
    if (device_bases && split.is_split)
        split.multiexp<bucket>(out, device_bases);
    else
        run_msm<bucket>(gpu, out, device_bases, host_bases, device_scalars, split.n);
}
