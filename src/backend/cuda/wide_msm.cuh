// cuzk's multiexp at wide windows (wide_msm): sum_i s_i P_i over full-width scalars and
// bases on the device or streamed from pinned host memory (multiexp_streamed), in G1 or
// G2 (templates over sppark's XYZZ bucket type). run_msm (split_msm.cuh) takes it for
// every multiexp of 2^10 bases or more on the device and most streamed (wanted): H, and
// the split multiexps' tails where they are that large. Included by
// groth16.cu inside its anonymous namespace, after pool_buffer, event_pair and injects;
// not a standalone header.
//
// Why: sppark's Pippenger caps its window at 18 bits, so a 2^27-point H multiexp adds every
// base into a bucket 15 times. Here the window grows with the size, to about 64 bases a
// bucket (12 windows of 21 and 22 bits at 2^27): a fifth fewer additions, the work that
// sets the multiexp's time. And where sppark sums each window's buckets on the host, here
// only one point per window comes back, which counts at small sizes (2KiB: 2^22 points).
//
// How, per group of windows (as many as the device memory allows; all of them at small sizes):
// - count: each scalar's signed digits (a carry rippling up from window 0: digits in
//   (-2^(c-1), 2^(c-1)] at c bits, so a window needs 2^(c-1) buckets), one counter per
//   bucket of each window in the group (atomics: the buckets are many, the digits random;
//   a group's counters fit the L2 cache where every window's would not: counting all of them
//   in one pass ahead of the groups took 66 ms against 38 at 2^27, c58ca99). Each pass
//   takes Montgomery scalars out of that form itself (converting them once ahead saved 7.5
//   ms of 887 at 2^27, about what a pass over them costs a proof, 704041a); H's come
//   canonical from the quotient's last multiplication, at no cost (quotient.cuh);
// - place: an exclusive sum turns the counts into where each bucket's run starts, and each
//   scalar's index (its digit's sign in the top bit) goes to its bucket's next place: a
//   counting sort. From 2^25 bases the count keeps each digit and the place goes over them
//   in passes over ranges of buckets, so that its scattered stores merge in the L2 cache
//   (place_passes; 834 ms against 886 at 2^27); below, it takes the digits from the
//   scalars again. In turn with the accumulation, not beside it on a second stream: there
//   the accumulation slowed by what the sort saved (989 ms at 2^27 against 888 with one
//   sort block an SM beside, 899 with two; 01da22a);
// - accumulate: each thread adds an equal share of the sorted entries, one a step (mixed
//   XYZZ additions; the next base loads while this one adds), however the digits fall
//   among the buckets. G1's addition takes one Montgomery reduction fewer than sppark's
//   (xyzz_add.cuh: the whole multiexp 813 ms against 834 at 2^27 on an H100, f126a56).
//   The pieces of buckets cut between threads are folded by a tree
//   (fold_pieces) and joined after. XYZZ, not affine additions sharing a step's inversion:
//   those, with each thread's shares kept in device memory between steps, took 763 ms at
//   2^27 on an H100 against 673 (b16d569), and 681 against 672 with their loads issued
//   ahead (a1a6d3b), the multiplications saved spent on the shares' traffic, and their
//   state left room for fewer windows a group (BENCHMARKS.md);
// - reduce, the whole group at once: sum_b b S_b by running sums over segments of 32
//   buckets (a segment's offset times its plain sum added by double-and-add), then the
//   segments summed by block trees, a launch a step for all the group's windows, on a
//   stream of its own beside the next group's count and sort (reduction_beside_t: the whole
//   multiexp 807 ms against 815 in turn at 2^27 on an H100, cd417ac).
// The windows' sums come back to the host, which joins them by doublings.
//
// A point takes bucket::degree threads side by side (sppark's G2 field holds an element's
// two halves in two neighbouring lanes, which multiply through warp shuffles): each kernel
// over points indexes them by thread / degree, and every thread of a point goes the same
// way through the same point, each loading and storing its own half.
//
// Device memory (from the stream's pool, given back before the call returns): per window
// of a group, a counter and a start per bucket (8 bytes), its XYZZ sum (192 bytes), an
// entry per base (4 bytes) and from 2^25 bases a digit per base (4 bytes): 1.5 GB a window
// at 2^27. The prover gives it what its plan holds for sppark's Pippenger (1.72 GB at 2^27:
// one window a group), and the digits are left out where a window does not fit with them.
// Bases and scalars are the caller's.

// How a multiexp's scalars are held: in Montgomery form (the witness, as the host sends
// it), or canonical (h, as the quotient leaves it). Each pass over Montgomery scalars
// converts them as it reads them.
enum class scalar_form { montgomery, canonical };

namespace wide_msm {

constexpr uint32_t SIGN = 0x80000000u;
constexpr uint32_t SEGMENT = 32;            // buckets per thread in the reduction
constexpr uint32_t TREE_THREADS = 128;      // a block tree's threads (24 KB of G1 or G2 XYZZ points)
constexpr int ACCUMULATE_THREADS = 256;

// The windows for n bases: about 64 bases a bucket at c bits, ceil(256 / c) windows whose
// widths share the scalar's 256 bits evenly (the first `extra` one bit wider). Even widths
// keep every window's buckets about equally full: a top window of a few bits (255 = 11 * 22
// + 13 at 2^27) would put all n digits in a few buckets, one thread's work. Their bits cover
// 256 and scalars are below 2^255, so the top window never carries out.
struct plan_t {
    int windows, base, extra;

    // `widest`: the widest window allowed (a streamed multiexp keeps every window's
    // buckets at once, so it may take narrower ones).
    explicit plan_t(size_t n, int widest = 22)
    {
        int lg = 0;
        while (((size_t)1 << (lg + 1)) <= n)
            lg++;
        int c = std::min(std::max(lg - 5, 11), widest);
        windows = (256 + c - 1) / c;
        base = 256 / windows;
        extra = 256 - windows * base;
    }

    __host__ __device__ int width(int w) const { return base + (w < extra ? 1 : 0); }
    // Window w's buckets: one per digit magnitude 1 .. 2^(width - 1).
    __host__ __device__ uint32_t buckets(int w) const { return 1u << (width(w) - 1); }

    // Buckets of windows first .. end, laid out one window after the other.
    __host__ __device__ size_t slots(int first, int end) const
    {
        size_t total = 0;
        for (int w = first; w < end; w++)
            total += buckets(w);
        return total;
    }

