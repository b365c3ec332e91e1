// cuzk's Groth16 prover on one GPU, built on sppark's NTT and Pippenger multiexp.
//
// What runs here, per partition: a = A·w, b = B·w, c = C·w from the pre-compiled
// constraints when the GPU keeps them (else a, b, c come from the host), the quotient
// h = (a*b - c) / Z (iNTT, coset NTT, the pointwise step, coset iNTT), the density
// filtering of the A and B queries, and the five multiexps (H, L, A and B in G1, B in G2;
// the last four split into the scalars that are bits and the rest). The final combination
// with r and s is done by the Rust side (backend/cuda/mod.rs), which also checks every
// input before calling in.
//
// Safety rules of the host side, stated once:
// - Ownership. A `cuzk_gpu` owns every device buffer it uses: the resident bases (allocated
//   by cuzk_gpu_reserve_bases, kept until cuzk_gpu_close), the pre-compiled constraints
//   (cuzk_gpu_upload_matrices, replaced only by another set) and the per-partition working
//   buffers (allocated at the first partition of a domain size, grown only for a larger
//   one). Nothing else frees them. The multiexps' temporaries (sppark's, and the bit
//   split's `pool_buffer`s) come from the device's stream-ordered pool and go back to it
//   within the call. Host pointers passed in are borrowed for the call only.
// - Streams. Everything runs on sppark's streams of the handle's device. sppark's
//   multiexp keeps per-device work counters, so two proofs must never run on one device at
//   once: each device has one mutex, held for a whole upload or proof. Within a proof, a
//   helper thread may copy (and, when compact, expand) the next partition's witness on the
//   stager's own stream into the slot this proof does not use; it is joined before the
//   call returns.
// - Errors. No C++ exception crosses this boundary: every entry point catches all of them
//   and returns a cuzk_status (code 0 on success, else a CUDA error code or -1, with a
//   message naming the step). Host asserts are compiled out (NDEBUG); the Rust side
//   validates lengths first. A sticky CUDA error poisons the handle: later calls fail
//   with the same reason instead of computing on a broken context.

#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <string>
#include <cstdio>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>
#include <exception>

#include <ff/bls12-381-fp2.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;

typedef jacobian_t<fp2_t> point_fp2_t;
typedef xyzz_t<fp2_t> bucket_fp2_t;
typedef bucket_fp2_t::affine_t affine_fp2_t;

typedef fr_t scalar_t;

#include <algorithm>
#include <vector>

// sppark's digit sort is a plain __global__ function; SupraSeal's prover, linked into the
// same binary, defines it too. A name of our own keeps the two definitions apart (the
// standard headers that use `sort` are included above, so only sppark's is renamed).
// Its batch addition kernels are templates SupraSeal instantiates as well; they are renamed
// the same way, so that our launches reach the kernels compiled in this file.
#define sort cuzk_msm_sort
#define batch_addition cuzk_batch_addition
#define SPPARK_DONT_INSTANTIATE_TEMPLATES
#include <msm/pippenger.cuh>
#undef batch_addition
#undef sort
#include <ntt/ntt.cuh>

extern "C" {

// The outcome of a call: code 0 on success.
struct cuzk_status {
    int32_t code;
    char message[500];
};

// Sizes of the five base vectors of a parameter set.
struct cuzk_base_counts {
    size_t h, l, a, b;
};

// Which base vector an upload fills.
enum cuzk_base_set { CUZK_H = 0, CUZK_L = 1, CUZK_A = 2, CUZK_B_G1 = 3, CUZK_B_G2 = 4 };

// A circuit's pre-compiled constraints, borrowed for the upload: A, B and C in compressed
// sparse rows (rows + 1 offsets; entries with the column in the low 31 bits, bit 31 set for
// an input, and the coefficient's id in the high 32), and the distinct coefficients.
struct cuzk_matrices {
    const uint64_t* row_ptr[3];
    const uint64_t* entries[3];
    size_t nnz[3];
    size_t rows;
    const fr_t* coeffs;
    size_t ncoeffs;
};

// One synthesized partition, borrowed from the Rust side for the call.
struct cuzk_partition {
    const fr_t* a;              // abc_len evaluations each, Montgomery form; null when
    const fr_t* b;              //   `evaluate` is set
    const fr_t* c;
    size_t abc_len;
    int32_t evaluate;           // a, b, c are the uploaded matrices times the witness
    uint64_t witness_id;        // names the witness (never reused in a process; 0: none)
    size_t lg_domain;           // 2^lg_domain >= abc_len
    const fr_t* inputs;         // input_len values, the constant one first
    size_t input_len;
    const fr_t* aux;            // aux_len values; null when compact:
    size_t aux_len;
    const uint64_t* aux_ones;   //   bit i of word i/64 set where variable i is one, and
    const uint32_t* aux_wide_index;  // the other non-zero variables' positions
    const fr_t* aux_wide;       //   and values (null when whole)
    size_t aux_wide_len;
    // Densities, as u64 words (bit i of word i/64) with the exclusive prefix counts of set
    // bits before each word, so the filtering kernel writes each survivor in its place.
    const uint64_t* a_aux_words;    const uint32_t* a_aux_prefix;    size_t a_aux_total;
    const uint64_t* b_input_words;  const uint32_t* b_input_prefix;  size_t b_input_total;
    const uint64_t* b_aux_words;    const uint32_t* b_aux_prefix;    size_t b_aux_total;
    // Bases that are not resident on the device (null when they are): host memory,
    // streamed through the multiexp's own chunk buffers.
    const affine_t* host_h;
    const affine_t* host_l;
    const affine_t* host_a;
    const affine_t* host_b_g1;
    const affine_fp2_t* host_b_g2;
};

// The five multiexps, as Jacobian points in Montgomery form (blst's layout).
struct cuzk_msm_results {
    point_t h, l, a, b_g1;
    point_fp2_t b_g2;
};

// Milliseconds per step of one proof.
struct cuzk_step_ms {
    double upload, evaluate, quotient, msm_h, msm_l, msm_a, msm_b_g1, msm_b_g2, total;
};

struct cuzk_gpu;

}  // extern "C"

