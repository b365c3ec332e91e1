// The device kernels of cuzk's Groth16 (groth16.cu): the quotient's pointwise steps, the
// density filter, the constraint evaluation, the bit split of a query's scalars and the
// expansion of a compact witness. Included by groth16.cu inside its anonymous namespace,
// after sppark's headers; not a standalone header.

// c[i] = a[i] b[i], i < n; c may be a (each element is read before it is written).
__launch_bounds__(1024) __global__
void pointwise_product(fr_t* c, const fr_t* a, const fr_t* b, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x)
        c[i] = a[i] * b[i];
}

// a = ((b ? a b : a) - c) k, i < n: the quotient's last step on the coset, k = 1/Z (Z, the
// vanishing polynomial, is constant there), the product of a and b taken here where b is
// given. With k's canonical words as its operand (a Montgomery "element" k/R), a
// Montgomery multiplication leaves h canonical: (x R) k / R = x k, which the H multiexp
// reads as its scalars without converting each one in each of its passes.
__launch_bounds__(1024) __global__
void quotient_on_coset(fr_t* a, const fr_t* b, const fr_t* c, fr_t k, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x) {
        fr_t t = a[i];
        if (b)
            t *= b[i];
        t -= c[i];
        a[i] = t * k;
    }
}

// low[j] = r^j / n, j < WINDOW_SIZE, from one of sppark's tables of a root's powers
// (powers[0][j] = r^j, powers[1][j] = r^(j 2^LG_WINDOW_SIZE)): the low window of a coset
// shift's multipliers, with the inverse NTT's 1/n in it.
__launch_bounds__(256) __global__
void scale_low_powers(fr_t* low, const fr_t (*powers)[WINDOW_SIZE], fr_t one_over_n)
{
    for (uint32_t j = threadIdx.x + blockIdx.x * blockDim.x; j < WINDOW_SIZE;
         j += blockDim.x * gridDim.x)
        low[j] = powers[0][j] * one_over_n;
}

// v[i] *= r^e / n, e = rev(i) 2^step (rev over lg bits): coefficients in bit-reversed order,
// n times too large from an inverse NTT that left out its 1/n (quotient.cuh), shifted to a
// coset and scaled in one multiplication. The coset g·H takes g's powers and step 0; s·H
// (s a primitive 2n-th root of unity) the NTT's root of order 2^MAX_LG_DOMAIN_SIZE and step
// MAX_LG_DOMAIN_SIZE - 1 - lg, s being that root to the 2^step. The multiplier is
// low[e's low window] powers[1][e's high window]: as many multiplications as a shift alone
// (sppark's, or get_intermediate_root's), where the inverse NTT's 1/n would take one more.
__launch_bounds__(1024) __global__
void shift_and_scale(fr_t* v, uint32_t lg, uint32_t step, const fr_t* low,
                     const fr_t (*powers)[WINDOW_SIZE])
{
    static_assert(WINDOW_NUM == 2, "two windows of powers cover a domain's exponents");
    size_t n = (size_t)1 << lg;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x) {
        index_t e = lg ? (index_t)(__brev((uint32_t)i) >> (32 - lg)) << step : 0;
        fr_t m = low[e % WINDOW_SIZE] * powers[1][e / WINDOW_SIZE];
        v[i] *= m;
    }
}

// The powers of s, a primitive 2n-th root of unity (n = 2^lg, lg < MAX_LG_DOMAIN_SIZE),
// at the bit reversal of i: s = r^(2^(MAX_LG - 1 - lg)) for the NTT tables' root r of order
// 2^MAX_LG, whose powers get_intermediate_root reads (the inverse tables give s^-1's).
__device__ __forceinline__ fr_t half_root_power(size_t i, uint32_t lg,
                                                const fr_t (*powers)[WINDOW_SIZE])
{
    index_t rev = lg ? (index_t)(__brev((uint32_t)i) >> (32 - lg)) : 0;
    return get_intermediate_root(rev << (MAX_LG_DOMAIN_SIZE - 1 - lg), powers);
}