    // Device bytes one window of a group takes at most for n bases, its buckets' sums
    // `bucket_bytes` each, its digits kept or not (place_passes).
    size_t window_bytes(size_t n, size_t bucket_bytes, bool digits) const
    {
        size_t widest = buckets(0);
        // The digits and the entries, a counter and a start per bucket, the buckets' sums,
        // and the reduction's sums of segments and of runs of them.
        return (digits ? 2 : 1) * n * sizeof(uint32_t) +
               widest * (2 * sizeof(uint32_t) + bucket_bytes) +
               (widest / SEGMENT + runs(0)) * bucket_bytes;
    }

    // Segments a block sums in the reduction's second step: as many as the narrowest
    // window has (every window's are a multiple of them), at most 1024.
    uint32_t run() const { return std::min<uint32_t>(buckets(windows - 1) / SEGMENT, 1024); }

    // Runs of segments in window w (in the widest, the most).
    uint32_t runs(int w) const { return std::max<uint32_t>(buckets(w) / SEGMENT / run(), 1); }
};

// Calls f(w, slot, negative) for each non-zero signed digit of windows first .. end of the
// canonical scalar `s` (its 32-bit limbs, least significant first), w its window and `slot`
// its bucket among the buckets of those windows (plan_t::slots' layout). Every window below
// `first` is gone through too, for its carry.
template<class F>
__device__ __forceinline__ void for_each_digit(const fr_t& s, const plan_t& plan, int first,
                                               int end, F f)
{
    uint32_t carry = 0, slot = 0;
    int bit0 = 0;
    for (int w = 0; w < end; w++) {
        const int c = plan.width(w);
        const uint32_t full = 1u << c, half = full >> 1;
        int i = bit0 / 32, shift = bit0 % 32;
        uint64_t v = s[i];
        if (i + 1 < 8)
            v |= (uint64_t)s[i + 1] << 32;
        uint32_t raw = ((uint32_t)(v >> shift) & (full - 1)) + carry;
        uint32_t magnitude;
        bool negative = raw > half;     // raw - 2^c, with a carry into the next window
        if (negative) {
            magnitude = full - raw;     // 0 where raw is 2^c: a digit of 0
            carry = 1;
        } else {
            magnitude = raw;
            carry = 0;
        }
        if (w >= first) {
            if (magnitude)
                f(w, slot + magnitude - 1, negative);
            slot += half;
        }
        bit0 += c;
    }
}

// No digit (a magnitude of 0) in `digits`.
constexpr uint32_t NO_DIGIT = 0xffffffffu;

// counts[slot] += 1 for each digit of windows first .. end, and where `digits` is given,
// each digit kept: digits[(w - first) n + i] is scalar i's in window w, its slot with the
// sign in the top bit, or NO_DIGIT.
__global__ void count_digits(uint32_t* counts, uint32_t* digits, const fr_t* scalars,
                             scalar_form form, size_t n, plan_t plan, int first, int end)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        fr_t s = scalars[i];
        if (form == scalar_form::montgomery)
            s.from();
        // Each window's digit written once: NO_DIGIT for the windows the digits skip.
        int unwritten = first;
        auto no_digit_until = [&](int w) {
            for (; digits && unwritten < w; unwritten++)
                digits[(size_t)(unwritten - first) * n + i] = NO_DIGIT;
        };
        for_each_digit(s, plan, first, end, [&](int w, uint32_t slot, bool negative) {
            atomicAdd(&counts[slot], 1u);
            no_digit_until(w);
            if (digits) {
                digits[(size_t)(w - first) * n + i] = slot | (negative ? SIGN : 0u);
                unwritten = w + 1;
            }
        });
        no_digit_until(end);
    }
}

// Each digit's entry (the base's index, the sign in the top bit) at its bucket's next place,
// the digits taken from the scalars again.
__global__ void place_scalars(uint32_t* cursors, uint32_t* entries, const fr_t* scalars,
                              scalar_form form, size_t n, plan_t plan, int first, int end)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        fr_t s = scalars[i];
        if (form == scalar_form::montgomery)
            s.from();
        for_each_digit(s, plan, first, end, [&](int, uint32_t slot, bool negative) {
            uint32_t at = atomicAdd(&cursors[slot], 1u);
            entries[at] = (uint32_t)i | (negative ? SIGN : 0u);
        });
    }
}

// The same from the digits the count kept, for those of `total` (a group's windows', n a
// window) whose slot is in [lo, hi).
__global__ void place_digits(uint32_t* cursors, uint32_t* entries, const uint32_t* digits,
                             size_t n, size_t total, uint32_t lo, uint32_t hi)
{
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < total;
         k += (size_t)gridDim.x * blockDim.x) {
        const uint32_t d = digits[k];
        const uint32_t slot = d & ~SIGN;
        if (d == NO_DIGIT || slot < lo || slot >= hi)
            continue;
        uint32_t at = atomicAdd(&cursors[slot], 1u);
        entries[at] = (uint32_t)(k % n) | (d & SIGN);
    }
}

// How many passes place the entries of `nbuckets` buckets, each over a range of them: the
// stores, one 4-byte entry at a time into every bucket's run at once, merge in the L2 cache
// only while the runs' current 32-byte sectors fit there, 8 MB a pass (CUZK_WIDE_PLACE_MB;
// 0: one pass). At 2^27 on an H100 (2^21 buckets a window, 64 MB of sectors; its L2 cache is
// 50 MB) the twelve windows' sort steps took 76 ms in 8 passes, 76 in 16, 96 in 4, 115 in
// one from the kept digits and 134 from the scalars; 105 in 32 passes, 170 in 64.
inline int place_passes(size_t nbuckets)
{
    static const char* given = std::getenv("CUZK_WIDE_PLACE_MB");
    const long mb = given && *given ? std::atol(given) : 8;
    if (mb <= 0)
        return 1;
    const size_t sectors = nbuckets * 32, cap = (size_t)mb << 20;
    return (int)std::max<size_t>((sectors + cap - 1) / cap, 1);
}

// Whether the count keeps each digit for the place (4 bytes a base and window), which then
// goes in several passes: where one window's buckets take more than one (from 2^25 bases).
// Below, the memory goes to more windows a group instead: at 2^22 and 2^23 keeping them
// halved the windows a group, and the more reductions cost more than the place saved.
inline bool keeps_digits(const plan_t& plan)
{
    return place_passes(plan.buckets(0)) > 1;
}