// A device pointer sppark's multiexp takes as "already on the device".
template<typename T> using device_span = dev_ptr_t<T>;

namespace {

std::mutex device_locks[64];

void set_status(cuzk_status* st, int code, const char* fmt_str, const char* what)
{
    st->code = code;
    std::snprintf(st->message, sizeof(st->message), fmt_str, what);
}

cuzk_status ok()
{
    cuzk_status st;
    st.code = 0;
    st.message[0] = 0;
    return st;
}

// Runs `body`, turning every exception into a status that names `step`.
template<class F>
cuzk_status guarded(const char* step, F body)
{
    cuzk_status st = ok();
    try {
        body();
    } catch (const cuda_error& e) {
        char buf[400];
        std::snprintf(buf, sizeof(buf), "%s: %s", step, e.what());
        set_status(&st, e.code() ? e.code() : -1, "%s", buf);
    } catch (const std::exception& e) {
        char buf[400];
        std::snprintf(buf, sizeof(buf), "%s: %s", step, e.what());
        set_status(&st, -1, "%s", buf);
    } catch (...) {
        set_status(&st, -1, "%s: unknown C++ exception", step);
    }
    return st;
}

__launch_bounds__(1024) __global__
void pointwise_mul(fr_t* a, const fr_t* b, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x)
        a[i] *= b[i];
}

