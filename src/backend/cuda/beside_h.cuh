// The query multiexps beside H (beside_h): L, A and B's work that runs while the H
// multiexp runs. Included by groth16.cu inside its anonymous namespace, after
// split_msm.cuh; not a standalone header.
//
// Why: on a card that keeps few bases, a streamed query set (L or A: 12.5 GB at 32GiB)
// crosses the bus at ~47 GB/s after H, 0.26 s a set, while during H's 1.1 s of kernels the
// bus carries H's own bases at a quarter of its speed. So the queries' work moves beside H:
// - their scalars, mostly bits (split_msm.cuh), are split straight from the witness through
//   the queries' densities (split_filtered): no query needs a domain-sized buffer while
//   H's scalars hold one;
// - on two streams of the handle at the device's highest priority (`copy`, `work`), each
//   streamed set's ones are summed by batch addition and its tail's bases gathered, chunk
//   by chunk as its bases come up from pinned host memory, the next chunk's copy
//   overlapping this one's kernels (a resident set's multiexp is kernels alone, which H's
//   keep busy: it stays after H);
// - after H, what is left per set is its tail's Pippenger and the total of its sums.
//
// A shared pass: where the prover hands over the partition it proves next (a partition of
// the same parameter set), that partition's queries are split here too and each streamed
// chunk serves both: the two partitions cross the bus with one pass over L, A and B instead
// of two. The next partition's multiexps are finished in this call and kept on the handle
// (ahead_t) for its own, which then streams nothing beside its H. CUZK_SHARED_PASS=0 turns
// it off, for measuring.
//
// Device memory: everything a query needs here is allocated before H starts (H's
// multiexp allocates at its start and must find its room: the margin), and only where it
// fits. A query that does not fit, whose tail is too wide for a split to pay, or whose work
// here fails for want of memory, is left to the steps after H (split_msm.cuh), as before.
// Batch addition keeps a work counter per id: the bit split on the main thread uses 0, this
// one 1, and the two never run at once (the main thread joins this one first).

struct beside_h {
    using clock = std::chrono::steady_clock;

    // Each of the two buffers a streamed set's chunks are copied into: the largest of 1 GB
    // down to 256 MB that fits, so that each turn the kernels get between H's batches (its
    // accumulation holds every SM) sums as much as it can; at 32GiB 1 GB and 256 MB chunks
    // measured alike, the turns themselves setting the pace. 1 MB for a test that needs many
    // chunks of a small circuit (CUZK_TEST_GPU_FAULT=small-chunks).
    static constexpr size_t LARGEST_CHUNK = (size_t)1 << 30;
    static constexpr size_t SMALLEST_CHUNK = (size_t)256 << 20;
    // Batch addition's work counter here (see above).
    static constexpr uint32_t COUNTER = 1;

    // One stretch of a query: `nbits` variables of `src` filtered by a density (`words` and
    // `prefix`; null: all of them), from query position `offset`.
    struct part {
        witness_view src;
        const uint64_t* words;
        const uint32_t* prefix;
        size_t nwords, nbits, offset;
    };

    // A query's scalars, split: a bit per one, and the rest (the tail) with positions.
    struct split_t {
        size_t n = 0, tail = 0;
        bool ready = false;
        pool_buffer<uint32_t> ones;
        pool_buffer<fr_t> tail_scalars;
        pool_buffer<uint32_t> tail_index;

        void release()
        {
            ready = false;
            ones.release();
            tail_scalars.release();
            tail_index.release();
        }
    };

    // One base set's share: the sums of its ones' bases (a bucket per warp of the batch
    // addition) and its tail's bases, gathered.
    template<class bucket, class affine>
    struct sums_t {
        const affine* host_bases = nullptr;
        bool ready = false;     // its buffers are allocated: it runs beside H
        bool done = false;      // it ran
        pool_buffer<typename bucket::mem_t> sums;
        pool_buffer<typename affine::mem_t> tail_bases;
    };

    // One partition's share of the pass: its queries' splits and each streamed set's sums.
    struct queries_t {
        split_t l, a, b;
        sums_t<bucket_t, affine_t> l_g1, a_g1, b_g1;
        sums_t<bucket_fp2_t, affine_fp2_t> b_g2;