// h = (C - S) k, in bit-reversed order, into x: c holds C's coefficients, x those of
// s^k S_k (the product's inverse NTT on s·H, before the shift back by s^-k), both n times
// too large where their inverse NTTs left out the 1/n, which k then takes (k = 1/2n, not
// 1/2). With k's canonical words, h comes out canonical (quotient_on_coset says why).
__launch_bounds__(1024) __global__
void half_root_quotient(fr_t* x, const fr_t* c, fr_t k, uint32_t lg,
                        const fr_t (*inverse_powers)[WINDOW_SIZE])
{
    size_t n = (size_t)1 << lg;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x) {
        fr_t s = x[i] * half_root_power(i, lg, inverse_powers);
        x[i] = (c[i] - s) * k;
    }
}

// dst[prefix[w] + k] = src[64 w + j] for the k-th set bit j of word w: the variables a
// query uses, in order, so they line up with the parameters' bases.
__launch_bounds__(256) __global__
void filter_by_density(fr_t* dst, const fr_t* src, const uint64_t* words,
                       const uint32_t* prefix, size_t nwords, size_t nbits)
{
    for (size_t w = threadIdx.x + (size_t)blockIdx.x * blockDim.x; w < nwords;
         w += (size_t)blockDim.x * gridDim.x) {
        uint64_t bits = words[w];
        size_t base = w * 64;
        if (base + 64 > nbits) {
            size_t keep = nbits - base;
            bits &= keep >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << keep) - 1);
        }
        size_t out = prefix[w];
        while (bits) {
            int j = __ffsll((long long)bits) - 1;
            dst[out++] = src[base + j];
            bits &= bits - 1;
        }
    }
}

// Entry k of a row: its variable times its coefficient, a plain value for one or minus one.
__device__ __forceinline__ fr_t entry_term(uint64_t k, const uint64_t* entries,
                                           const fr_t* coeffs, const fr_t* inputs,
                                           const fr_t* aux, uint32_t one_id,
                                           uint32_t minus_one_id)
{
    uint64_t e = entries[k];
    uint32_t column = (uint32_t)e;
    uint32_t id = (uint32_t)(e >> 32);
    fr_t x = (column & 0x80000000u) ? inputs[column & 0x7fffffffu] : aux[column];
    if (id == one_id)
        return x;
    if (id == minus_one_id)
        return -x;
    return x * coeffs[id];
}

// v summed over the warp's 32 lanes, the sum in every lane.
__device__ __forceinline__ fr_t warp_sum(fr_t v)
{
    uint32_t* limbs = reinterpret_cast<uint32_t*>(&v);
    for (uint32_t offset = 16; offset > 0; offset /= 2) {
        fr_t other;
        uint32_t* o = reinterpret_cast<uint32_t*>(&other);
        for (size_t i = 0; i < sizeof(fr_t) / sizeof(uint32_t); i++)
            o[i] = __shfl_xor_sync(0xffffffffu, limbs[i], offset);
        v += other;
    }
    return v;
}

// Rows longer than this are summed by the whole warp.
#define CUZK_LONG_ROW 8

// out[r] = sum of coeff * variable over row r's entries, for every r < n (0 past `rows`).
// A warp takes 32 rows at a time, a lane each; a row of more than CUZK_LONG_ROW entries is
// summed by the warp together, its entries spread over the lanes. Row by lane alone, a warp
// waits for its longest row: in PoRep's and the update's A, under 1% of the rows hold
// hundreds of entries (the mean is 2.4), and the warps ran at 9% of their lanes.
__launch_bounds__(256) __global__
void evaluate_rows(fr_t* out, const uint64_t* row_ptr, const uint64_t* entries,
                   const fr_t* coeffs, const fr_t* inputs, const fr_t* aux, size_t rows,
                   size_t n, uint32_t one_id, uint32_t minus_one_id)
{
    const uint32_t lane = threadIdx.x % 32;
    const size_t warps = (size_t)gridDim.x * blockDim.x / 32;
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    for (size_t first = warp * 32; first < n; first += warps * 32) {
        size_t r = first + lane;
        uint64_t begin = 0, end = 0;
        if (r < rows) {
            begin = row_ptr[r];
            end = row_ptr[r + 1];
        }
        bool is_long = end - begin > CUZK_LONG_ROW;
        fr_t acc;
        acc.zero();
        if (!is_long)
            for (uint64_t k = begin; k < end; k++)
                acc += entry_term(k, entries, coeffs, inputs, aux, one_id, minus_one_id);
        for (uint32_t longs = __ballot_sync(0xffffffffu, is_long); longs; longs &= longs - 1) {
            int owner = __ffs(longs) - 1;
            uint64_t b = __shfl_sync(0xffffffffu, begin, owner);
            uint64_t e = __shfl_sync(0xffffffffu, end, owner);
            fr_t part;
            part.zero();
            for (uint64_t k = b + lane; k < e; k += 32)
                part += entry_term(k, entries, coeffs, inputs, aux, one_id, minus_one_id);
            part = warp_sum(part);
            if (lane == (uint32_t)owner)
                acc = part;
        }
        if (r < n)
            out[r] = acc;
    }
}