// No bucket: a thread's range began at a bucket's start.
constexpr uint32_t NO_BUCKET = 0xffffffffu;

// The buckets' sums: thread t of T adds entries [t E, (t + 1) E) of the sorted entries,
// E = ceil(total / T), one addition a step, so every thread does the same work however the
// digits fall (a bucket may hold any share of them: equal scalars all land in one). A
// bucket that starts in its range goes to sums[k] (its first piece, where it runs on); the
// piece of a bucket that started before its range goes to head_sum[t], its bucket to
// head_bucket[t] (join_pieces adds those). sums is zero (every XYZZ point the identity).
template<class bucket>
__launch_bounds__(ACCUMULATE_THREADS) __global__
void accumulate_buckets(typename bucket::mem_t* sums, uint32_t* head_bucket,
                        typename bucket::mem_t* head_sum, const uint32_t* starts,
                        const uint32_t* entries, const typename bucket::affine_t::mem_t* bases,
                        uint32_t nbuckets)
{
    using affine = typename accumulator<bucket>::affine;
    constexpr uint32_t degree = bucket::degree;
    const uint32_t threads = gridDim.x * blockDim.x / degree;
    const uint32_t t = (blockIdx.x * blockDim.x + threadIdx.x) / degree;
    const uint32_t total = starts[nbuckets];
    const uint64_t per = (total + (uint64_t)threads - 1) / threads;
    const uint64_t from = t * per, to = from + per;
    const uint32_t lo = from < total ? (uint32_t)from : total;
    const uint32_t hi = to < total ? (uint32_t)to : total;
    head_bucket[t] = NO_BUCKET;
    if (lo >= hi)
        return;
    // The bucket of entry lo: the last k with starts[k] <= lo (starts[0] = 0).
    uint32_t k = 0, above = nbuckets;
    while (above - k > 1) {
        uint32_t mid = k + (above - k) / 2;
        if (starts[mid] <= lo)
            k = mid;
        else
            above = mid;
    }
    bool is_head = starts[k] < lo;
    uint32_t run_end = starts[k + 1];
    accumulator<bucket> acc;
    acc.inf();
    uint32_t at = lo, e = entries[at];
    affine p = acc.load(bases[e & ~SIGN]);
    while (at < hi) {
        uint32_t next = at + 1, e_next = 0;
        affine p_next;
        if (next < hi) {
            e_next = entries[next];
            p_next = acc.load(bases[e_next & ~SIGN]);
        }
        acc.add(p, (e & SIGN) != 0);
        at = next;
        e = e_next;
        p = p_next;
        if (at == run_end || at == hi) {    // this piece of bucket k ends
            if (is_head) {
                head_bucket[t] = k;
                acc.store(head_sum[t]);
                is_head = false;
            } else {
                acc.store(sums[k]);
            }
            acc.inf();
            if (at < hi) {                  // the next bucket with entries
                do
                    run_end = starts[++k + 1];
                while (run_end == at);
            }
        }
    }
}

// The accumulation's launch, for every caller (windows_t, batch_ones): blocks of
// ACCUMULATE_THREADS, as many an SM as its registers allow (in G1 one, 8 warps at the
// kernel's 186 registers a thread), each thread a point's share of the entries.
//
// Measured on an H100 at 2^27 (msm_bench --ceiling, BENCHMARKS.md): the accumulation adds
// 2.46 G bases a second, 89% of the 2.76 G the same addition reaches with every operand
// in registers at this launch, itself set by the Fp multiplication (27.5 G a second,
// about ten an addition). Neither more warps nor more loads in flight closed the rest:
// blocks of 320 and 352 threads (their registers capped to fit, about 200 and 184 a
// thread) took 762 and 697 ms
// against 647, and two bases in flight 646 (a37da32..aa72056).
template<class bucket>
struct accumulation_t {
    uint32_t blocks = 0;
    uint32_t threads = 0;       // a point's worth of threads each (bucket::degree)

    explicit accumulation_t(const gpu_t& gpu)
    {
        int resident = 0;
        CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &resident, accumulate_buckets<bucket>, ACCUMULATE_THREADS, 0));
        blocks = gpu.sm_count() * std::max(resident, 1);
        threads = blocks * ACCUMULATE_THREADS / bucket::degree;
    }
};

// The pieces of a bucket cut between threads (head_sum[t], head_bucket[t]: a run of
// consecutive t with the same bucket) folded into the run's first piece, FOLD at a time, a
// launch a level, spans 1, FOLD, FOLD^2, ... The holders at span s are the run's first piece
// and its pieces at multiples of s; each holds its run's pieces from itself up to the next
// holder. A level's collectors (the run's first piece and its pieces at multiples of s FOLD)
// add the holders after them up to the next multiple of s FOLD, at most FOLD - 1 additions,
// and become the next level's holders. Once s FOLD >= threads, the run's first piece holds
// the whole run. Not one thread adding a run's pieces in turn: equal scalars put every
// entry of a window in one bucket, a run across all threads: up to 0.44 s a call, measured.
constexpr uint32_t FOLD = 32;

template<class bucket>
__global__ void fold_pieces(typename bucket::mem_t* head_sum, const uint32_t* head_bucket,
                            uint32_t threads, uint64_t span)
{
    constexpr uint32_t degree = bucket::degree;
    const uint64_t level = span * FOLD;
    for (uint32_t t = (blockIdx.x * blockDim.x + threadIdx.x) / degree; t < threads;
         t += gridDim.x * blockDim.x / degree) {
        const uint32_t k = head_bucket[t];
        if (k == NO_BUCKET || (t > 0 && head_bucket[t - 1] == k && t % level != 0))
            continue;
        uint64_t end = (t / level + 1) * level;
        if (end > threads)
            end = threads;
        uint64_t m = (t / span + 1) * span;
        if (m >= end || head_bucket[m] != k)
            continue;
        bucket acc = head_sum[t];
        for (; m < end && head_bucket[m] == k; m += span) {
            bucket piece = head_sum[m];
            acc.add(piece);
        }
        head_sum[t] = acc;
    }
}

