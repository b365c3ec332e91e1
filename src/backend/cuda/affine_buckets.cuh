// The buckets' sums of the wide multiexp in G1 by affine additions, each addition's one
// inversion shared with the others of its step (accumulate_affine): the same equal shares of
// the sorted entries as accumulate_buckets, and the same outputs (each bucket's sum in
// `sums`, the piece of a bucket that started before a share in head_sum / head_bucket, for
// fold_pieces and join_pieces). Included by wide_msm.cuh inside its namespace, after
// join_pieces; not a standalone header.
//
// Why: a mixed XYZZ addition costs 8M+2S. An affine one costs 2M+1S once 1/(x2 - x1) is
// known, and Montgomery's trick gives a batch's inverses for 3M each and one reciprocal. So
// a thread runs `lanes` shares side by side, one entry of each a step, and their additions
// share the step's reciprocal (sppark's, in which two neighbouring threads share one
// inversion): about 5M+1S an addition and the reciprocal's cost over `lanes`.
//
// How, a step (every thread of the grid goes through the same steps):
// - forward over the thread's shares: the share's next point (its sign applied) either
//   starts its bucket (the finished bucket goes out first: to sums, or to head_sum where it
//   began before the share) or is added: its denominator (x2 - x1, or 2 y where the points
//   are equal) multiplies the running product, whose value before it is kept;
// - one reciprocal of the product;
// - backward over the shares: each denominator's inverse (the reciprocal times the product
//   before it, then the reciprocal times the denominator for the shares before), and the sum.
// The identity is (0, 0), as in sppark's affine points. A point or a sum at the identity, and
// a point cancelling the sum, take no inversion: the sum is set, kept or cleared instead.
//
// Device memory: each share's state between steps (its sum, the point being added, the
// product before it: five field elements; its bucket, where that ends, its flags) in
// `affine_scratch_t`, share-major (share j of thread t at j * threads + t) so that a warp's
// accesses fall together: 252 bytes a share, from the stream's pool like the rest of
// windows_t. Each share has its head piece too (196 bytes, windows_t's head_sum and
// head_bucket).

constexpr int AFFINE_THREADS = 128;

// A step's operation on a share, and whether its bucket began before the share (its sum is a
// head piece).
enum affine_flags : uint32_t { AFFINE_ADD = 1, AFFINE_DOUBLE = 2, AFFINE_OP = 3, AFFINE_HEAD = 4 };

struct affine_scratch_t {
    fp_t *sum_x, *sum_y, *add_x, *add_y, *before;
    uint32_t *bucket, *run_end, *flags;

    static constexpr size_t SHARE_BYTES = 5 * sizeof(fp_t) + 3 * sizeof(uint32_t);

    // The arrays for `shares` shares over SHARE_BYTES * shares bytes at `base`.
    static affine_scratch_t carve(uint8_t* base, size_t shares)
    {
        affine_scratch_t sc;
        fp_t* f = reinterpret_cast<fp_t*>(base);
        sc.sum_x = f;
        sc.sum_y = f + shares;
        sc.add_x = f + 2 * shares;
        sc.add_y = f + 3 * shares;
        sc.before = f + 4 * shares;
        uint32_t* u = reinterpret_cast<uint32_t*>(f + 5 * shares);
        sc.bucket = u;
        sc.run_end = u + shares;
        sc.flags = u + 2 * shares;
        return sc;
    }
};

__device__ __forceinline__ void load_affine(fp_t& x, fp_t& y, const affine_t::mem_t* p)
{
    const fp_t* xy = reinterpret_cast<const fp_t*>(p);
    x = xy[0];
    y = xy[1];
}

// Where a share starting at lo ends.
__device__ __forceinline__ uint64_t end_of(uint64_t lo, uint64_t per, uint64_t total)
{
    return lo + per < total ? lo + per : total;
}

// A finished bucket piece (x, y) of share `share`: bucket k's sum, or its head piece.
__device__ __forceinline__ void put_piece(bucket_t::mem_t* sums, uint32_t* head_bucket,
                                          bucket_t::mem_t* head_sum, uint64_t share, uint32_t k,
                                          bool head, const fp_t& x, const fp_t& y)
{
    bucket_t b;
    b = affine_t{x, y};
    if (head) {
        head_bucket[share] = k;
        head_sum[share] = b;
    } else {
        sums[k] = b;
    }
}

// A share's point and state for one step, loaded ahead of its use.
struct affine_lane_t {
    fp_t px, py, sx, sy;
    uint32_t k, end, flags;
};

