// The ones' sums of a batch of partitions by pattern (batch_ones): for k partitions of one
// circuit over the same query bases, each partition's sum of the bases where its scalar is
// one, in one pass over the bases for the whole batch. Included by groth16.cu inside its
// anonymous namespace, after wide_msm.cuh and split_msm.cuh; not a standalone header.
//
// Why: a PoRep witness is about half ones (a 32GiB partition's: 47.4% ones, 51.3% zeros,
// 1.3% wide), and each partition sums its ones' bases on its own (bit_split): k partitions
// take about k/2 additions a base. The partitions share the bases, so each base can go once
// into the bucket of its pattern, the k bits saying which partitions' scalars are one there
// (2^k - 1 buckets; a base no partition has a one at goes nowhere): under one addition a
// base for the batch. Partition j's sum is then the sum of the buckets whose pattern holds
// bit j, 2^(k-1) of them: a few thousand additions, nothing beside the bases' pass.
//
// How, on the device, the batch's ones as bit maps (a word of 32 terms, least significant
// bit first: the layout bit_split and batch addition use):
// - count: each block counts its terms' patterns in shared memory, then adds its counts to
//   the global ones (an atomic per block and pattern, not per term: 2^k counters take n
//   increments);
// - place: an exclusive sum gives each pattern's start; each block reserves its share of
//   every pattern's run with one atomic, and places its terms' indices there through shared
//   counters. The patterns are computed from the bit maps in each pass (k words a 32 terms)
//   rather than kept (2 bytes a term);
// - accumulate: the wide multiexp's (wide_msm.cuh: an equal share of the sorted entries a
//   thread, its pieces of buckets folded and joined), the same kernel H's buckets take;
// - the partitions' sums: a block tree each over its 2^(k-1) buckets.
//
// Device memory (from the stream's pool, given back before the call returns): an entry per
// term (4 bytes), a counter and a start per pattern, 2^k bucket sums, the accumulation's
// pieces (the wide multiexp's), and 2^(k-1) k gathered sums. 540 MB at 2^27 terms.