// Adds each run of pieces, folded into its first (fold_pieces), to its bucket's sum: thread
// t owns bucket k when thread t + 1's head piece is k's and its own is not (k started in t's
// range).
template<class bucket>
__global__ void join_pieces(typename bucket::mem_t* sums, const uint32_t* head_bucket,
                            const typename bucket::mem_t* head_sum, uint32_t threads)
{
    constexpr uint32_t degree = bucket::degree;
    for (uint32_t t = (blockIdx.x * blockDim.x + threadIdx.x) / degree; t + 1 < threads;
         t += gridDim.x * blockDim.x / degree) {
        const uint32_t k = head_bucket[t + 1];
        if (k == NO_BUCKET || head_bucket[t] == k)
            continue;
        bucket acc = sums[k];
        bucket run = head_sum[t + 1];
        acc.add(run);
        sums[k] = acc;
    }
}

// sums[i] += more[i], i < n: a streamed multiexp's buckets, summed over its chunks of bases.
// Its own kernel, not a step of accumulate_buckets: there a full addition at each bucket's
// end would hold back the whole warp at every step of its loop (a thread crosses a bucket
// every 30 entries or so in a chunk), measured 2.7x slower at 2^27.
template<class bucket>
__global__ void add_sums(typename bucket::mem_t* sums, const typename bucket::mem_t* more,
                         size_t n)
{
    constexpr uint32_t degree = bucket::degree;
    for (size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / degree; i < n;
         i += (size_t)gridDim.x * blockDim.x / degree) {
        bucket total = sums[i];
        bucket piece = more[i];
        total.add(piece);
        sums[i] = total;
    }
}

// p * k for a small k, by double-and-add from its top bit.
template<class bucket>
__device__ __forceinline__ bucket times_small(const bucket& p, uint32_t k)
{
    bucket acc;
    acc.inf();
    for (int bit = 31 - __clz(k | 1); bit >= 0; bit--) {
        acc.add(acc);   // sppark's XYZZ addition doubles equal points
        if ((k >> bit) & 1)
            acc.add(p);
    }
    return acc;
}

// partial[j] = sum over segment j's buckets b of (b + 1) S_b (bucket b holds digit
// magnitude b + 1), segments of SEGMENT buckets over the sums of windows first, first + 1,
// ... (plan_t::slots' layout). A window's buckets are a multiple of SEGMENT, so no segment
// crosses two windows.
template<class bucket>
__global__ void reduce_segments(typename bucket::mem_t* partial,
                                const typename bucket::mem_t* sums, plan_t plan, int first,
                                size_t nsegments)
{
    constexpr uint32_t degree = bucket::degree;
    for (size_t j = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / degree; j < nsegments;
         j += (size_t)gridDim.x * blockDim.x / degree) {
        const typename bucket::mem_t* row = sums + j * SEGMENT;
        // The segment's first bucket within its window.
        size_t lo = j * SEGMENT;
        for (int w = first; lo >= plan.buckets(w); w++)
            lo -= plan.buckets(w);
        bucket run, total;
        run.inf();
        total.inf();
        // From the top: S_b lands in `total` once per bucket from b down to the segment's
        // first, (b - lo + 1) times; lo times the plain sum makes up the rest.
        for (uint32_t b = SEGMENT; b-- > 0;) {
            bucket s = row[b];
            run.add(s);
            total.add(run);
        }
        if (lo)
            total.add(times_small(run, (uint32_t)lo));
        partial[j] = total;
    }
}

// *out = the sum of run[0 .. len), by the whole block: its points' strided shares summed
// in shared memory by a tree (a point per `degree` threads).
template<class bucket>
__device__ __forceinline__ void sum_in_block(typename bucket::mem_t* out,
                                             const typename bucket::mem_t* run, size_t len)
{
    using bucket_h = typename bucket::mem_t;
    constexpr uint32_t degree = bucket::degree;
    extern __shared__ uint4 scratch_[];
    auto* share = reinterpret_cast<bucket_h*>(scratch_);
    const uint32_t points = blockDim.x / degree, me = threadIdx.x / degree;
    bucket acc;
    acc.inf();
    for (size_t i = me; i < len; i += points) {
        bucket p = run[i];
        acc.add(p);
    }
    share[me] = acc;
    __syncthreads();
    for (uint32_t half = points / 2; half; half /= 2) {
        if (me < half) {
            bucket a = share[me], b = share[me + half];
            a.add(b);
            share[me] = a;
        }
        __syncthreads();
    }
    if (me == 0)
        *out = share[0];
}

// out[j] = the sum of in[j * len .. (j + 1) * len), a block each.
template<class bucket>
__launch_bounds__(TREE_THREADS) __global__
void sum_runs(typename bucket::mem_t* out, const typename bucket::mem_t* in, uint32_t len)
{
    sum_in_block<bucket>(out + blockIdx.x, in + (size_t)blockIdx.x * len, len);
}

// out[j] = the sum of window first + j's share of `in`, a block each: `in` holds an entry
// per `per` buckets of windows first, first + 1, ... (plan_t::slots' layout), `per`
// dividing every window's buckets.
template<class bucket>
__launch_bounds__(TREE_THREADS) __global__
void sum_windows(typename bucket::mem_t* out, const typename bucket::mem_t* in, plan_t plan,
                 int first, uint32_t per)
{
    const int w = first + (int)blockIdx.x;
    const size_t from = plan.slots(first, w) / per;
    sum_in_block<bucket>(out + blockIdx.x, in + from, plan.buckets(w) / per);
}

// CUZK_WIDE_PHASES=1: each multiexp prints to stderr the device time of its steps on its
// stream (events between the steps), to see which step sets its time; off, nothing is
// recorded. A failed event turns it off: it is a measurement, never a cause of failure.
class phases_t {
public:
    enum step { WAIT, COUNT, SORT, ACCUMULATE, JOIN, ADD, REDUCE, STEPS };

    // `what` and `n` name the multiexp in its line.
    phases_t(cudaStream_t s, const char* what, size_t n) : s_(s), what_(what), n_(n)
    {
        const char* given = std::getenv("CUZK_WIDE_PHASES");
        on_ = given && *given == '1';
        mark(STEPS);
    }
    phases_t(const phases_t&) = delete;
    phases_t& operator=(const phases_t&) = delete;
    ~phases_t()
    {
        for (auto e : events_)
            (void)cudaEventDestroy(e);
    }