// a = (a - c) / Z, where Z is the vanishing polynomial's constant value on the coset.
__launch_bounds__(1024) __global__
void sub_scale(fr_t* a, const fr_t* c, fr_t z_inv, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x) {
        fr_t t = a[i] - c[i];
        a[i] = t * z_inv;
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

// out[r] = sum of coeff * variable over row r's entries, for every r < n (0 past `rows`):
// one thread per row; a coefficient of one or minus one is a plain addition.
__launch_bounds__(256) __global__
void evaluate_rows(fr_t* out, const uint64_t* row_ptr, const uint64_t* entries,
                   const fr_t* coeffs, const fr_t* inputs, const fr_t* aux, size_t rows,
                   size_t n, uint32_t one_id, uint32_t minus_one_id)
{
    for (size_t r = threadIdx.x + (size_t)blockIdx.x * blockDim.x; r < n;
         r += (size_t)blockDim.x * gridDim.x) {
        fr_t acc;
        acc.zero();
        if (r < rows) {
            for (uint64_t k = row_ptr[r], end = row_ptr[r + 1]; k < end; k++) {
                uint64_t e = entries[k];
                uint32_t column = (uint32_t)e;
                uint32_t id = (uint32_t)(e >> 32);
                fr_t x = (column & 0x80000000u) ? inputs[column & 0x7fffffffu] : aux[column];
                if (id == one_id)
                    acc += x;
                else if (id == minus_one_id)
                    acc -= x;
                else
                    acc += x * coeffs[id];
            }
        }
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

// Device memory from the stream's pool (kept by the pool, see cuzk_gpu_open), given back on
// that stream when it goes out of scope.
template<class T>
struct pool_buffer {
    T* ptr = nullptr;
    cudaStream_t stream = nullptr;
    pool_buffer() = default;
    pool_buffer(size_t n, cudaStream_t s) : stream(s)
    {
        if (n)
            CUDA_OK(cudaMallocAsync((void**)&ptr, n * sizeof(T), s));
    }
    pool_buffer(pool_buffer&& o) noexcept : ptr(o.ptr), stream(o.stream) { o.ptr = nullptr; }
    pool_buffer& operator=(pool_buffer&& o) noexcept
    {
        if (this != &o) {
            release();
            ptr = o.ptr;
            stream = o.stream;
            o.ptr = nullptr;
        }
        return *this;
    }
    pool_buffer(const pool_buffer&) = delete;
    pool_buffer& operator=(const pool_buffer&) = delete;
    ~pool_buffer() { release(); }
    void release()
    {
        if (ptr)
            (void)cudaFreeAsync(ptr, stream);
        ptr = nullptr;
    }
};

template<class T>
struct device_vec {
    T* ptr = nullptr;
    size_t len = 0;
    void reserve(size_t n)
    {
        if (n <= len)
            return;
        release();
        CUDA_OK(cudaMalloc(&ptr, n * sizeof(T)));
        len = n;
    }
    void release()
    {
        if (ptr)
            (void)cudaFree(ptr);
        ptr = nullptr;
        len = 0;
    }
};

double ms_between(std::chrono::steady_clock::time_point a,
                  std::chrono::steady_clock::time_point b)
{
    return std::chrono::duration<double, std::milli>(b - a).count();
}

fr_t z_inverse_on_coset(size_t lg_domain)
{
    // Z(x) = x^n - 1 takes one value on the coset g*<omega>: g^n - 1.
    fr_t gen_pow = group_gen;
    while (lg_domain--)
        gen_pow ^= 2;
    return (gen_pow - fr_t::one()).reciprocal();
}

}  // namespace

// Copies pageable host memory (the Rust side's vectors) to the device through two pinned
// chunks: the pool's threads fill one while the copy engine drains the other, so the copy
// runs at the bus's speed rather than at one thread's memcpy. Its own stream keeps the
// copies off the kernels' streams, so an upload can overlap a multiexp.
struct stager_t {
    static const size_t CHUNK = (size_t)64 << 20;
    char* pinned[2] = {nullptr, nullptr};
    cudaEvent_t drained[2] = {nullptr, nullptr};
    cudaStream_t stream = nullptr;
    thread_pool_t pool;

    void init()
    {
        for (int b = 0; b < 2; b++) {
            CUDA_OK(cudaHostAlloc((void**)&pinned[b], CHUNK, cudaHostAllocPortable));
            CUDA_OK(cudaEventCreateWithFlags(&drained[b], cudaEventDisableTiming));
        }
        CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    }

    void release()
    {
        if (stream)
            (void)cudaStreamSynchronize(stream);
        for (int b = 0; b < 2; b++) {
            if (pinned[b]) (void)cudaFreeHost(pinned[b]);
            if (drained[b]) (void)cudaEventDestroy(drained[b]);
            pinned[b] = nullptr;
            drained[b] = nullptr;
        }
        if (stream)
            (void)cudaStreamDestroy(stream);
        stream = nullptr;
    }

    void copy(void* dst, const void* src, size_t bytes)
    {
        const size_t piece = (size_t)1 << 20;
        for (size_t off = 0, i = 0; off < bytes; off += CHUNK, i++) {
            int b = i & 1;
            size_t len = std::min(CHUNK, bytes - off);
            CUDA_OK(cudaEventSynchronize(drained[b]));  // the chunk's last copy is done
            const char* from = (const char*)src + off;
            char* to = pinned[b];
            pool.par_map((len + piece - 1) / piece, [&](size_t k) {
                size_t at = k * piece;
                std::memcpy(to + at, from + at, std::min(piece, len - at));
            });
            CUDA_OK(cudaMemcpyAsync((char*)dst + off, to, len, cudaMemcpyHostToDevice, stream));
            CUDA_OK(cudaEventRecord(drained[b], stream));
        }
        CUDA_OK(cudaStreamSynchronize(stream));
    }
};

struct cuzk_gpu {
    const gpu_t& gpu;
    int index;
    std::string sticky;     // the first unrecoverable error, if any

    cuzk_base_counts counts{};
    device_vec<affine_t> h, l, a, b_g1;
    device_vec<affine_fp2_t> b_g2;
    bool resident[5] = {false, false, false, false, false};

    // The pre-compiled constraints, when the GPU evaluates them.
    device_vec<uint64_t> row_ptr[3], entries[3];
    device_vec<fr_t> coeffs;
    size_t matrix_rows = 0;
    uint32_t one_id = UINT32_MAX, minus_one_id = UINT32_MAX;

    // Per-partition working buffers.
    device_vec<fr_t> d_a, d_b, d_inputs;  // x, y and the inputs
    device_vec<fr_t> d_c;                 // z, when evaluating
    // The witness, when evaluating: two slots, so the next partition's goes up while this
    // one's kernels run. slot_id names the witness a slot holds whole (0: none).
    device_vec<fr_t> slot_aux[2];
    uint64_t slot_id[2] = {0, 0};
    device_vec<uint64_t> d_words;
    device_vec<uint32_t> d_prefix;
    stager_t stage;

    cuzk_gpu(const gpu_t& g, int i) : gpu(g), index(i) {}

    ~cuzk_gpu()
    {
        gpu.select();
        gpu.sync();
        h.release(); l.release(); a.release(); b_g1.release(); b_g2.release();
        d_a.release(); d_b.release(); d_inputs.release();
        d_c.release(); slot_aux[0].release(); slot_aux[1].release(); coeffs.release();
        for (int m = 0; m < 3; m++) { row_ptr[m].release(); entries[m].release(); }
        d_words.release(); d_prefix.release();
        stage.release();
    }
};

namespace {

// Puts partition `p`'s witness into `dst` (p->aux_len values) through the stager, on its
// stream: whole, or compact, when its bits and wide values go up (tens of MB for a 32GiB
// partition, against 4.2 GB whole) and are expanded here.
void upload_witness(cuzk_gpu* g, fr_t* dst, const cuzk_partition* p)
{
    stager_t& stage = g->stage;
    if (!p->aux_ones) {
        stage.copy(dst, p->aux, p->aux_len * sizeof(fr_t));
        return;
    }
    size_t words = (p->aux_len + 63) / 64, wide = p->aux_wide_len;
    pool_buffer<uint64_t> ones{words, stage.stream};
    pool_buffer<uint32_t> index{wide, stage.stream};
    pool_buffer<fr_t> values{wide, stage.stream};
    stage.copy(ones.ptr, p->aux_ones, words * sizeof(uint64_t));
    stage.copy(index.ptr, p->aux_wide_index, wide * sizeof(uint32_t));
    stage.copy(values.ptr, p->aux_wide, wide * sizeof(fr_t));
    const int grid = (int)g->gpu.sm_count() * 4;
    if (p->aux_len)
        expand_bits<<<grid, 256, 0, stage.stream>>>(dst, ones.ptr, p->aux_len, fr_t::one());
    CUDA_OK(cudaGetLastError());
    if (wide)
        scatter_wide<<<grid, 256, 0, stage.stream>>>(dst, index.ptr, values.ptr, wide);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaStreamSynchronize(stage.stream));
}

// After a failure, is the context still usable? Sticky errors (illegal address, launch
// failure) are not; out of memory and bad arguments are.
void note_failure(cuzk_gpu* g, const cuzk_status& st)
{
    if (st.code == 0)
        return;
    cudaError_t last = cudaPeekAtLastError();
    (void)last;
    cudaError_t sync = cudaDeviceSynchronize();
    if (sync != cudaSuccess && g->sticky.empty())
        g->sticky = st.message;
}

// True, with the reason in `st`, once a sticky error made the handle unusable.
bool is_poisoned(const cuzk_gpu* g, cuzk_status* st)
{
    if (g->sticky.empty())
        return false;
    set_status(st, -1, "the GPU failed earlier: %s", g->sticky.c_str());
    return true;
}

template<class bucket, class point, class affine>
void run_msm(const gpu_t& gpu, point& out, const affine* device_bases, const affine* host_bases,
             const fr_t* device_scalars, size_t n)
{
    if (n == 0) {
        out.inf();
        return;
    }
    msm_t<bucket, point, affine, scalar_t> msm{nullptr, n, sizeof(affine), gpu.id()};
    RustError err;
    if (device_bases)
        err = msm.invoke(out, device_span<affine>{const_cast<affine*>(device_bases)}, n,
                         device_span<fr_t>{const_cast<fr_t*>(device_scalars)}, true);
    else
        err = msm.invoke(out, host_bases, n,
                         device_span<fr_t>{const_cast<fr_t*>(device_scalars)}, true);
    std::string message = err.message ? err.message : "multiexp failed";
    std::free(err.message);     // sppark strdup()s it for Rust; we own it here
    if (err.code != cudaSuccess)
        throw cuda_error{err.code, message};
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
    size_t n = 0, tail = 0;
    bool is_split = false;      // else: prove with plain Pippenger
    pool_buffer<uint32_t> ones;
    pool_buffer<fr_t> tail_scalars;
    pool_buffer<uint32_t> tail_index;

    bit_split(const gpu_t& g, const fr_t* scalars, size_t len) : gpu(g), n(len)
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
                if (e.code() != cudaErrorMemoryAllocation)
                    throw;
                (void)cudaGetLastError();
                return;
            }
        }
        tail = wide;
        ones = std::move(words);
        is_split = true;
    }

    // out = the multiexp of the split scalars over `bases` (on the device, n of them).
    template<class bucket, class point, class affine>
    void multiexp(point& out, const affine* bases)
    {
        using bucket_h = typename bucket::mem_t;
        using affine_h = typename affine::mem_t;
        stream_t& s = gpu[0];
        const int sms = (int)gpu.sm_count();
        out.inf();
        if (tail) {
            pool_buffer<affine_h> tail_bases{tail, s};
            gather_bases<<<sms * 4, 256, 0, s>>>(tail_bases.ptr, (const affine_h*)bases,
                                                 (const uint32_t*)tail_index.ptr, tail);
            CUDA_OK(cudaGetLastError());
            s.sync();
            run_msm<bucket>(gpu, out, (const affine*)tail_bases.ptr, (const affine*)nullptr,
                            (const fr_t*)tail_scalars.ptr, tail);
        }
        const size_t nbuckets = (size_t)sms * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
        pool_buffer<bucket_h> d_sums{nbuckets, s};
        s.launch_coop(cuzk_batch_addition<bucket>, {sms, BATCH_ADD_BLOCK_SIZE},
                      d_sums.ptr, (const affine_h*)bases, (uint32_t)n,
                      (const uint32_t*)ones.ptr, false, (uint32_t)0);
        std::vector<bucket> sums(nbuckets);
        s.DtoH(&sums[0], d_sums.ptr, nbuckets);
        s.sync();
        point ones_sum = sum_up(sums);
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

}  // namespace