namespace batch_ones {

// Partitions a pass takes at most: 1023 buckets.
constexpr int MOST = 10;
// The fewest terms a query keeps its ones for a batch at: below, the pass's fixed cost (its
// launches and waits) outweighs the additions it saves (at 2^20 terms two partitions' ones
// took 1.6 ms by pattern against 1.3 one at a time, ten 1.4 against 6.3: msm_bench --ones).
constexpr size_t FROM_TERMS = (size_t)1 << 20;
constexpr uint32_t COUNT_THREADS = 256;

// The pattern of term 32 w + b, b < 32: bit j set where bit b of partition j's word w is.
__device__ __forceinline__ void patterns_of_word(uint32_t (&out)[32], const uint32_t* const* maps,
                                                 int k, size_t w)
{
#pragma unroll
    for (int b = 0; b < 32; b++)
        out[b] = 0;
    for (int j = 0; j < k; j++) {
        const uint32_t word = maps[j][w];
#pragma unroll
        for (int b = 0; b < 32; b++)
            out[b] |= ((word >> b) & 1u) << j;
    }
}

// The words [first, end) of this block: an equal share of n terms' words.
struct block_range {
    size_t first, end;
    __device__ explicit block_range(size_t n)
    {
        const size_t words = (n + 31) / 32;
        const size_t per = (words + gridDim.x - 1) / gridDim.x;
        first = min(words, (size_t)blockIdx.x * per);
        end = min(words, first + per);
    }
};

// f(pattern, i) for each term i < n of this block's share whose pattern is not 0.
template<class F>
__device__ __forceinline__ void for_each_term(const uint32_t* const* maps, int k, size_t n, F f)
{
    const block_range range(n);
    for (size_t w = range.first + threadIdx.x; w < range.end; w += blockDim.x) {
        uint32_t pattern[32];
        patterns_of_word(pattern, maps, k, w);
#pragma unroll
        for (int b = 0; b < 32; b++)
            if (pattern[b] != 0 && w * 32 + b < n)
                f(pattern[b], w * 32 + b);
    }
}

// shared[p] = this block's terms of pattern p, p in [1, 2^k).
__device__ __forceinline__ void count_block(uint32_t* shared, const uint32_t* const* maps, int k,
                                            size_t n)
{
    for (uint32_t p = threadIdx.x; p < (1u << k); p += blockDim.x)
        shared[p] = 0;
    __syncthreads();
    for_each_term(maps, k, n, [&](uint32_t pattern, size_t) { atomicAdd(&shared[pattern], 1u); });
    __syncthreads();
}

// counts[p] += the terms of pattern p: each block's counted in shared memory first.
__global__ void count_patterns(uint32_t* counts, const uint32_t* const* maps, int k, size_t n)
{
    __shared__ uint32_t shared[1u << MOST];
    count_block(shared, maps, k, n);
    for (uint32_t p = threadIdx.x; p < (1u << k); p += blockDim.x)
        if (shared[p] != 0)
            atomicAdd(&counts[p], shared[p]);
}

// Each term of a pattern at the next place of its pattern's run: the block reserves its
// count of every pattern from `cursors` (each run's next free place), then hands out those
// places through shared counters.
__global__ void place_patterns(uint32_t* cursors, uint32_t* entries, const uint32_t* const* maps,
                               int k, size_t n)
{
    __shared__ uint32_t shared[1u << MOST];
    count_block(shared, maps, k, n);
    for (uint32_t p = threadIdx.x; p < (1u << k); p += blockDim.x)
        if (shared[p] != 0)
            shared[p] = atomicAdd(&cursors[p], shared[p]);
    __syncthreads();
    for_each_term(maps, k, n, [&](uint32_t pattern, size_t i) {
        entries[atomicAdd(&shared[pattern], 1u)] = (uint32_t)i;
    });
}

// gathered[j 2^(k-1) + t] = sums[p], p the t-th pattern that holds bit j.
template<class bucket>
__global__ void gather_by_partition(typename bucket::mem_t* gathered,
                                    const typename bucket::mem_t* sums, int k)
{
    const uint32_t half = 1u << (k - 1);
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < (uint32_t)k * half;
         i += gridDim.x * blockDim.x) {
        const uint32_t j = i / half, t = i % half;
        const uint32_t low = t & ((1u << j) - 1);
        gathered[i] = sums[((t >> j) << (j + 1)) | (1u << j) | low];
    }
}

// A batch's terms sorted by pattern, for its sums over one base set or more (B's query
// serves G1 and G2): `maps` the k bit maps on the device (host array of device pointers,
// each at least ceil(n / 32) words) over the same n terms. Its buffers are the stream's,
// freed when it goes out of scope. Throws cuda_error.
struct pattern_sort {
    const gpu_t& gpu;
    stream_t& s;
    const int k;
    const size_t n;
    const int grid;
    uint32_t total = 0;             // the terms with a one in some partition
    pool_buffer<uint32_t> starts, entries;