        bool any_ready() const { return l_g1.ready || a_g1.ready || b_g1.ready || b_g2.ready; }
        bool any_done() const { return l_g1.done || a_g1.done || b_g1.done || b_g2.done; }
        void mark_done()
        {
            l_g1.done = l_g1.ready;
            a_g1.done = a_g1.ready;
            b_g1.done = b_g1.ready;
            b_g2.done = b_g2.ready;
        }
        // The device bytes of the sums and tail bases of the sets that stream (`streams`, in
        // cuzk_base_set's order) over its splits.
        template<class side_t>
        size_t bytes(const side_t& side, const bool* streams) const
        {
            return side.bytes_of(l_g1, l) + side.bytes_of(a_g1, a) +
                   (streams[CUZK_B_G1] ? side.bytes_of(b_g1, b) : 0) +
                   (streams[CUZK_B_G2] ? side.bytes_of(b_g2, b) : 0);
        }
    };

    cuzk_gpu* g;
    const gpu_t& gpu;
    priority_stream& work;
    priority_stream& copy;
    const int grid;
    const size_t nbuckets;
    size_t margin = 0;          // what H's multiexp will allocate, left free
    queries_t own;              // the partition of this call
    queries_t next;             // the one after it, where it shares the pass
    pool_buffer<uint8_t> chunks[2];
    size_t chunk_bytes = 0;
    uint64_t sent_bytes = 0;    // streamed bases, host to device
    uint64_t shared_bytes = 0;  // of those, the chunks that served both partitions
    double ms = 0;              // wall time of the work beside H
    cudaError_t status = cudaSuccess;
    std::string message;

    beside_h(cuzk_gpu* handle, priority_stream& work_stream, priority_stream& copy_stream)
        : g(handle), gpu(handle->gpu), work(work_stream), copy(copy_stream),
          grid((int)handle->gpu.sm_count() * 4),
          nbuckets((size_t)handle->gpu.sm_count() * BATCH_ADD_BLOCK_SIZE / WARP_SZ)
    {}

    // Splits the query of `n` scalars made of `parts` into `q`; false, `q` left unready,
    // where its tail is too wide for the split to pay or it finds no room.
    bool split(split_t& q, size_t n, std::initializer_list<part> parts)
    {
        // Batch addition takes 31-bit positions and reads the ones in rows of 1024.
        if (n == 0 || n >= ((size_t)1 << 31))
            return false;
        size_t nwords = (n + 1023) / 1024 * 32;
        if (!g->has_room_for((nwords + 1) * sizeof(uint32_t), margin))
            return false;
        pool_buffer<uint32_t> ones{nwords + 1, work};
        uint32_t* cursor = ones.ptr + nwords;
        CUDA_OK(cudaMemsetAsync(ones.ptr, 0, (nwords + 1) * sizeof(uint32_t), work));
        for (const part& at : parts)
            launch_split(at, ones.ptr, cursor, nullptr, nullptr);
        uint32_t wide = 0;
        work.DtoH(&wide, cursor, 1);
        work.sync();
        if ((size_t)wide > n / bit_split::MAX_TAIL_SHARE)
            return false;
        if (wide) {
            if (!g->has_room_for((size_t)wide * (sizeof(fr_t) + sizeof(uint32_t)), margin))
                return false;
            pool_buffer<fr_t> scalars{wide, work};
            pool_buffer<uint32_t> index{wide, work};
            CUDA_OK(cudaMemsetAsync(cursor, 0, sizeof(uint32_t), work));
            for (const part& at : parts)
                launch_split(at, ones.ptr, cursor, scalars.ptr, index.ptr);
            uint32_t gathered = 0;
            work.DtoH(&gathered, cursor, 1);
            work.sync();
            if (gathered != wide)
                throw sppark_error{cudaErrorInvalidValue,
                                   std::string("the query's split counted its tail twice apart")};
            q.tail_scalars = std::move(scalars);
            q.tail_index = std::move(index);
        }
        q.ones = std::move(ones);
        q.n = n;
        q.tail = wide;
        q.ready = true;
        return true;
    }