// Scalars are compared limb by limb, in Montgomery form: `one` is fr_t's one, passed in.
__device__ __forceinline__ uint32_t limbs_xor(const fr_t& a, const fr_t& b)
{
    const uint32_t* x = reinterpret_cast<const uint32_t*>(&a);
    const uint32_t* y = reinterpret_cast<const uint32_t*>(&b);
    uint32_t d = 0;
    for (size_t i = 0; i < sizeof(fr_t) / sizeof(uint32_t); i++)
        d |= x[i] ^ y[i];
    return d;
}

__device__ __forceinline__ uint32_t limbs_or(const fr_t& a)
{
    const uint32_t* x = reinterpret_cast<const uint32_t*>(&a);
    uint32_t d = 0;
    for (size_t i = 0; i < sizeof(fr_t) / sizeof(uint32_t); i++)
        d |= x[i];
    return d;
}

// A scalar neither zero nor one: it goes to the tail.
__device__ __forceinline__ bool is_wide(const fr_t& x, const fr_t& one)
{
    return limbs_xor(x, one) != 0 && limbs_or(x) != 0;
}

// The split of a query's scalars into bits and the rest, a warp per 32 scalars: `ones` gets
// a bit per scalar equal to one (the words up to `nwords` past the end are zero, as batch
// addition reads whole rows of 32 words), and `tail` counts the scalars neither zero nor one.
__launch_bounds__(256) __global__
void split_bits(uint32_t* ones, uint32_t* tail, const fr_t* scalars, size_t n, size_t nwords,
                fr_t one)
{
    const size_t warps = (size_t)gridDim.x * blockDim.x / 32;
    const uint32_t lane = threadIdx.x % 32;
    uint32_t count = 0;
    for (size_t w = (threadIdx.x + (size_t)blockIdx.x * blockDim.x) / 32; w < nwords;
         w += warps) {
        size_t i = w * 32 + lane;
        bool is_one = false, wide = false;
        if (i < n) {
            fr_t x = scalars[i];
            is_one = limbs_xor(x, one) == 0;
            wide = is_wide(x, one);
        }
        uint32_t one_bits = __ballot_sync(0xffffffffu, is_one);
        uint32_t wide_bits = __ballot_sync(0xffffffffu, wide);
        if (lane == 0) {
            ones[w] = one_bits;
            count += __popc(wide_bits);
        }
    }
    if (lane == 0 && count)
        atomicAdd(tail, count);
}

// Gathers the scalars neither zero nor one, with their positions, in any order (a multiexp's
// sum does not depend on it); `cursor` starts at zero.
__launch_bounds__(256) __global__
void gather_tail(fr_t* tail_scalars, uint32_t* tail_index, uint32_t* cursor,
                 const fr_t* scalars, size_t n, fr_t one)
{
    const size_t warps = (size_t)gridDim.x * blockDim.x / 32;
    const uint32_t lane = threadIdx.x % 32;
    const size_t nwords = (n + 31) / 32;
    for (size_t w = (threadIdx.x + (size_t)blockIdx.x * blockDim.x) / 32; w < nwords;
         w += warps) {
        size_t i = w * 32 + lane;
        fr_t x = scalars[i < n ? i : 0];
        bool wide = i < n && is_wide(x, one);
        uint32_t wide_bits = __ballot_sync(0xffffffffu, wide);
        uint32_t at = 0;
        if (lane == 0 && wide_bits)
            at = atomicAdd(cursor, (uint32_t)__popc(wide_bits));
        at = __shfl_sync(0xffffffffu, at, 0);
        if (wide) {
            at += __popc(wide_bits & ((1u << lane) - 1));
            tail_scalars[at] = x;
            tail_index[at] = (uint32_t)i;
        }
    }
}