    // The work queued on the stream since the last mark was `done`.
    void mark(step done)
    {
        if (!on_)
            return;
        cudaEvent_t e;
        if (cudaEventCreate(&e) != cudaSuccess) {
            (void)cudaGetLastError();
            on_ = false;
            return;
        }
        if (cudaEventRecord(e, s_) != cudaSuccess) {
            (void)cudaGetLastError();
            (void)cudaEventDestroy(e);
            on_ = false;
            return;
        }
        try {
            events_.push_back(e);
            steps_.push_back(done);
        } catch (...) {
            (void)cudaEventDestroy(e);
            on_ = false;
        }
    }

    // After the stream is synchronized: one line, milliseconds per step.
    void print(const plan_t& plan, int group)
    {
        if (!on_ || events_.size() < 2)
            return;
        static const char* names[STEPS] = {"wait for bases", "count", "sort", "accumulate",
                                           "join pieces", "add chunk sums", "reduce"};
        float total[STEPS] = {}, all = 0;
        for (size_t i = 1; i < events_.size(); i++) {
            float ms = 0;
            if (cudaEventElapsedTime(&ms, events_[i - 1], events_[i]) != cudaSuccess) {
                (void)cudaGetLastError();
                return;
            }
            total[steps_[i]] += ms;
            all += ms;
        }
        std::string line;
        for (int k = 0; k < STEPS; k++)
            if (total[k] > 0)
                line += std::string(", ") + names[k] + " " + std::to_string(total[k]) + " ms";
        std::fprintf(stderr, "wide_msm %s n=%zu windows=%d (%d-%d bits) group=%d: %.1f ms%s\n",
                     what_, n_, plan.windows, plan.base, plan.base + (plan.extra ? 1 : 0), group,
                     all, line.c_str());
    }

private:
    cudaStream_t s_;
    const char* what_;
    size_t n_;
    bool on_ = false;
    std::vector<cudaEvent_t> events_;
    std::vector<int> steps_;
};

// Whether a multiexp of n bases takes this one: from 2^10 bases on the device; streamed,
// from 2^10 to 2^18 and from 2^22 (the windows of 2^19-2^21 do not all fit beside a chunk in
// the memory sppark's would take, and each group reads the bases again); unless
// CUZK_MULTIEXP=sppark keeps sppark's Pippenger for all. msm_bench on an H100, against
// sppark's: on the device 1.9x at 2^10, 2.4x at 2^13, 2.8x at 2^16, 1.7x at 2^20, 1.5x at
// 2^22, 1.26x at 2^27; streamed 1.5x at 2^10, 2.2x at 2^16, 2.9x at 2^18, 0.43-0.58x at
// 2^19-2^21, 1.35x at 2^22. Below 2^10 it is not measured. From 2^16 down to 2^10 it took
// a real 2KiB proof from 0.092 to 0.069 s (the split multiexps' tails and G2: sppark's fixed
// cost a call, about 3.5 ms, and its windows summed on the host). Checked with it taking
// every size from 2^12: msm_bench's checks against the CPU in G1 and G2, backend_check's
// proofs equal to the CPU's. "wide:g1" or "wide:g2" keeps it to one group, and
// "wide:from=N" takes it from 2^N bases, on the device or streamed.
template<class bucket>
bool wanted(size_t n, bool streamed)
{
    static const char* given = std::getenv("CUZK_MULTIEXP");
    const char* choice = given && *given ? given : "wide";
    if (std::strncmp(choice, "wide", 4) != 0 || (choice[4] && choice[4] != ':'))
        return false;
    const bool is_g2 = sizeof(typename bucket::mem_t) > 4 * 48 + 1;
    if ((std::strstr(choice, "g1") && is_g2) || (std::strstr(choice, "g2") && !is_g2))
        return false;
    if (const char* at = std::strstr(choice, "from=")) {
        int from = std::atoi(at + 5);
        return from >= 0 && from < 63 && n >= ((size_t)1 << from);
    }
    if (n < ((size_t)1 << 10))
        return false;
    return !streamed || n < ((size_t)1 << 19) || n >= ((size_t)1 << 22);
}

// Device memory free for a multiexp: the driver's free bytes and what the stream's pool
// keeps reserved and unused, less a margin, at most `max_bytes`.
inline size_t room_for(const gpu_t& gpu, size_t max_bytes)
{
    size_t free_bytes = 0, total_bytes = 0;
    CUDA_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
    cudaMemPool_t pool;
    if (cudaDeviceGetDefaultMemPool(&pool, gpu.cid()) == cudaSuccess) {
        uint64_t reserved = 0, used = 0;
        if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) ==
                cudaSuccess &&
            cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess &&
            reserved > used)
            free_bytes += reserved - used;
    }
    (void)cudaGetLastError();
    const size_t margin = (size_t)256 << 20;
    return std::min(free_bytes > margin ? free_bytes - margin : 0, max_bytes);
}

// The sort and the sums of a group of windows at a time over up to `most` bases a pass,
// on the stream `s`: its buffers (from the stream's pool, given back when it goes) and
// the steps. The buckets' sums are the caller's: one group's where the bases are on the
// device, every window's where they stream (summed over the passes).
template<class bucket>
struct windows_t {
    using bucket_h = typename bucket::mem_t;
    using affine_h = typename bucket::affine_t::mem_t;

    const gpu_t& gpu;
    stream_t& s;
    const plan_t plan;
    const int group;
    const int grid;
    const bool keep_digits;     // the count keeps the digits for the place (keeps_digits)
    const accumulation_t<bucket> accumulation;
    const uint32_t threads;     // the accumulation's, a point's worth each
    size_t scan_bytes = 0;
    pool_buffer<uint32_t> counts, starts, digits, entries, head_bucket;
    pool_buffer<bucket_h> head_sum, partial, partial_2, window_sums;
    pool_buffer<uint8_t> scan_space;
    phases_t phases;