    pattern_sort(const gpu_t& g, const uint32_t* const* maps, int partitions, size_t terms)
        : gpu(g), s(g[0]), k(partitions), n(terms), grid((int)g.sm_count() * 8)
    {
        if (k < 1 || k > MOST)
            throw sppark_error{cudaErrorInvalidValue,
                               std::string("a pattern pass takes 1 to 10 partitions")};
        if (n >= ((size_t)1 << 31))
            throw sppark_error{cudaErrorInvalidValue,
                               std::string("a pattern pass takes under 2^31 terms")};
        const uint32_t patterns = 1u << k;
        pool_buffer<const uint32_t*> d_maps{(size_t)k, s};
        CUDA_OK(cudaMemcpyAsync(d_maps.ptr, maps, k * sizeof(const uint32_t*),
                                cudaMemcpyHostToDevice, s));
        pool_buffer<uint32_t> counts{patterns + 1, s};
        starts = pool_buffer<uint32_t>{patterns + 1, s};
        CUDA_OK(cudaMemsetAsync(counts.ptr, 0, (patterns + 1) * sizeof(uint32_t), s));
        if (n != 0) {
            count_patterns<<<grid, COUNT_THREADS, 0, s>>>(counts.ptr, d_maps.ptr, k, n);
            CUDA_OK(cudaGetLastError());
        }
        size_t scan_bytes = 0;
        CUDA_OK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, counts.ptr, starts.ptr,
                                              (int)(patterns + 1), s));
        pool_buffer<uint8_t> scan_space{std::max<size_t>(scan_bytes, 1), s};
        CUDA_OK(cub::DeviceScan::ExclusiveSum(scan_space.ptr, scan_bytes, counts.ptr,
                                              starts.ptr, (int)(patterns + 1), s));
        s.DtoH(&total, starts.ptr + patterns, 1);
        CUDA_OK(cudaMemcpyAsync(counts.ptr, starts.ptr, patterns * sizeof(uint32_t),
                                cudaMemcpyDeviceToDevice, s));
        s.sync();
        if (total == 0)
            return;
        entries = pool_buffer<uint32_t>{total, s};
        place_patterns<<<grid, COUNT_THREADS, 0, s>>>(counts.ptr, entries.ptr, d_maps.ptr, k, n);
        CUDA_OK(cudaGetLastError());
        s.sync();   // d_maps and counts go back to the pool when this returns
    }

    // out[j] = the sum of bases[i] over the terms i where partition j's bit is set, j < k
    // (bases affine on the device, n of them).
    template<class bucket>
    void sums(bucket* out, const typename bucket::affine_t::mem_t* bases)
    {
        using bucket_h = typename bucket::mem_t;
        for (int j = 0; j < k; j++)
            out[j].inf();
        if (total == 0)
            return;
        const uint32_t patterns = 1u << k;
        // The buckets, pattern 0's empty: accumulate_buckets skips a bucket without entries.
        const wide_msm::accumulation_t<bucket> accumulation{gpu};
        const uint32_t threads = accumulation.threads;
        pool_buffer<bucket_h> bucket_sums{patterns, s}, head_sum{threads, s};
        pool_buffer<uint32_t> head_bucket{threads, s};
        CUDA_OK(cudaMemsetAsync(bucket_sums.ptr, 0, patterns * sizeof(bucket_h), s));
        wide_msm::accumulate_buckets<bucket><<<accumulation.blocks, wide_msm::ACCUMULATE_THREADS,
                                               0, s>>>(
            bucket_sums.ptr, head_bucket.ptr, head_sum.ptr, starts.ptr, entries.ptr, bases,
            patterns);
        CUDA_OK(cudaGetLastError());
        for (uint64_t span = 1;; span *= wide_msm::FOLD) {
            wide_msm::fold_pieces<bucket><<<grid, 256, 0, s>>>(head_sum.ptr, head_bucket.ptr,
                                                               threads, span);
            CUDA_OK(cudaGetLastError());
            if (span * wide_msm::FOLD >= threads)
                break;
        }
        wide_msm::join_pieces<bucket><<<grid, 256, 0, s>>>(bucket_sums.ptr, head_bucket.ptr,
                                                          head_sum.ptr, threads);
        CUDA_OK(cudaGetLastError());

        const uint32_t half = patterns / 2;
        pool_buffer<bucket_h> gathered{(size_t)k * half, s}, totals{(size_t)k, s};
        gather_by_partition<bucket><<<(k * half + 255) / 256, 256, 0, s>>>(gathered.ptr,
                                                                          bucket_sums.ptr, k);
        CUDA_OK(cudaGetLastError());
        constexpr uint32_t tree = wide_msm::TREE_THREADS;
        wide_msm::sum_runs<bucket><<<k, tree, tree / bucket::degree * sizeof(bucket_h), s>>>(
            totals.ptr, gathered.ptr, half);
        CUDA_OK(cudaGetLastError());
        s.DtoH(out, totals.ptr, (size_t)k);
        s.sync();
    }
};

}  // namespace batch_ones