// A witness as split_filtered reads it, variable by variable: whole (`dense`), or compact
// as the host holds it (compact_witness.rs): a bit per one, and the wide values in order of
// position, found through a bit per wide variable and each word's count of wide ones before
// it (mark_wide, count_wide_before). Compact, a 32GiB partition's witness takes ~100 MB on
// the device where whole it takes 4.2 GB.
struct witness_view {
    const fr_t* dense = nullptr;
    const uint64_t* ones = nullptr;
    const uint64_t* wide = nullptr;
    const uint32_t* wide_before = nullptr;
    const fr_t* values = nullptr;

    static witness_view whole(const fr_t* v)
    {
        witness_view view;
        view.dense = v;
        return view;
    }

    __device__ __forceinline__ fr_t at(size_t i, const fr_t& one) const
    {
        if (dense)
            return dense[i];
        const uint64_t bit = (uint64_t)1 << (i % 64);
        if (ones[i / 64] & bit)
            return one;
        const uint64_t w = wide[i / 64];
        if (w & bit)
            return values[wide_before[i / 64] + __popcll(w & (bit - 1))];
        fr_t zero;
        zero.zero();
        return zero;
    }
};

// wide[index[k] / 64] gets bit index[k] % 64 (zeroed before): the compact witness's wide
// variables as bits.
__launch_bounds__(256) __global__
void mark_wide(unsigned long long* wide, const uint32_t* index, size_t n)
{
    for (size_t k = threadIdx.x + (size_t)blockIdx.x * blockDim.x; k < n;
         k += (size_t)blockDim.x * gridDim.x)
        atomicOr(&wide[index[k] / 64], 1ull << (index[k] % 64));
}

// before[w] = the wide variables below variable 64 w: a binary search of the ascending
// positions, per word.
__launch_bounds__(256) __global__
void count_wide_before(uint32_t* before, const uint32_t* index, size_t n, size_t nwords)
{
    for (size_t w = threadIdx.x + (size_t)blockIdx.x * blockDim.x; w < nwords;
         w += (size_t)blockDim.x * gridDim.x) {
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if ((size_t)index[mid] < w * 64)
                lo = mid + 1;
            else
                hi = mid;
        }
        before[w] = (uint32_t)lo;
    }
}

// The split of a query straight from the variables it filters, without building the query
// (the query multiexps beside H, beside_h.cuh). Query position `offset + prefix[w] + k`
// holds the k-th variable of word w whose density bit is set; with no density (`words`
// null) every variable is used, in order. Run twice: first (`tail_scalars` null) a one sets
// its bit in `ones` (zeroed before) and the scalars neither zero nor one are counted in
// `cursor`; then, with the tail's buffers, those are written where `cursor` (zeroed again)
// hands out, with their query positions.
__launch_bounds__(256) __global__
void split_filtered(uint32_t* ones, uint32_t* cursor, fr_t* tail_scalars, uint32_t* tail_index,
                    witness_view src, const uint64_t* words, const uint32_t* prefix,
                    size_t nwords, size_t nbits, size_t offset, fr_t one)
{
    const bool gathering = tail_scalars != nullptr;
    uint32_t counted = 0;
    for (size_t w = threadIdx.x + (size_t)blockIdx.x * blockDim.x; w < nwords;
         w += (size_t)blockDim.x * gridDim.x) {
        size_t base = w * 64;
        uint64_t bits = words ? words[w] : ~(uint64_t)0;
        if (base + 64 > nbits) {
            size_t keep = nbits - base;
            bits &= keep >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << keep) - 1);
        }
        const size_t first = offset + (words ? (size_t)prefix[w] : base);
        // A word's variables land on consecutive positions: their one bits are gathered per
        // 32-bit word of `ones` and set with one atomic each (neighbours share edge words).
        size_t at = first, word = first / 32;
        uint32_t mask = 0, wide = 0;
        for (uint64_t left = bits; left; left &= left - 1, at++) {
            fr_t x = src.at(base + __ffsll((long long)left) - 1, one);
            if (limbs_xor(x, one) == 0) {
                if (!gathering) {
                    if (at / 32 != word) {
                        if (mask)
                            atomicOr(&ones[word], mask);
                        word = at / 32;
                        mask = 0;
                    }
                    mask |= 1u << (at % 32);
                }
            } else if (limbs_or(x) != 0) {
                wide++;
            }
        }
        if (mask)
            atomicOr(&ones[word], mask);
        if (!gathering || wide == 0) {
            counted += wide;
            continue;
        }
        uint32_t k = atomicAdd(cursor, wide);
        at = first;
        for (uint64_t left = bits; left; left &= left - 1, at++) {
            fr_t x = src.at(base + __ffsll((long long)left) - 1, one);
            if (is_wide(x, one)) {
                tail_scalars[k] = x;
                tail_index[k] = (uint32_t)at;
                k++;
            }
        }
    }
    if (!gathering && counted)
        atomicAdd(cursor, counted);
}