// Share s of `threads * LANES` holds entries [s E, (s + 1) E) of the sorted entries, E =
// ceil(total / shares); thread t runs shares t LANES .. t LANES + LANES - 1, which hold one
// run of LANES E entries. Outputs as accumulate_buckets' (sums zero beforehand, head_bucket
// NO_BUCKET where no head piece). Each step loads every share's entry first, then each
// share's point and state one share ahead of its arithmetic, so that the loads of one share
// wait behind the arithmetic of the one before rather than in turn.
template<uint32_t LANES>
__launch_bounds__(AFFINE_THREADS) __global__
void accumulate_affine(bucket_t::mem_t* sums, uint32_t* head_bucket, bucket_t::mem_t* head_sum,
                       const uint32_t* starts, const uint32_t* entries,
                       const affine_t::mem_t* bases, uint32_t nbuckets, affine_scratch_t sc)
{
    const uint32_t threads = gridDim.x * blockDim.x;
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t shares = (uint64_t)threads * LANES;
    const uint64_t total = starts[nbuckets];
    const uint64_t per = (total + shares - 1) / shares;
    const uint64_t first = (uint64_t)t * LANES * per;     // share j starts at first + j per
    fp_t zero;
    zero.zero();
    for (uint32_t j = 0; j < LANES; j++)
        head_bucket[(uint64_t)t * LANES + j] = NO_BUCKET;

    for (uint64_t step = 0; step < per; step++) {
        // The shares with an entry this step: the first `live` (shares end in order).
        uint32_t live = 0;
        if (first + step < total)
        {
            const uint64_t ahead = (total - first - step + per - 1) / per;
            live = ahead < LANES ? (uint32_t)ahead : LANES;
        }
        uint32_t entry[LANES];
#pragma unroll
        for (uint32_t j = 0; j < LANES; j++)
            if (j < live)
                entry[j] = entries[first + j * per + step];

        // Share j's point (its sign applied), its sum and its state.
        auto fetch = [&](uint32_t j, affine_lane_t& l) {
            const size_t i = (size_t)j * threads + t;
            const uint32_t e = entry[j];
            load_affine(l.px, l.py, bases + (e & ~SIGN));
            l.py.cneg((e & SIGN) != 0);
            if (step > 0) {
                l.sx = sc.sum_x[i];
                l.sy = sc.sum_y[i];
                l.k = sc.bucket[i];
                l.end = sc.run_end[i];
                l.flags = sc.flags[i] & AFFINE_HEAD;
            }
        };

        fp_t product = fp_t::one();
        affine_lane_t cur, next;
        if (live)
            fetch(0, next);
        for (uint32_t j = 0; j < live; j++) {
            cur = next;
            if (j + 1 < live)
                fetch(j + 1, next);
            const size_t i = (size_t)j * threads + t;
            const uint64_t share = (uint64_t)t * LANES + j;
            const uint64_t at = first + j * per + step;
            bool begins;
            if (step == 0) {
                // The bucket of entry lo: the last k with starts[k] <= lo.
                uint32_t k = 0, above = nbuckets;
                while (above - k > 1) {
                    uint32_t mid = k + (above - k) / 2;
                    if (starts[mid] <= at)
                        k = mid;
                    else
                        above = mid;
                }
                cur.k = k;
                cur.flags = starts[k] < at ? AFFINE_HEAD : 0;
                cur.end = starts[k + 1];
                begins = true;
            } else {
                begins = at == cur.end;
                if (begins) {   // bucket k is whole: out, and on to the next with entries
                    put_piece(sums, head_bucket, head_sum, share, cur.k, cur.flags & AFFINE_HEAD,
                              cur.sx, cur.sy);
                    cur.flags = 0;
                    do
                        cur.end = starts[++cur.k + 1];
                    while (cur.end == at);
                }
            }
            if (begins || (cur.sx.is_zero() && cur.sy.is_zero())) {
                // The point starts the sum (or the sum is the identity).
                sc.sum_x[i] = cur.px;
                sc.sum_y[i] = cur.py;
            } else if (!(cur.px.is_zero() && cur.py.is_zero())) {  // else the identity: nothing
                fp_t d = cur.px - cur.sx;
                uint32_t op = AFFINE_ADD;
                if (d.is_zero()) {
                    fp_t dy = cur.py - cur.sy;
                    if (dy.is_zero()) {
                        op = AFFINE_DOUBLE;
                        d = cur.sy + cur.sy;
                    } else {                // p = -sum
                        op = 0;
                        sc.sum_x[i] = zero;
                        sc.sum_y[i] = zero;
                    }
                }
                if (op) {
                    sc.add_x[i] = cur.px;
                    sc.add_y[i] = cur.py;
                    sc.before[i] = product;
                    product *= d;
                    cur.flags |= op;
                }
            }
            sc.bucket[i] = cur.k;
            sc.run_end[i] = cur.end;
            sc.flags[i] = cur.flags;
        }

        // Both threads of each pair take part in sppark's reciprocal.
        __syncwarp();
        fp_t inverse = product.reciprocal();

        // Backward, each share's sum, flags and pending point loaded one share ahead.
        struct pending_t {
            fp_t sx, sy, px, py, before;
            uint32_t op;
        } now, ahead;
        auto pending = [&](uint32_t j, pending_t& p) {
            const size_t i = (size_t)j * threads + t;
            p.op = sc.flags[i] & AFFINE_OP;
            if (p.op) {
                p.sx = sc.sum_x[i];
                p.sy = sc.sum_y[i];
                p.px = sc.add_x[i];
                p.py = sc.add_y[i];
                p.before = sc.before[i];
            }
        };
        if (live)
            pending(live - 1, ahead);
        for (uint32_t j = live; j-- > 0;) {
            now = ahead;
            if (j > 0)
                pending(j - 1, ahead);
            if (!now.op)
                continue;
            fp_t d, slope;
            if (now.op == AFFINE_ADD) {
                d = now.px - now.sx;
                slope = now.py - now.sy;
            } else {
                d = now.sy + now.sy;
                slope = now.sx ^ 2;
                slope = slope + slope + slope;
            }
            fp_t inv_d = inverse * now.before;
            inverse *= d;
            slope *= inv_d;
            fp_t x3 = slope ^ 2;
            x3 -= now.sx;
            x3 -= now.px;
            fp_t y3 = now.sx - x3;
            y3 *= slope;
            y3 -= now.sy;
            const size_t i = (size_t)j * threads + t;
            sc.sum_x[i] = x3;
            sc.sum_y[i] = y3;
        }
    }

    // Each share's last bucket.
    for (uint32_t j = 0; j < LANES; j++) {
        const size_t i = (size_t)j * threads + t;
        const uint64_t share = (uint64_t)t * LANES + j;
        const uint64_t lo = share * per;
        if (lo < end_of(lo, per, total))
            put_piece(sums, head_bucket, head_sum, share, sc.bucket[i],
                      sc.flags[i] & AFFINE_HEAD, sc.sum_x[i], sc.sum_y[i]);
    }
}