    // `what` and `n` name the multiexp in CUZK_WIDE_PHASES' line.
    windows_t(const gpu_t& g, const plan_t& p, int group_windows, size_t most,
              const char* what, size_t n, bool kept)
        : gpu(g), s(g[0]), plan(p), group(group_windows), grid((int)g.sm_count() * 8),
          keep_digits(kept), accumulation(g), threads(accumulation.threads),
          phases(g[0], what, n)
    {
        // The first windows are the widest: the first group's buffers serve every group.
        const size_t slots = plan.slots(0, group);
        const uint32_t widest = plan.buckets(0);
        counts = pool_buffer<uint32_t>{slots + 1, s};
        starts = pool_buffer<uint32_t>{slots + 1, s};
        if (keep_digits)
            digits = pool_buffer<uint32_t>{(size_t)group * most, s};
        entries = pool_buffer<uint32_t>{(size_t)group * most, s};
        partial = pool_buffer<bucket_h>{(size_t)group * (widest / SEGMENT), s};
        partial_2 = pool_buffer<bucket_h>{(size_t)group * plan.runs(0), s};
        window_sums = pool_buffer<bucket_h>{(size_t)plan.windows, s};
        CUDA_OK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, counts.ptr, starts.ptr,
                                              (int)(slots + 1), s));
        scan_space = pool_buffer<uint8_t>{std::max<size_t>(scan_bytes, 1), s};
        head_bucket = pool_buffer<uint32_t>{threads, s};
        head_sum = pool_buffer<bucket_h>{threads, s};
    }

    // Device bytes of the buffers above but the digits and the entries (4 bytes each a base
    // and window of a pass); the pieces' heads and the scan's space are left to the margin.
    static size_t bytes_besides_entries(const plan_t& plan, int group)
    {
        return plan.slots(0, group) * 2 * sizeof(uint32_t) +
               ((size_t)group * (plan.buckets(0) / SEGMENT + plan.runs(0)) + plan.windows) *
                   sizeof(bucket_h);
    }

    // Windows first .. end of the n scalars over their n bases: each digit's entry sorted to
    // its bucket, the buckets summed into `sums` (the group's, first window first).
    void sum_buckets(bucket_h* sums, const fr_t* scalars, scalar_form form,
                     const affine_h* bases, size_t n, int first, int end)
    {
        sort(scalars, form, n, first, end);
        accumulate(sums, bases, first, end);
    }

    // Each digit of windows first .. end to its bucket's run of entries.
    void sort(const fr_t* scalars, scalar_form form, size_t n, int first, int end)
    {
        uint32_t nbuckets = (uint32_t)plan.slots(first, end);
        CUDA_OK(cudaMemsetAsync(counts.ptr, 0, (nbuckets + 1) * sizeof(uint32_t), s));
        count_digits<<<grid, 256, 0, s>>>(counts.ptr, keep_digits ? digits.ptr : nullptr,
                                          scalars, form, n, plan, first, end);
        CUDA_OK(cudaGetLastError());
        phases.mark(phases_t::COUNT);
        CUDA_OK(cub::DeviceScan::ExclusiveSum(scan_space.ptr, scan_bytes, counts.ptr,
                                              starts.ptr, (int)(nbuckets + 1), s));
        CUDA_OK(cudaMemcpyAsync(counts.ptr, starts.ptr, nbuckets * sizeof(uint32_t),
                                cudaMemcpyDeviceToDevice, s));
        if (keep_digits) {
            const int passes = place_passes(nbuckets);
            for (int k = 0; k < passes; k++) {
                const uint32_t lo = (uint32_t)((uint64_t)nbuckets * k / passes);
                const uint32_t hi = (uint32_t)((uint64_t)nbuckets * (k + 1) / passes);
                place_digits<<<grid, 256, 0, s>>>(counts.ptr, entries.ptr, digits.ptr, n,
                                                  (size_t)(end - first) * n, lo, hi);
                CUDA_OK(cudaGetLastError());
            }
        } else {
            place_scalars<<<grid, 256, 0, s>>>(counts.ptr, entries.ptr, scalars, form, n, plan,
                                               first, end);
            CUDA_OK(cudaGetLastError());
        }
        phases.mark(phases_t::SORT);
    }

    // The buckets of windows first .. end summed into `sums` from the sorted entries.
    void accumulate(bucket_h* sums, const affine_h* bases, int first, int end)
    {
        uint32_t nbuckets = (uint32_t)plan.slots(first, end);
        CUDA_OK(cudaMemsetAsync(sums, 0, nbuckets * sizeof(bucket_h), s));
        accumulate_buckets<bucket><<<accumulation.blocks, ACCUMULATE_THREADS, 0, s>>>(
            sums, head_bucket.ptr, head_sum.ptr, starts.ptr, entries.ptr, bases, nbuckets);
        CUDA_OK(cudaGetLastError());
        phases.mark(phases_t::ACCUMULATE);
        for (uint64_t span = 1;; span *= FOLD) {
            fold_pieces<bucket><<<grid, 256, 0, s>>>(head_sum.ptr, head_bucket.ptr, threads, span);
            CUDA_OK(cudaGetLastError());
            if (span * FOLD >= threads)
                break;
        }
        join_pieces<bucket><<<grid, 256, 0, s>>>(sums, head_bucket.ptr, head_sum.ptr, threads);
        CUDA_OK(cudaGetLastError());
        phases.mark(phases_t::JOIN);
    }

    // The sums of windows first .. end from their buckets' sums (`sums`, window first's
    // first bucket first), all of them at once: each window's segments, then block trees
    // over runs of segments, then a block tree a window. One launch a step for the group,
    // not a window: at small sizes a window's reduction is a few chains of additions, each
    // one after the other, which the windows would otherwise wait on in turn. On the stream
    // `on` (`s` unless reduction_beside_t runs it beside), marked as a step where on `s`.
    void reduce(int first, int end, const bucket_h* sums)
    {
        reduce(first, end, sums, s);
    }
    void reduce(int first, int end, const bucket_h* sums, cudaStream_t on)
    {
        const size_t tree_shared = TREE_THREADS / bucket::degree * sizeof(bucket_h);
        static_assert(TREE_THREADS / bucket::degree * sizeof(bucket_h) <= 48 * 1024,
                      "sum_runs' shared memory within the default limit");
        const size_t segments = plan.slots(first, end) / SEGMENT;
        const uint32_t run = plan.run();
        reduce_segments<bucket><<<grid, 128, 0, on>>>(partial.ptr, sums, plan, first, segments);
        CUDA_OK(cudaGetLastError());
        sum_runs<bucket><<<(unsigned)(segments / run), TREE_THREADS, tree_shared, on>>>(
            partial_2.ptr, partial.ptr, run);
        CUDA_OK(cudaGetLastError());
        sum_windows<bucket><<<end - first, TREE_THREADS, tree_shared, on>>>(
            window_sums.ptr + first, partial_2.ptr, plan, first, SEGMENT * run);
        CUDA_OK(cudaGetLastError());
        if (on == (cudaStream_t)s)
            phases.mark(phases_t::REDUCE);
    }

    // The windows' sums joined on the host, by doublings from the top: window w starts
    // width(w) bits below w + 1.
    template<class point>
    void join(point& out)
    {
        std::vector<bucket> host(plan.windows);
        CUDA_OK(cudaMemcpyAsync(host.data(), window_sums.ptr, plan.windows * sizeof(bucket),
                                cudaMemcpyDeviceToHost, s));
        s.sync();
        phases.print(plan, group);
        out.inf();
        for (int w = plan.windows; w-- > 0;) {
            for (int i = 0; i < plan.width(w); i++)
                out.dbl();
            point sum = host[w];
            // (Jacobian addition gives the identity for equal points; a window's sum equal
            // to the running total is as likely as guessing a discrete log, as in sppark's.)
            out.add(sum);
        }
    }
};