    void launch_split(const part& at, uint32_t* ones, uint32_t* cursor, fr_t* scalars,
                      uint32_t* index)
    {
        if (at.nwords == 0)
            return;
        split_filtered<<<grid, 256, 0, work>>>(ones, cursor, scalars, index, at.src, at.words,
                                               at.prefix, at.nwords, at.nbits, at.offset,
                                               fr_t::one());
        CUDA_OK(cudaGetLastError());
    }

    // Device bytes set `s` takes over split `q` (its sums and its tail's bases).
    template<class bucket, class affine>
    size_t bytes_of(const sums_t<bucket, affine>&, const split_t& q) const
    {
        return q.ready ? nbuckets * sizeof(typename bucket::mem_t) +
                             q.tail * sizeof(typename affine::mem_t)
                       : 0;
    }

    // The two chunk buffers of streamed sets, the largest that fit beside `also` more bytes;
    // false where not even the smallest does (the streamed sets then wait for the steps
    // after H).
    bool allocate_chunks(size_t also)
    {
        size_t largest = injects("small-chunks") ? (size_t)1 << 20 : LARGEST_CHUNK;
        size_t smallest = injects("small-chunks") ? (size_t)1 << 20 : SMALLEST_CHUNK;
        for (size_t bytes = largest; bytes >= smallest; bytes /= 2) {
            if (!g->has_room_for(2 * bytes + also, margin))
                continue;
            for (auto& chunk : chunks)
                chunk = pool_buffer<uint8_t>{bytes, work};
            chunk_bytes = bytes;
            return true;
        }
        return false;
    }

    // Allocates set `s`'s buffers over split `q`, its bases streamed from `host_bases`
    // through the chunks allocated before; false, `s` left unready, where they find no room.
    template<class bucket, class affine>
    bool prepare(sums_t<bucket, affine>& s, const split_t& q, const affine* host_bases)
    {
        using bucket_h = typename bucket::mem_t;
        using affine_h = typename affine::mem_t;
#ifndef __CUDA_ARCH__     // a G2 point's device type is half of one, a thread's share
        static_assert(sizeof(affine) == sizeof(affine_h), "host bases are read as stored");
#endif
        if (!q.ready || !host_bases || !chunk_bytes)
            return false;
        if (!g->has_room_for(bytes_of(s, q), margin))
            return false;
        s.sums = pool_buffer<bucket_h>{nbuckets, work};
        s.tail_bases = pool_buffer<affine_h>{q.tail, work};
        s.host_bases = host_bases;
        s.ready = true;
        return true;
    }

    // Queues a streamed set's work on `work` for the partitions whose sums `s[k]` are ready
    // (over their splits `q[k]`): their ones summed and their tails' bases gathered, chunk
    // by chunk as `copy` brings the set's bases up once for both. `chunk` counts the chunks
    // queued so far, of every set: each goes to the buffer after the last one's.
    template<class bucket, class affine>
    void queue(sums_t<bucket, affine>* const (&s)[2], const split_t* const (&q)[2],
               const event_pair& copied, const event_pair& consumed, size_t& chunk)
    {
        using affine_h = typename affine::mem_t;
        const int users = (s[0]->ready ? 1 : 0) + (s[1]->ready ? 1 : 0);
        if (users == 0)
            return;
        const int first_user = s[0]->ready ? 0 : 1;
        const size_t n = q[first_user]->n;
        const size_t per = chunk_bytes / sizeof(affine_h) / 1024 * 1024;
        const char* host = (const char*)s[first_user]->host_bases;
        for (size_t first = 0; first < n; first += per, chunk++) {
            int k = (int)(chunk & 1);
            size_t len = std::min(per, n - first);
            affine_h* bases = (affine_h*)chunks[k].ptr;
            // The copy into a buffer waits for the kernels that read it last.
            CUDA_OK(cudaStreamWaitEvent(copy, consumed.at[k], 0));
            CUDA_OK(cudaMemcpyAsync(bases, host + first * sizeof(affine_h),
                                    len * sizeof(affine_h), cudaMemcpyHostToDevice, copy));
            CUDA_OK(cudaEventRecord(copied.at[k], copy));
            CUDA_OK(cudaStreamWaitEvent(work, copied.at[k], 0));
            for (int u = 0; u < 2; u++) {
                if (!s[u]->ready)
                    continue;
                add_ones<bucket>(s[u]->sums.ptr, bases, first, len, q[u]->ones.ptr, first > 0);
                if (q[u]->tail) {
                    gather_bases_in_chunk<<<grid, 256, 0, work>>>(
                        s[u]->tail_bases.ptr, (const affine_h*)bases,
                        (const uint32_t*)q[u]->tail_index.ptr, q[u]->tail, first, len);
                    CUDA_OK(cudaGetLastError());
                }
            }
            CUDA_OK(cudaEventRecord(consumed.at[k], work));
            sent_bytes += len * sizeof(affine_h);
            if (users == 2)
                shared_bytes += len * sizeof(affine_h);
        }
    }