extern "C" {

cuzk_status cuzk_gpu_count(size_t* count)
{
    return guarded("counting GPUs", [&] { *count = ngpus(); });
}

// Opens sppark's device `index` (devices of compute capability 7.0 and up, in CUDA order).
cuzk_status cuzk_gpu_open(size_t index, cuzk_gpu** out, char* name, size_t name_len,
                          size_t* free_bytes, size_t* total_bytes)
{
    *out = nullptr;
    return guarded("opening the GPU", [&] {
        if (index >= ngpus())
            throw sppark_error{cudaErrorInvalidDevice, std::string("no such GPU")};
        const gpu_t& gpu = select_gpu((int)index);
        std::snprintf(name, name_len, "%s", gpu.props().name);
        CUDA_OK(cudaMemGetInfo(free_bytes, total_bytes));
        // Keep what the multiexp's per-call temporaries return to the pool, so a proof
        // does not go back to the driver for memory.
        cudaMemPool_t pool;
        CUDA_OK(cudaDeviceGetDefaultMemPool(&pool, gpu.cid()));
        uint64_t keep = UINT64_MAX;
        CUDA_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
        auto* g = new cuzk_gpu(gpu, (int)index);
        try {
            g->stage.init();
        } catch (...) {
            delete g;
            throw;
        }
        *out = g;
    });
}

void cuzk_gpu_close(cuzk_gpu* g)
{
    if (!g)
        return;
    try {
        std::lock_guard<std::mutex> lock(device_locks[g->index % 64]);
        delete g;
    } catch (...) {
    }
}

cuzk_status cuzk_gpu_free_memory(cuzk_gpu* g, size_t* free_bytes, size_t* total_bytes)
{
    return guarded("querying free memory", [&] {
        g->gpu.select();
        CUDA_OK(cudaMemGetInfo(free_bytes, total_bytes));
    });
}

// Allocates the resident base vectors named in `resident` (bit i for cuzk_base_set i);
// the others will be streamed from host memory at each proof.
cuzk_status cuzk_gpu_reserve_bases(cuzk_gpu* g, const cuzk_base_counts* counts,
                                   uint32_t resident)
{
    std::lock_guard<std::mutex> lock(device_locks[g->index % 64]);
    cuzk_status refused;
    if (is_poisoned(g, &refused))
        return refused;
    return guarded("allocating resident bases", [&] {
        g->gpu.select();
        g->h.release(); g->l.release(); g->a.release(); g->b_g1.release(); g->b_g2.release();
        g->counts = *counts;
        for (int i = 0; i < 5; i++)
            g->resident[i] = (resident >> i) & 1;
        if (g->resident[CUZK_H])    g->h.reserve(counts->h);
        if (g->resident[CUZK_L])    g->l.reserve(counts->l);
        if (g->resident[CUZK_A])    g->a.reserve(counts->a);
        if (g->resident[CUZK_B_G1]) g->b_g1.reserve(counts->b);
        if (g->resident[CUZK_B_G2]) g->b_g2.reserve(counts->b);
    });
}

// Copies `count` points (Montgomery affine, blst's layout) from host memory (ideally
// pinned) into resident set `set`, starting at point `first`.
cuzk_status cuzk_gpu_upload_bases(cuzk_gpu* g, uint32_t set, size_t first,
                                  const void* points, size_t count)
{
    std::lock_guard<std::mutex> lock(device_locks[g->index % 64]);
    cuzk_status refused;
    if (is_poisoned(g, &refused))
        return refused;
    cuzk_status st = guarded("uploading bases", [&] {
        g->gpu.select();
        void* dst = nullptr;
        size_t cap = 0, size = sizeof(affine_t);
        switch (set) {
            case CUZK_H:    dst = g->h.ptr;    cap = g->h.len;    break;
            case CUZK_L:    dst = g->l.ptr;    cap = g->l.len;    break;
            case CUZK_A:    dst = g->a.ptr;    cap = g->a.len;    break;
            case CUZK_B_G1: dst = g->b_g1.ptr; cap = g->b_g1.len; break;
            case CUZK_B_G2: dst = g->b_g2.ptr; cap = g->b_g2.len; size = sizeof(affine_fp2_t); break;
            default: throw sppark_error{cudaErrorInvalidValue, std::string("unknown base set")};
        }
        if (!dst || first + count > cap)
            throw sppark_error{cudaErrorInvalidValue, std::string("bases out of range")};
        CUDA_OK(cudaMemcpy((char*)dst + first * size, points, count * size,
                           cudaMemcpyHostToDevice));
    });
    note_failure(g, st);
    return st;
}

// Uploads a circuit's pre-compiled constraints, replacing any before; `one_id` and
// `minus_one_id` name the coefficients one and minus one (UINT32_MAX when absent).
cuzk_status cuzk_gpu_upload_matrices(cuzk_gpu* g, const cuzk_matrices* m, uint32_t one_id,
                                     uint32_t minus_one_id)
{
    std::lock_guard<std::mutex> lock(device_locks[g->index % 64]);
    cuzk_status refused;
    if (is_poisoned(g, &refused))
        return refused;
    cuzk_status st = guarded("uploading the pre-compiled constraints", [&] {
        g->gpu.select();
        g->matrix_rows = 0;
        g->coeffs.release();
        for (int k = 0; k < 3; k++) {
            g->row_ptr[k].release();
            g->entries[k].release();
        }
        g->coeffs.reserve(m->ncoeffs ? m->ncoeffs : 1);
        g->stage.copy(g->coeffs.ptr, m->coeffs, m->ncoeffs * sizeof(fr_t));
        for (int k = 0; k < 3; k++) {
            g->row_ptr[k].reserve(m->rows + 1);
            g->entries[k].reserve(m->nnz[k] ? m->nnz[k] : 1);
            g->stage.copy(g->row_ptr[k].ptr, m->row_ptr[k], (m->rows + 1) * sizeof(uint64_t));
            g->stage.copy(g->entries[k].ptr, m->entries[k], m->nnz[k] * sizeof(uint64_t));
        }
        g->one_id = one_id;
        g->minus_one_id = minus_one_id;
        g->matrix_rows = m->rows;
    });
    note_failure(g, st);
    return st;
}

cuzk_status cuzk_host_alloc(size_t bytes, void** out)
{
    *out = nullptr;
    return guarded("allocating pinned host memory", [&] {
        CUDA_OK(cudaHostAlloc(out, bytes, cudaHostAllocPortable));
    });
}

void cuzk_host_free(void* ptr)
{
    if (ptr)
        (void)cudaFreeHost(ptr);
}

// Proves the multiexps of one partition with two domain-sized device vectors, x and y:
//   x = a, y = b; both to the coset; x *= y          (quotient, first half)
//   y = c; to the coset; x = (x - y) / Z; x = h      (second half)
//   y = aux (its upload overlaps the H multiexp); H over x; L over y
// With the constraints on the device, x, y, z = A·w, B·w, C·w from the witness's slot; the
// next partition's witness (`next`, may be null) goes up into the other slot meanwhile.
//   x = the A query's scalars; A;  x = the B query's scalars; B in G1 and G2.
cuzk_status cuzk_gpu_prove(cuzk_gpu* g, const cuzk_partition* p, const cuzk_partition* next,
                           cuzk_msm_results* out, cuzk_step_ms* ms)
{
    std::lock_guard<std::mutex> lock(device_locks[g->index % 64]);
    cuzk_status refused;
    if (is_poisoned(g, &refused))
        return refused;
    using clock = std::chrono::steady_clock;
    const char* step = "preparing";
    cuzk_status st = guarded("proving", [&] {
        const gpu_t& gpu = g->gpu;
        gpu.select();
        auto t0 = clock::now();
        size_t n = (size_t)1 << p->lg_domain;
        size_t sms = gpu.sm_count();
        size_t a_len = p->input_len + p->a_aux_total;
        size_t b_len = p->b_input_total + p->b_aux_total;
        const auto& counts = g->counts;
        if (p->abc_len > n || a_len > n || b_len > n || counts.h + 1 < n ||
            counts.l != p->aux_len || counts.a != a_len || counts.b != b_len)
            throw sppark_error{cudaErrorInvalidValue,
                               std::string("the partition does not match the parameters")};
        const bool evaluate = p->evaluate != 0;
        // A compact witness is expanded into a slot, which only evaluation on the device uses.
        if (!evaluate && p->aux_ones)
            throw sppark_error{cudaErrorInvalidValue,
                               std::string("a compact witness needs the constraints on the GPU")};
        if (evaluate && g->matrix_rows != p->abc_len)
            throw sppark_error{cudaErrorInvalidValue,
                               std::string("the partition does not match the uploaded constraints")};

        step = "allocating working buffers";
        g->d_a.reserve(n);                                   // x
        g->d_b.reserve(n > p->aux_len ? n : p->aux_len);     // y
        // The slot holding this witness already, else one to upload it into.
        int slot = -1;
        if (evaluate) {
            g->d_c.reserve(n);                               // z
            for (int k = 0; k < 2; k++)
                if (p->witness_id != 0 && g->slot_id[k] == p->witness_id &&
                    g->slot_aux[k].len >= p->aux_len)
                    slot = k;
        }
        const bool is_staged = slot >= 0;
        if (evaluate && !is_staged) {
            slot = 0;
            g->slot_id[0] = 0;
            g->slot_aux[0].reserve(p->aux_len ? p->aux_len : 1);
        }
        g->d_inputs.reserve(p->input_len ? p->input_len : 1);
        size_t words_a = (p->aux_len + 63) / 64, words_bi = (p->input_len + 63) / 64;
        size_t words = 2 * words_a + words_bi;
        g->d_words.reserve(words ? words : 1);
        g->d_prefix.reserve(words ? words : 1);
        fr_t* x = g->d_a.ptr;
        fr_t* y = g->d_b.ptr;
        stream_t& s0 = gpu[0];

        auto upload_padded = [&](fr_t* dst, const fr_t* src) {
            g->stage.copy(dst, src, p->abc_len * sizeof(fr_t));
            if (p->abc_len < n)
                CUDA_OK(cudaMemsetAsync(dst + p->abc_len, 0,
                                        (n - p->abc_len) * sizeof(fr_t), s0));
        };
        // dst[k] = the k-th variable of `src` (of `nbits`) whose density bit is set.
        auto filter = [&](fr_t* dst, const fr_t* src, const uint64_t* words,
                          const uint32_t* prefix, size_t nwords, size_t nbits) {
            if (nwords == 0)
                return;
            filter_by_density<<<(nwords + 255) / 256, 256, 0, s0>>>(dst, src, words, prefix,
                                                                  nwords, nbits);
            CUDA_OK(cudaGetLastError());
        };
        auto to_coset = [&](fr_t* v) {
            NTT::Base_dev_ptr(s0, v, p->lg_domain, NTT::InputOutputOrder::NR,
                              NTT::Direction::inverse, NTT::Type::standard);
            NTT::Base_dev_ptr(s0, v, p->lg_domain, NTT::InputOutputOrder::RN,
                              NTT::Direction::forward, NTT::Type::coset);
        };

        step = "uploading the densities";
        uint64_t* w_a = g->d_words.ptr;
        uint64_t* w_bi = w_a + words_a;
        uint64_t* w_ba = w_bi + words_bi;
        uint32_t* pf_a = g->d_prefix.ptr;
        uint32_t* pf_bi = pf_a + words_a;
        uint32_t* pf_ba = pf_bi + words_bi;
        CUDA_OK(cudaMemcpyAsync(g->d_inputs.ptr, p->inputs, p->input_len * sizeof(fr_t),
                                cudaMemcpyHostToDevice, s0));
        CUDA_OK(cudaMemcpyAsync(w_a, p->a_aux_words, words_a * 8, cudaMemcpyHostToDevice, s0));
        CUDA_OK(cudaMemcpyAsync(w_bi, p->b_input_words, words_bi * 8, cudaMemcpyHostToDevice, s0));
        CUDA_OK(cudaMemcpyAsync(w_ba, p->b_aux_words, words_a * 8, cudaMemcpyHostToDevice, s0));
        CUDA_OK(cudaMemcpyAsync(pf_a, p->a_aux_prefix, words_a * 4, cudaMemcpyHostToDevice, s0));
        CUDA_OK(cudaMemcpyAsync(pf_bi, p->b_input_prefix, words_bi * 4, cudaMemcpyHostToDevice, s0));
        CUDA_OK(cudaMemcpyAsync(pf_ba, p->b_aux_prefix, words_a * 4, cudaMemcpyHostToDevice, s0));

        // h = coset_iNTT((coset_NTT(iNTT(a)) * coset_NTT(iNTT(b)) - coset_NTT(iNTT(c))) / Z)
        double upload_ms = 0, evaluate_ms = 0;
        auto timed_upload = [&](fr_t* dst, const fr_t* src) {
            auto u0 = clock::now();
            upload_padded(dst, src);
            upload_ms += ms_between(u0, clock::now());
        };
        const fr_t* aux_dev;    // the witness on the device, once there
        fr_t* z = evaluate ? g->d_c.ptr : y;
        if (evaluate) {
            step = "uploading the witness";
            auto u0 = clock::now();
            s0.sync();      // the inputs, on s0
            // A witness uploaded ahead costs this call nothing: its upload time stays 0.
            if (!is_staged) {
                upload_witness(g, g->slot_aux[slot].ptr, p);
                g->slot_id[slot] = p->witness_id;
                upload_ms += ms_between(u0, clock::now());
            }
            aux_dev = g->slot_aux[slot].ptr;
            step = "evaluating the constraints";
            auto e0 = clock::now();
            fr_t* outs[3] = {x, y, z};
            for (int k = 0; k < 3; k++) {
                evaluate_rows<<<sms * 8, 256, 0, s0>>>(outs[k], g->row_ptr[k].ptr,
                                                       g->entries[k].ptr, g->coeffs.ptr,
                                                       g->d_inputs.ptr, aux_dev, p->abc_len, n,
                                                       g->one_id, g->minus_one_id);
                CUDA_OK(cudaGetLastError());
            }
            s0.sync();
            evaluate_ms = ms_between(e0, clock::now());
            step = "computing the quotient";
            to_coset(x);
            to_coset(y);
            pointwise_mul<<<sms, 1024, 0, s0>>>(x, y, n);
            CUDA_OK(cudaGetLastError());
        } else {
            aux_dev = y;
            step = "uploading a and b";
            timed_upload(x, p->a);
            timed_upload(y, p->b);
            step = "computing the quotient";
            to_coset(x);
            to_coset(y);
            pointwise_mul<<<sms, 1024, 0, s0>>>(x, y, n);
            CUDA_OK(cudaGetLastError());
            step = "uploading c";
            s0.sync();      // the product above still reads y; the stager has its own stream
            timed_upload(z, p->c);
        }
        step = "computing the quotient";
        to_coset(z);
        sub_scale<<<sms, 1024, 0, s0>>>(x, z, z_inverse_on_coset(p->lg_domain), n);
        CUDA_OK(cudaGetLastError());
        NTT::Base_dev_ptr(s0, x, p->lg_domain, NTT::InputOutputOrder::NN,
                          NTT::Direction::inverse, NTT::Type::coset);
        s0.sync();
        auto t1 = clock::now();

        // The next partition's witness goes up into the other slot while the multiexps run,
        // where the device has room for a second slot; a failure only means it goes up at
        // its own call.
        std::thread prefetch;
        if (evaluate && next && next->evaluate && next->witness_id != 0 &&
            next->witness_id != p->witness_id && next->aux_len == p->aux_len) {
            int other = 1 - slot;
            size_t bytes = next->aux_len * sizeof(fr_t);
            size_t free_bytes = 0, total_bytes = 0;
            bool has_room = g->slot_aux[other].len >= next->aux_len ||
                (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess &&
                 free_bytes > bytes + ((size_t)2 << 30));
            if (has_room) {
                g->slot_id[other] = 0;
                prefetch = std::thread([g, next, other, &gpu] {
                    (void)cudaSetDevice(gpu.cid());
                    try {
                        g->slot_aux[other].reserve(next->aux_len ? next->aux_len : 1);
                        upload_witness(g, g->slot_aux[other].ptr, next);
                        g->slot_id[other] = next->witness_id;
                    } catch (...) {
                        g->slot_id[other] = 0;
                        (void)cudaGetLastError();   // not sticky: the next call uploads
                    }
                });
            }
        }
        struct joiner {
            std::thread& t;
            ~joiner() { if (t.joinable()) t.join(); }
        } join_prefetch{prefetch};

        // Without the constraints, the aux witness goes up into y while the H multiexp
        // reads x.
        step = "the H multiexp";
        cudaError_t aux_status = cudaSuccess;
        double aux_upload_ms = 0;
        std::thread aux_upload;
        if (!evaluate)
            aux_upload = std::thread([&] {
                auto u0 = clock::now();
                (void)cudaSetDevice(gpu.cid());
                try {
                    g->stage.copy(y, p->aux, p->aux_len * sizeof(fr_t));
                } catch (const cuda_error& e) {
                    aux_status = (cudaError_t)(e.code() < 0 ? -e.code() : e.code());
                } catch (...) {
                    aux_status = cudaErrorUnknown;
                }
                aux_upload_ms = ms_between(u0, clock::now());
            });
        try {
            run_msm<bucket_t>(gpu, out->h, g->resident[CUZK_H] ? g->h.ptr : nullptr, p->host_h,
                              x, n - 1);
        } catch (...) {
            if (aux_upload.joinable())
                aux_upload.join();
            throw;
        }
        if (aux_upload.joinable())
            aux_upload.join();
        CUDA_OK(aux_status);
        auto t2 = clock::now();

        // L, A and B go through the split multiexp: their scalars are mostly bits.
        step = "the L multiexp";
        {
            bit_split split{gpu, aux_dev, p->aux_len};
            run_query_msm<bucket_t>(gpu, split, out->l, g->resident[CUZK_L] ? g->l.ptr : nullptr,
                                    p->host_l, aux_dev);
        }
        auto t3 = clock::now();

        // A = [inputs, aux used in A], B = [inputs used in B, aux used in B], built in x.
        step = "filtering the A query";
        CUDA_OK(cudaMemcpyAsync(x, g->d_inputs.ptr, p->input_len * sizeof(fr_t),
                                cudaMemcpyDeviceToDevice, s0));
        filter(x + p->input_len, aux_dev, w_a, pf_a, words_a, p->aux_len);
        s0.sync();
        step = "the A multiexp";
        {
            bit_split split{gpu, x, a_len};
            run_query_msm<bucket_t>(gpu, split, out->a, g->resident[CUZK_A] ? g->a.ptr : nullptr,
                                    p->host_a, x);
        }
        auto t4 = clock::now();

        step = "filtering the B query";
        filter(x, g->d_inputs.ptr, w_bi, pf_bi, words_bi, p->input_len);
        filter(x + p->b_input_total, aux_dev, w_ba, pf_ba, words_a, p->aux_len);
        s0.sync();
        // One split of B's scalars serves both groups.
        step = "the B multiexp in G1";
        auto t5 = t4;
        {
            bit_split split{gpu, x, b_len};
            run_query_msm<bucket_t>(gpu, split, out->b_g1,
                                    g->resident[CUZK_B_G1] ? g->b_g1.ptr : nullptr,
                                    p->host_b_g1, x);
            t5 = clock::now();
            step = "the B multiexp in G2";
            run_query_msm<bucket_fp2_t>(gpu, split, out->b_g2,
                                        g->resident[CUZK_B_G2] ? g->b_g2.ptr : nullptr,
                                        p->host_b_g2, x);
        }
        gpu.sync();
        auto t6 = clock::now();

        ms->upload = upload_ms + aux_upload_ms;
        ms->evaluate = evaluate_ms;
        ms->quotient = ms_between(t0, t1) - upload_ms - evaluate_ms;
        ms->msm_h = ms_between(t1, t2);
        ms->msm_l = ms_between(t2, t3);
        ms->msm_a = ms_between(t3, t4);
        ms->msm_b_g1 = ms_between(t4, t5);
        ms->msm_b_g2 = ms_between(t5, t6);
        ms->total = ms_between(t0, t6);
    });
    if (st.code != 0) {
        char buf[sizeof(st.message)];
        std::snprintf(buf, sizeof(buf), "%s: %s", step, st.message);
        std::snprintf(st.message, sizeof(st.message), "%s", buf);
        note_failure(g, st);
    }
    return st;
}

}  // extern "C"