// A group's reduction beside the next group's count and sort, on a stream of its own
// (gpu[1], which nothing else uses during a multiexp). The reduction reads the group's
// bucket sums, which the next group's accumulation clears and rewrites, so that accumulation
// waits for it; the count and the sort (digits, counters, entries) touch nothing it reads.
// At 2^27 the twelve reductions, 42 ms of the multiexp in turn, run below the device's width
// (65 K segments of 32 buckets a window); beside the sort's scattered stores all but 3 ms of
// them hide, though the count they share the device with slows by 32 ms: 8 ms won in all.
//
// Its destructor waits for the stream (never throws): the buffers the reductions read go
// back to the pool only after, should a step throw.
class reduction_beside_t {
public:
    explicit reduction_beside_t(const gpu_t& gpu) : on_(gpu[1])
    {
        for (auto& e : events_)
            CUDA_OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
    reduction_beside_t(const reduction_beside_t&) = delete;
    reduction_beside_t& operator=(const reduction_beside_t&) = delete;
    ~reduction_beside_t()
    {
        (void)cudaStreamSynchronize(on_);
        for (auto e : events_)
            if (e)
                (void)cudaEventDestroy(e);
    }

    // Windows first .. end of `win` reduced from `sums`, beside, once the group's
    // accumulation queued on win.s is done.
    template<class windows>
    void reduce(windows& win, int first, int end, const typename windows::bucket_h* sums)
    {
        CUDA_OK(cudaEventRecord(events_[ACCUMULATED], win.s));
        CUDA_OK(cudaStreamWaitEvent(on_, events_[ACCUMULATED], 0));
        win.reduce(first, end, sums, on_);
        CUDA_OK(cudaEventRecord(events_[REDUCED], on_));
        in_flight_ = true;
    }

    // win.s waits for the reduction in flight, if any (before the next accumulation, and
    // before the windows' sums are read back), marked as the reduction's step: what of it
    // the count and the sort did not hide.
    template<class windows>
    void wait(windows& win)
    {
        if (!in_flight_)
            return;
        CUDA_OK(cudaStreamWaitEvent(win.s, events_[REDUCED], 0));
        win.phases.mark(phases_t::REDUCE);
        in_flight_ = false;
    }


private:
    enum { ACCUMULATED, REDUCED, EVENTS };
    cudaStream_t on_ = nullptr;
    cudaEvent_t events_[EVENTS] = {nullptr, nullptr};
    bool in_flight_ = false;
};

// The most of a group's windows (or of a pass's bases) whose entries, `per` each, a pass may
// sort: the counts, the starts and the entries' places are 32-bit.
inline size_t most_entries(size_t per)
{
    return (size_t)UINT32_MAX / std::max<size_t>(per, 1);
}

// out = the identity; false where there is nothing to sum (n = 0). Throws where n is too
// large for the entries' 31-bit indices.
template<class point>
bool has_work(point& out, size_t n)
{
    out.inf();
    if (n >= ((size_t)1 << 30))
        throw sppark_error{cudaErrorInvalidValue,
                           std::string("the wide multiexp takes under 2^30 bases")};
    return n > 0;
}

// out = sum_i scalars[i] * bases[i], i < n: bases (affine, Montgomery) and scalars (held as
// `form` says) on the device, taking at most `max_bytes` of device memory (the prover
// passes what its plan holds for sppark's Pippenger, so that --gpu-memory still holds).
// Throws cuda_error; cudaErrorMemoryAllocation where not even one window fits, before any
// work.
template<class bucket, class point>
void multiexp(const gpu_t& gpu, point& out, const typename bucket::affine_t::mem_t* bases,
              const fr_t* scalars, size_t n, size_t max_bytes,
              scalar_form form = scalar_form::montgomery)
{
    using bucket_h = typename bucket::mem_t;
    if (!has_work(out, n))
        return;
    const plan_t plan{n};
    const size_t room = room_for(gpu, max_bytes);
    // The digits kept where they pay and a window fits with them, else not.
    const bool digits =
        keeps_digits(plan) && room >= plan.window_bytes(n, sizeof(bucket_h), true);
    size_t fit = room / plan.window_bytes(n, sizeof(bucket_h), digits);
    int group = (int)std::min<size_t>({(size_t)plan.windows, fit, most_entries(n)});
    // A test's one window a group (CUZK_TEST_GPU_FAULT=one-window-groups): a small multiexp
    // then takes 2^27's way, a group after another, each reduction after its accumulation.
    if (group > 1 && injects("one-window-groups"))
        group = 1;
    if (group < 1)
        throw cuda_error{-cudaErrorMemoryAllocation,
                         std::string("no room for one window of the wide multiexp")};
    windows_t<bucket> win{gpu, plan, group, n, "resident", n, digits};
    pool_buffer<bucket_h> sums{plan.slots(0, group), win.s};
    reduction_beside_t reduction{gpu};      // after the buffers: waited for before they go
    for (int first = 0; first < plan.windows; first += group) {
        int end = std::min(first + group, plan.windows);
        win.sort(scalars, form, n, first, end);
        reduction.wait(win);
        win.accumulate(sums.ptr, bases, first, end);
        reduction.reduce(win, first, end, sums.ptr);
    }
    reduction.wait(win);
    win.join(out);
}

// The most bases in a streamed multiexp's chunk: none but its memory, or a test's 1 MB of
// them (CUZK_TEST_GPU_FAULT=small-chunks) to make a small circuit's H take many chunks.
inline size_t test_chunk_points(size_t point_bytes)
{
    return injects("small-chunks") ? ((size_t)1 << 20) / point_bytes / 1024 * 1024 : SIZE_MAX;
}

// The same over bases in pinned host memory (`host_bases`, as the host stores them), which
// go up once, chunk by chunk into two buffers, each chunk's copy (on the stream gpu[2])
// overlapping the sums over the one before (gpu[0]).
//
// Why: on a card that keeps few bases H streams; sppark's Pippenger over host bases sorts
// and sums every batch at its 18-bit windows. Here every window's buckets stay on the
// device across the chunks, so each chunk's sums are added into them and the windows are
// reduced once at the end: the additions of the resident multiexp at windows narrow
// enough that all their buckets fit (13 windows of 19 and 20 bits at 2^27, 1.1 GB of
// sums, against 12 resident and sppark's 15), without its per-batch reduction.
//
// Device memory: the sums first (at most a third of the room), then as many windows a pass
// as leave chunks of at least 2^20 bases (or all of them) beside their sums over a chunk,
// the chunks as large as the rest allows, at most `max_chunk` bases. The prover gives it
// what its plan holds for sppark's Pippenger over host bases: 4.9 GB at 2^27, so all 13
// windows a pass and chunks of 11M bases; at 2^23, 0.7 GB, so all 15 windows a pass over
// chunks of 1.1M (each pass sorts the chunk's scalars again). Throws cuda_error;
// cudaErrorMemoryAllocation where that does not fit, before any work.
template<class bucket, class point>
void multiexp_streamed(const gpu_t& gpu, point& out, const void* host_bases,
                       const fr_t* scalars, size_t n, size_t max_bytes, size_t max_chunk,
                       scalar_form form = scalar_form::montgomery)
{
    using bucket_h = typename bucket::mem_t;
    using affine_h = typename bucket::affine_t::mem_t;
    if (!has_work(out, n))
        return;
    const size_t room = room_for(gpu, max_bytes);
    // The widest windows whose buckets all fit in a third of the room.
    plan_t plan{n};
    for (int widest = plan.width(0); widest >= 11; widest--) {
        plan = plan_t{n, widest};
        if (plan.slots(0, plan.windows) * sizeof(bucket_h) <= room / 3)
            break;
    }
    const size_t sums_bytes = plan.slots(0, plan.windows) * sizeof(bucket_h);
    const size_t wanted = std::min<size_t>(n, (size_t)1 << 20);
    // Bases a pass for `group` windows a pass: what the rest of the room holds of two
    // chunks of bases and the entries, beside the group's sums over a chunk.
    auto chunk_for = [&](int group) -> size_t {
        size_t fixed = sums_bytes + plan.slots(0, group) * sizeof(bucket_h) +
                       windows_t<bucket>::bytes_besides_entries(plan, group);
        if (fixed >= room)
            return 0;
        size_t per_base = 2 * sizeof(affine_h) + (size_t)group * sizeof(uint32_t);
        return (room - fixed) / per_base;
    };
    int group = plan.windows;
    while (group > 1 && chunk_for(group) < wanted)
        group--;
    size_t chunk = std::min({chunk_for(group), n, max_chunk, most_entries((size_t)group)});
    if (chunk < n)
        chunk = chunk / 1024 * 1024;
    if (chunk == 0 || sums_bytes > room)
        throw cuda_error{-cudaErrorMemoryAllocation,
                         std::string("no room for the streamed wide multiexp's buckets and chunks")};

    windows_t<bucket> win{gpu, plan, group, chunk, "streamed", n, false};
    stream_t& s = win.s;
    stream_t& copy = gpu[2];
    pool_buffer<bucket_h> sums{plan.slots(0, plan.windows), s};
    pool_buffer<bucket_h> chunk_sums{plan.slots(0, group), s};
    pool_buffer<affine_h> buffers[2] = {{chunk, s}, {chunk, s}};
    CUDA_OK(cudaMemsetAsync(sums.ptr, 0, sums_bytes, s));
    event_pair copied, consumed;
    // The buffers come from the pool on `s`: the first copies wait for their allocation.
    for (auto e : consumed.at)
        CUDA_OK(cudaEventRecord(e, s));
    // No copy may still write into a buffer once it goes back to the pool (on `s`, which a
    // copy in flight is not ordered with where queueing stopped halfway).
    struct drain_t {
        stream_t& copy;
        ~drain_t() { (void)cudaStreamSynchronize(copy); }
    } drain{copy};
    const char* host = static_cast<const char*>(host_bases);
    size_t k = 0, len = 0;
    for (size_t from = 0; from < n; from += len, k++) {
        // The first chunks an eighth, a quarter and half the others: nothing runs while the
        // first one comes up, and a chunk goes up in about the time the one before takes
        // to sum at half its size.
        len = std::min(std::max<size_t>(chunk >> (k < 3 ? 3 - k : 0), 1), n - from);
        affine_h* bases = buffers[k & 1].ptr;
        CUDA_OK(cudaStreamWaitEvent(copy, consumed.at[k & 1], 0));
        CUDA_OK(cudaMemcpyAsync(bases, host + from * sizeof(affine_h), len * sizeof(affine_h),
                                cudaMemcpyHostToDevice, copy));
        CUDA_OK(cudaEventRecord(copied.at[k & 1], copy));
        CUDA_OK(cudaStreamWaitEvent(s, copied.at[k & 1], 0));
        win.phases.mark(phases_t::WAIT);
        for (int first = 0; first < plan.windows; first += group) {
            int end = std::min(first + group, plan.windows);
            win.sum_buckets(chunk_sums.ptr, scalars + from, form, bases, len, first, end);
            size_t nbuckets = plan.slots(first, end);
            add_sums<bucket><<<win.grid, 256, 0, s>>>(sums.ptr + plan.slots(0, first),
                                                      chunk_sums.ptr, nbuckets);
            CUDA_OK(cudaGetLastError());
            win.phases.mark(phases_t::ADD);
        }
        CUDA_OK(cudaEventRecord(consumed.at[k & 1], s));
    }
    for (int first = 0; first < plan.windows; first += group)
        win.reduce(first, std::min(first + group, plan.windows), sums.ptr + plan.slots(0, first));
    win.join(out);
}

}  // namespace wide_msm