// dst[k] = chunk[index[k] - first] for every tail position inside [first, first + len): the
// tail's bases, gathered from a chunk of streamed bases as it passes.
template<class affine_h>
__launch_bounds__(256) __global__
void gather_bases_in_chunk(affine_h* dst, const affine_h* chunk, const uint32_t* index,
                           size_t n, size_t first, size_t len)
{
    for (size_t k = threadIdx.x + (size_t)blockIdx.x * blockDim.x; k < n;
         k += (size_t)blockDim.x * gridDim.x) {
        size_t i = index[k];
        if (i >= first && i - first < len)
            dst[k] = chunk[i - first];
    }
}

// dst[k] = bases[index[k]]: the tail's bases, beside its scalars.
template<class affine_h>
__launch_bounds__(256) __global__
void gather_bases(affine_h* dst, const affine_h* bases, const uint32_t* index, size_t n)
{
    for (size_t k = threadIdx.x + (size_t)blockIdx.x * blockDim.x; k < n;
         k += (size_t)blockDim.x * gridDim.x)
        dst[k] = bases[index[k]];
}

// dst[i] = one where bit i of `ones` is set, else zero: a compact witness's bits.
__launch_bounds__(256) __global__
void expand_bits(fr_t* dst, const uint64_t* ones, size_t n, fr_t one)
{
    fr_t zero;
    zero.zero();
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x)
        dst[i] = (ones[i / 64] >> (i % 64)) & 1 ? one : zero;
}

// dst[index[k]] = wide[k]: a compact witness's other values, after its bits.
__launch_bounds__(256) __global__
void scatter_wide(fr_t* dst, const uint32_t* index, const fr_t* wide, size_t n)
{
    for (size_t k = threadIdx.x + (size_t)blockIdx.x * blockDim.x; k < n;
         k += (size_t)blockDim.x * gridDim.x)
        dst[index[k]] = wide[k];
}

// One of a, b and c, uploaded as it is held compact (host_abc/compact.rs: each chunk's
// wide values packed at its start, in `v` itself), made whole in place: a block per chunk,
// tiles of blockDim.x rows from the chunk's top down. A row's packed value sits at or
// below the row, so a tile reads only rows not yet written (those above it are done, and
// its own are all read before any is written); `expand_in_tiles` in compact.rs models it.
__launch_bounds__(1024) __global__
void expand_abc_chunks(fr_t* v, size_t rows, size_t chunk_rows, const uint64_t* ones,
                       const uint64_t* wide, const uint32_t* wide_before, fr_t one)
{
    const size_t base = (size_t)blockIdx.x * chunk_rows;
    if (base >= rows)
        return;
    const size_t end = base + chunk_rows < rows ? base + chunk_rows : rows;
    for (size_t top = end; top > base;) {
        size_t start = top - base > blockDim.x ? top - blockDim.x : base;
        size_t i = start + threadIdx.x;
        bool mine = i < top;
        fr_t value;
        value.zero();
        if (mine) {
            size_t w = i / 64;
            uint64_t bit = (uint64_t)1 << (i % 64);
            uint64_t wide_word = wide[w];
            if (wide_word & bit)
                value = v[base + wide_before[w] + __popcll(wide_word & (bit - 1))];
            else if (ones[w] & bit)
                value = one;
        }
        __syncthreads();
        if (mine)
            v[i] = value;
        __syncthreads();
        top = start;
    }
}

// A test's hang (CUZK_TEST_GPU_FAULT=hang): a kernel that never ends, as a hung one would
// not; its flag is never set.
__global__ void spin_forever()
{
    __shared__ volatile uint32_t flag;
    flag = 0;
    while (flag == 0)
        __nanosleep(1000);
}

// A test's sticky fault (CUZK_TEST_GPU_FAULT=sticky): an illegal address, which loses the
// context as a real one (Xid 13/31/43) would.
__global__ void write_through_null()
{
    *(volatile uint32_t*)nullptr = 1;
}