// Whether the G1 buckets are summed by accumulate_affine: CUZK_MULTIEXP names "affine"
// (wide:affine). CUZK_WIDE_AFFINE=LANES,BLOCKS sets its shares a thread (16, 32 or 64;
// default 32) and blocks of AFFINE_THREADS an SM (default 2).
struct affine_choice_t {
    bool on = false;
    uint32_t lanes = 32, blocks_per_sm = 2;

    static affine_choice_t from_env()
    {
        affine_choice_t c;
        const char* given = std::getenv("CUZK_MULTIEXP");
        c.on = given && std::strstr(given, "affine");
        if (const char* shape = std::getenv("CUZK_WIDE_AFFINE")) {
            unsigned lanes = 0, blocks = 0;
            if (std::sscanf(shape, "%u,%u", &lanes, &blocks) == 2 &&
                (lanes == 16 || lanes == 32 || lanes == 64) && blocks >= 1 && blocks <= 16) {
                c.lanes = lanes;
                c.blocks_per_sm = blocks;
            }
        }
        return c;
    }

    // Threads for up to `entries` sorted entries: a full grid, or fewer where the entries
    // give each share fewer than 16 steps (small multiexps keep a small state).
    uint32_t threads(const gpu_t& gpu, size_t entries) const
    {
        const size_t grid = (size_t)gpu.sm_count() * blocks_per_sm * AFFINE_THREADS;
        size_t want = entries / ((size_t)lanes * 16);
        want = (want + AFFINE_THREADS - 1) / AFFINE_THREADS * AFFINE_THREADS;
        return (uint32_t)std::max<size_t>(AFFINE_THREADS, std::min(grid, want));
    }
    uint64_t shares(const gpu_t& gpu, size_t entries) const
    {
        return (uint64_t)threads(gpu, entries) * lanes;
    }

    // Device bytes beyond the XYZZ accumulation's: the shares' state and their head pieces.
    size_t bytes(const gpu_t& gpu, size_t entries) const
    {
        return shares(gpu, entries) * (affine_scratch_t::SHARE_BYTES + sizeof(bucket_t::mem_t) +
                                       sizeof(uint32_t));
    }

    // accumulate_affine at this many lanes, on `blocks` blocks.
    void launch(uint32_t blocks, cudaStream_t s, bucket_t::mem_t* sums, uint32_t* head_bucket,
                bucket_t::mem_t* head_sum, const uint32_t* starts, const uint32_t* entries,
                const affine_t::mem_t* bases, uint32_t nbuckets, affine_scratch_t sc) const
    {
        if (lanes == 16)
            accumulate_affine<16><<<blocks, AFFINE_THREADS, 0, s>>>(
                sums, head_bucket, head_sum, starts, entries, bases, nbuckets, sc);
        else if (lanes == 64)
            accumulate_affine<64><<<blocks, AFFINE_THREADS, 0, s>>>(
                sums, head_bucket, head_sum, starts, entries, bases, nbuckets, sc);
        else
            accumulate_affine<32><<<blocks, AFFINE_THREADS, 0, s>>>(
                sums, head_bucket, head_sum, starts, entries, bases, nbuckets, sc);
    }
};