    // sums (+)= the bases of `len` points from query position `first` whose ones bit is set.
    template<class bucket, class bucket_h, class affine_h>
    void add_ones(bucket_h* sums, const affine_h* bases, size_t first, size_t len,
                  const uint32_t* ones, bool accumulate)
    {
        work.launch_coop(cuzk_batch_addition<bucket>, dim3(gpu.sm_count()),
                         dim3(BATCH_ADD_BLOCK_SIZE), sums, bases, (uint32_t)len,
                         ones + first / WARP_SZ, accumulate, COUNTER);
    }

    // The work beside H, on its own thread; a failure is kept for the main thread. No
    // thread where no set was prepared.
    std::thread start()
    {
        if (!own.any_ready() && !next.any_ready())
            return std::thread();
        int device = gpu.cid();
        return std::thread([this, device] {
            auto t0 = clock::now();
            (void)cudaSetDevice(device);
            try {
                // Everything is queued at once: the copies run ahead as far as the buffers
                // allow, the kernels take the SMs whenever H's leave them some.
                event_pair copied, consumed;
                size_t chunk = 0;
                queue({&own.l_g1, &next.l_g1}, {&own.l, &next.l}, copied, consumed, chunk);
                queue({&own.a_g1, &next.a_g1}, {&own.a, &next.a}, copied, consumed, chunk);
                queue({&own.b_g1, &next.b_g1}, {&own.b, &next.b}, copied, consumed, chunk);
                queue({&own.b_g2, &next.b_g2}, {&own.b, &next.b}, copied, consumed, chunk);
                work.sync();
                own.mark_done();
                next.mark_done();
            } catch (const cuda_error& e) {
                status = error_of(e);
                message = e.what();
            } catch (const std::exception& e) {
                status = cudaErrorUnknown;
                message = e.what();
            } catch (...) {
                status = cudaErrorUnknown;
                message = "unknown C++ exception";
            }
            // Nothing queued may still write into the chunks once they are freed (on `work`,
            // which a copy in flight is not ordered with when the queueing stopped halfway).
            if (status != cudaSuccess) {
                (void)cudaStreamSynchronize(copy);
                (void)cudaStreamSynchronize(work);
            }
            ms = ms_between(t0, clock::now());
        });
    }

    // After the thread is joined: a failure for want of memory leaves the sets it did not
    // finish to the steps after H; any other is the proof's.
    void check_after_join()
    {
        chunks[0].release();
        chunks[1].release();
        chunk_bytes = 0;
        if (status == cudaSuccess)
            return;
        if (status != cudaErrorMemoryAllocation)
            throw cuda_error{-status, std::string("beside the H multiexp: ") + message};
        (void)cudaGetLastError();
    }

    // out = the multiexp of split `q` over set `s`: its tail's Pippenger plus its sums;
    // false where `s` did not run beside H. Frees `s`'s buffers.
    template<class bucket, class point, class affine>
    bool finish(point& out, sums_t<bucket, affine>& s, const split_t& q)
    {
        if (!s.done)
            return false;
        out.inf();
        if (q.tail)
            run_msm<bucket>(gpu, out, (const affine*)s.tail_bases.ptr, (const affine*)nullptr,
                            (const fr_t*)q.tail_scalars.ptr, q.tail);
        point ones_sum = sum_on_device<bucket>(work, s.sums.ptr, nbuckets);
        out.add(ones_sum);
        s.sums.release();
        s.tail_bases.release();
        return true;
    }
};
