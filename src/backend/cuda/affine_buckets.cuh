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

// Share s of `threads * lanes` holds entries [s E, (s + 1) E) of the sorted entries, E =
// ceil(total / shares); thread t runs shares t lanes .. t lanes + lanes - 1. Outputs as
// accumulate_buckets' (sums zero beforehand, head_bucket NO_BUCKET where no head piece).
__launch_bounds__(AFFINE_THREADS) __global__
void accumulate_affine(bucket_t::mem_t* sums, uint32_t* head_bucket, bucket_t::mem_t* head_sum,
                       const uint32_t* starts, const uint32_t* entries,
                       const affine_t::mem_t* bases, uint32_t nbuckets, affine_scratch_t sc,
                       uint32_t lanes)
{
    const uint32_t threads = gridDim.x * blockDim.x;
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t shares = (uint64_t)threads * lanes;
    const uint64_t total = starts[nbuckets];
    const uint64_t per = (total + shares - 1) / shares;
    fp_t zero;
    zero.zero();
    for (uint32_t j = 0; j < lanes; j++)
        head_bucket[(uint64_t)t * lanes + j] = NO_BUCKET;

    for (uint64_t step = 0; step < per; step++) {
        fp_t product = fp_t::one();
        for (uint32_t j = 0; j < lanes; j++) {
            const size_t i = (size_t)j * threads + t;
            const uint64_t share = (uint64_t)t * lanes + j;
            const uint64_t lo = share * per, at = lo + step;
            if (at >= end_of(lo, per, total))
                continue;
            const uint32_t e = entries[at];
            fp_t px, py;
            load_affine(px, py, bases + (e & ~SIGN));
            py.cneg((e & SIGN) != 0);
            uint32_t k, end, flags;
            bool begins;
            if (step == 0) {
                // The bucket of entry lo: the last k with starts[k] <= lo.
                k = 0;
                uint32_t above = nbuckets;
                while (above - k > 1) {
                    uint32_t mid = k + (above - k) / 2;
                    if (starts[mid] <= at)
                        k = mid;
                    else
                        above = mid;
                }
                flags = starts[k] < at ? AFFINE_HEAD : 0;
                end = starts[k + 1];
                begins = true;
            } else {
                flags = sc.flags[i] & AFFINE_HEAD;
                k = sc.bucket[i];
                end = sc.run_end[i];
                begins = at == end;
                if (begins) {   // bucket k is whole: out, and on to the next with entries
                    put_piece(sums, head_bucket, head_sum, share, k, flags & AFFINE_HEAD,
                              sc.sum_x[i], sc.sum_y[i]);
                    flags = 0;
                    do
                        end = starts[++k + 1];
                    while (end == at);
                }
            }
            if (begins) {
                sc.sum_x[i] = px;
                sc.sum_y[i] = py;
            } else {
                fp_t sx = sc.sum_x[i], sy = sc.sum_y[i];
                if (sx.is_zero() && sy.is_zero()) {         // the sum is the identity
                    sc.sum_x[i] = px;
                    sc.sum_y[i] = py;
                } else if (!(px.is_zero() && py.is_zero())) {  // else adding the identity: nothing
                    fp_t d = px - sx;
                    uint32_t op = AFFINE_ADD;
                    if (d.is_zero()) {
                        fp_t dy = py - sy;
                        if (dy.is_zero()) {
                            op = AFFINE_DOUBLE;
                            d = sy + sy;
                        } else {                // p = -sum
                            op = 0;
                            sc.sum_x[i] = zero;
                            sc.sum_y[i] = zero;
                        }
                    }
                    if (op) {
                        sc.add_x[i] = px;
                        sc.add_y[i] = py;
                        sc.before[i] = product;
                        product *= d;
                        flags |= op;
                    }
                }
            }
            sc.bucket[i] = k;
            sc.run_end[i] = end;
            sc.flags[i] = flags;
        }

        // Both threads of each pair take part in sppark's reciprocal.
        __syncwarp();
        fp_t inverse = product.reciprocal();

        for (uint32_t j = lanes; j-- > 0;) {
            const size_t i = (size_t)j * threads + t;
            const uint64_t share = (uint64_t)t * lanes + j;
            const uint64_t lo = share * per, at = lo + step;
            if (at >= end_of(lo, per, total))
                continue;
            const uint32_t op = sc.flags[i] & AFFINE_OP;
            if (!op)
                continue;
            fp_t sx = sc.sum_x[i], sy = sc.sum_y[i], px = sc.add_x[i];
            fp_t d, slope;
            if (op == AFFINE_ADD) {
                d = px - sx;
                slope = sc.add_y[i];
                slope -= sy;
            } else {
                d = sy + sy;
                slope = sx ^ 2;
                slope = slope + slope + slope;
            }
            fp_t inv_d = inverse * sc.before[i];
            inverse *= d;
            slope *= inv_d;
            fp_t x3 = slope ^ 2;
            x3 -= sx;
            x3 -= px;
            fp_t y3 = sx - x3;
            y3 *= slope;
            y3 -= sy;
            sc.sum_x[i] = x3;
            sc.sum_y[i] = y3;
        }
    }

    // Each share's last bucket.
    for (uint32_t j = 0; j < lanes; j++) {
        const size_t i = (size_t)j * threads + t;
        const uint64_t share = (uint64_t)t * lanes + j;
        const uint64_t lo = share * per;
        if (lo < end_of(lo, per, total))
            put_piece(sums, head_bucket, head_sum, share, sc.bucket[i],
                      sc.flags[i] & AFFINE_HEAD, sc.sum_x[i], sc.sum_y[i]);
    }
}

// Whether the G1 buckets are summed by accumulate_affine: CUZK_MULTIEXP names "affine"
// (wide:affine). CUZK_WIDE_AFFINE=LANES,BLOCKS sets its shares a thread (default 16) and
// blocks of AFFINE_THREADS an SM (default 2).
struct affine_choice_t {
    bool on = false;
    uint32_t lanes = 16, blocks_per_sm = 2;

    static affine_choice_t from_env()
    {
        affine_choice_t c;
        const char* given = std::getenv("CUZK_MULTIEXP");
        c.on = given && std::strstr(given, "affine");
        if (const char* shape = std::getenv("CUZK_WIDE_AFFINE")) {
            unsigned lanes = 0, blocks = 0;
            if (std::sscanf(shape, "%u,%u", &lanes, &blocks) == 2 && lanes >= 1 && lanes <= 256 &&
                blocks >= 1 && blocks <= 16) {
                c.lanes = lanes;
                c.blocks_per_sm = blocks;
            }
        }
        return c;
    }

    uint32_t threads(const gpu_t& gpu) const
    {
        return (uint32_t)gpu.sm_count() * blocks_per_sm * AFFINE_THREADS;
    }
    uint64_t shares(const gpu_t& gpu) const { return (uint64_t)threads(gpu) * lanes; }

    // Device bytes beyond the XYZZ accumulation's: the shares' state and their head pieces.
    size_t bytes(const gpu_t& gpu) const
    {
        return shares(gpu) * (affine_scratch_t::SHARE_BYTES + sizeof(bucket_t::mem_t) +
                              sizeof(uint32_t));
    }
};
