// cuzk's Groth16 prover on one GPU, built on sppark's NTT and Pippenger multiexp.
//
// What runs here, per partition: a = A·w, b = B·w, c = C·w from the pre-compiled
// constraints when the GPU keeps them (else a, b, c come from the host), the quotient
// h = (a*b - c) / Z (iNTT, coset NTT, the pointwise step, coset iNTT), the density
// filtering of the A and B queries, and the five multiexps (H, L, A and B in G1, B in G2;
// the last four split into the scalars that are bits and the rest). The final combination
// with r and s is done by the Rust side (backend/cuda/prover.rs), which also checks every
// input before calling in.
//
// The file holds the handle and its entry points; beside it, included at their place:
// kernels.cuh (the device kernels), wide_msm.cuh (cuzk's multiexp at wide windows over
// device bases), split_msm.cuh (the multiexps and the bit split), beside_h.cuh (the
// queries' work beside H), coset_h.cuh (the H query in coset evaluation
// form, derived once per parameter file), batch_ones.cuh (a batch of partitions' ones'
// sums by pattern) and partition_proof.cuh (the steps of one proof).
//
// Safety rules of the host side, stated once:
// - Ownership. A `cuzk_gpu` owns every device buffer it uses: in each of its CUZK_SETS
//   slots, a parameter set's resident bases (allocated by cuzk_gpu_reserve_bases, kept
//   until the slot is reserved again, cuzk_gpu_release_set or cuzk_gpu_close) and its
//   circuit's pre-compiled constraints (cuzk_gpu_upload_matrices, released with the slot);
//   the Rust side decides which slot holds what. Then the per-partition working
//   buffers (allocated at the first partition of a domain size, grown only for a larger
//   one). Nothing else frees them. The multiexps' temporaries (sppark's, and the bit
//   split's `pool_buffer`s) come from the device's stream-ordered pool and go back to it
//   within the call. Host pointers passed in are borrowed for the call only.
// - Streams. Everything runs on sppark's streams of the handle's device. sppark's
//   multiexp keeps per-device work counters, so two proofs must never run on one device at
//   once: each device has one mutex, held for a whole upload or proof. Within a proof, a
//   helper thread may copy (and, when compact, expand) the next partition's witness on the
//   stager's own stream into the slot this proof does not use, and another runs the query
//   multiexps' work beside H on the handle's two streams for it (beside_h.cuh, which says
//   what it allocates and when); both are joined before the call returns.
// - Errors. No C++ exception crosses this boundary: every entry point catches all of them,
//   the device lock's too (on_device), and returns a cuzk_status (code 0 on success, else
//   a CUDA error code, negated as sppark throws it, or -1, with a message naming the step).
//   Host asserts are compiled out (NDEBUG); the Rust side validates lengths first. A
//   sticky CUDA error (illegal address, Xid 79/48, ECC) poisons the handle: the status says
//   `device_lost`, and later calls fail with the same reason instead of computing on a
//   broken context. No destructor here throws (a throwing destructor is std::terminate, the
//   whole process): they never sync through sppark's throwing calls, and sppark's msm_t,
//   whose destructor does, is destroyed only while the device is healthy (msm_owner).

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
#include <memory>
#include <type_traits>

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
#include <cub/device/device_scan.cuh>

extern "C" {

// The outcome of a call: code 0 on success. device_lost: a sticky error broke the device's
// context, so this handle fails every call from now on.
struct cuzk_status {
    int32_t code;
    int32_t device_lost;
    char message[500];
};

// Sizes of the five base vectors of a parameter set.
struct cuzk_base_counts {
    size_t h, l, a, b;
};

// Which base vector an upload fills.
enum cuzk_base_set { CUZK_H = 0, CUZK_L = 1, CUZK_A = 2, CUZK_B_G1 = 3, CUZK_B_G2 = 4 };

// Parameter sets one device keeps at once (a PoRep circuit's and an update circuit's where
// the card holds both, so a mixed workload uploads each once).
#define CUZK_SETS 4

// A circuit's pre-compiled constraints, borrowed for the upload: A and B (no C: set_slot_t)
// in compressed sparse rows (rows + 1 offsets; entries with the column in the low 31 bits,
// bit 31 set for an input, and the coefficient's id in the high 32), and the distinct
// coefficients.
struct cuzk_matrices {
    const uint64_t* row_ptr[2];
    const uint64_t* entries[2];
    size_t nnz[2];
    size_t rows;
    const fr_t* coeffs;
    size_t ncoeffs;
};

// One of a, b and c held compact in its own memory (host_abc/compact.rs): the rows cut in
// chunks of chunk_rows, each chunk's wide values (neither 0 nor 1) packed at its start; a
// bit per row for the ones and for the wide rows; per word of 64 rows the wide rows of its
// chunk before it; per chunk its wide rows. All null when the vector is whole.
struct cuzk_compact_abc {
    const uint64_t* ones;
    const uint64_t* wide;
    const uint32_t* wide_before;
    const uint32_t* chunk_wide;
    size_t chunk_rows;
};

// One synthesized partition, borrowed from the Rust side for the call.
struct cuzk_partition {
    const fr_t* a;              // abc_len evaluations each, Montgomery form; null when
    const fr_t* b;              //   `evaluate` is set
    const fr_t* c;
    size_t abc_len;
    cuzk_compact_abc abc_compact[3];    // a, b, c held compact, where they are
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
    size_t set_slot;            // the slot whose bases (and constraints) serve it
    // Its place in a batch whose ones are summed together (cuzk_gpu_batch_ones), 0 for the
    // batch's first call; -1: none, its multiexps sum their own.
    int32_t batch_position;
};

// The five multiexps, as Jacobian points in Montgomery form (blst's layout).
struct cuzk_msm_results {
    point_t h, l, a, b_g1;
    point_fp2_t b_g2;
    // The multiexps whose ones' sums were left to the batch (CUZK_LEFT_OUT_L and so on).
    uint32_t left_out;
};

enum { CUZK_LEFT_OUT_L = 1, CUZK_LEFT_OUT_A = 2, CUZK_LEFT_OUT_B_G1 = 4, CUZK_LEFT_OUT_B_G2 = 8 };

// Milliseconds per step of one proof.
struct cuzk_step_ms {
    double upload, evaluate, quotient, msm_h, msm_l, msm_a, msm_b_g1, msm_b_g2, total;
    // Not a time: the bytes this partition sent from the host to the device (its a, b, c or
    // witness, inputs and densities, and the bases of every multiexp over host bases),
    // its witness's too when the previous call uploaded it ahead.
    uint64_t host_to_device_bytes;
    // The query multiexps' work beside H (beside_h.cuh): its wall time, within msm_h.
    double beside_h;
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
    st->device_lost = 0;
    std::snprintf(st->message, sizeof(st->message), fmt_str, what);
}

cuzk_status ok()
{
    cuzk_status st;
    st.code = 0;
    st.device_lost = 0;
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

#include "kernels.cuh"

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

// Two events the chunks of streamed bases pass between a copy stream and a work stream,
// one per buffer (beside_h.cuh, wide_msm.cuh).
struct event_pair {
    cudaEvent_t at[2] = {nullptr, nullptr};
    event_pair()
    {
        for (auto& e : at)
            CUDA_OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
    event_pair(const event_pair&) = delete;
    event_pair& operator=(const event_pair&) = delete;
    ~event_pair()
    {
        for (auto& e : at)
            if (e)
                (void)cudaEventDestroy(e);
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

fr_t half()
{
    return (fr_t::one() + fr_t::one()).reciprocal();
}

// sppark's in-place bit reversal, protected in its NTT class.
struct ntt_steps : NTT {
    using NTT::bit_rev;
};

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
// runs at the bus's speed rather than at one thread's memcpy. Pinned memory (a prover's
// sets for a, b and c) is copied directly. Its own stream keeps the
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

    // True when `src` is pinned host memory (cudaHostAlloc'd or registered): the copy
    // engine reads it directly.
    static bool is_pinned(const void* src)
    {
        cudaPointerAttributes attributes;
        if (cudaPointerGetAttributes(&attributes, src) != cudaSuccess) {
            (void)cudaGetLastError();   // pageable memory is not an error here
            return false;
        }
        return attributes.type == cudaMemoryTypeHost;
    }

    void copy(void* dst, const void* src, size_t bytes)
    {
        if (bytes == 0)
            return;
        if (is_pinned(src)) {
            // a, b and c that the host evaluated into a prover's pinned set: no staging.
            CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
            CUDA_OK(cudaStreamSynchronize(stream));
            return;
        }
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

// One parameter set on a device: its resident bases (the others stream from the host) and,
// when the GPU evaluates its circuit, the pre-compiled constraints.
struct set_slot_t {
    cuzk_base_counts counts{};
    device_vec<affine_t> h, l, a, b_g1;
    device_vec<affine_fp2_t> b_g2;
    bool resident[5] = {false, false, false, false, false};

    // The pre-compiled constraints, when the GPU evaluates them: A's and B's only (C·w is
    // A·w ∘ B·w, partition_proof::evaluate_constraints).
    device_vec<uint64_t> row_ptr[2], entries[2];
    device_vec<fr_t> coeffs;
    size_t matrix_rows = 0;
    uint32_t one_id = UINT32_MAX, minus_one_id = UINT32_MAX;

    void release_bases()
    {
        h.release(); l.release(); a.release(); b_g1.release(); b_g2.release();
        for (int i = 0; i < 5; i++)
            resident[i] = false;
        counts = cuzk_base_counts{};
    }

    void release_matrices()
    {
        matrix_rows = 0;
        coeffs.release();
        for (int k = 0; k < 2; k++) {
            row_ptr[k].release();
            entries[k].release();
        }
    }
};

// A stream of the current device at its highest priority: the query multiexps' work beside
// H (beside_h.cuh) gets the SMs first whenever H's kernels leave some.
struct priority_stream {
    cudaStream_t stream = nullptr;

    priority_stream()
    {
        int least = 0, greatest = 0;
        CUDA_OK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        CUDA_OK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest));
    }
    priority_stream(const priority_stream&) = delete;
    priority_stream& operator=(const priority_stream&) = delete;
    ~priority_stream() { if (stream) (void)cudaStreamDestroy(stream); }

    operator cudaStream_t() const { return stream; }
    void sync() const { CUDA_OK(cudaStreamSynchronize(stream)); }

    template<class T>
    void DtoH(T* dst, const void* src, size_t count) const
    {
        CUDA_OK(cudaMemcpyAsync(dst, src, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
    }

    template<typename... Types>
    void launch_coop(void (*kernel)(Types...), dim3 grid, dim3 block, Types... args) const
    {
        void* pointers[sizeof...(args)] = {&args...};
        CUDA_OK(cudaLaunchCooperativeKernel((const void*)kernel, grid, block, pointers, 0,
                                            stream));
    }
};

// The query multiexps of a partition done ahead, in the call before its own, over the pass
// that call shared with it (beside_h.cuh): kept on the handle until the next call, which
// takes them if they are its partition's and drops them otherwise.
struct ahead_t {
    uint64_t witness_id = 0;    // whose (0: none)
    size_t set_slot = 0;
    bool has_l = false, has_a = false, has_b_g1 = false, has_b_g2 = false;
    point_t l, a, b_g1;
    point_fp2_t b_g2;
    uint64_t sent_bytes = 0;    // its share of the shared pass's bytes, for its timeline

    ahead_t()
    {
        l.inf();
        a.inf();
        b_g1.inf();
        b_g2.inf();
    }
    bool any() const { return has_l || has_a || has_b_g1 || has_b_g2; }
    void clear()
    {
        witness_id = 0;
        has_l = has_a = has_b_g1 = has_b_g2 = false;
        sent_bytes = 0;
    }
};

// The ones a batch's calls left out of their multiexps (cuzk_partition.batch_position):
// each position's bit maps of the L, A and B queries (B's serves G1 and G2), kept on the
// handle until the batch's pattern pass sums them (cuzk_gpu_batch_ones, batch_ones.cuh),
// or the next batch's first call drops them.
struct batch_kept_t {
    static constexpr int POSITIONS = 16;
    enum query { L = 0, A = 1, B = 2, QUERIES = 3 };
    pool_buffer<uint32_t> ones[POSITIONS][QUERIES];
    size_t terms[POSITIONS][QUERIES] = {};

    void clear()
    {
        for (auto& position : ones)
            for (auto& map : position)
                map.release();
        for (auto& position : terms)
            for (auto& n : position)
                n = 0;
    }
};

struct cuzk_gpu {
    const gpu_t& gpu;
    int index;
    std::string sticky;     // the first unrecoverable error, if any

    set_slot_t sets[CUZK_SETS];

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
    // --gpu-memory: the most this handle takes beyond what was in use when it opened (0: the
    // card). The plan on the host fits the sets and one partition's working set in it; what
    // the device decides alone (the second witness slot, the memory pool) is held to it here.
    size_t limit_bytes = 0;
    size_t used_at_open = 0;
    // The streams of the query multiexps beside H (beside_h.cuh), made at first use.
    std::unique_ptr<priority_stream> beside_streams[2];
    // The next partition's query multiexps, done by the last call over a shared pass.
    ahead_t ahead;
    // The ones this batch's calls left to its pattern pass.
    batch_kept_t kept;

    cuzk_gpu(const gpu_t& g, int i) : gpu(g), index(i) {}

    priority_stream& beside_stream(int k)
    {
        if (!beside_streams[k])
            beside_streams[k].reset(new priority_stream());
        return *beside_streams[k];
    }

    // Whether `bytes` more fit on the device, with `margin` to spare, and within the limit.
    bool has_room_for(size_t bytes, size_t margin) const
    {
        size_t free_bytes = 0, total_bytes = 0;
        if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess)
            return false;
        if (free_bytes <= bytes + margin)
            return false;
        size_t used = total_bytes - free_bytes;
        size_t ours = used > used_at_open ? used - used_at_open : 0;
        return limit_bytes == 0 || ours + bytes + margin <= limit_bytes;
    }

    // Never throws: after a sticky error every sync fails, and a throwing destructor would
    // end the process.
    ~cuzk_gpu()
    {
        gpu.select();
        (void)cudaDeviceSynchronize();
        for (auto& set : sets) {
            set.release_bases();
            set.release_matrices();
        }
        d_a.release(); d_b.release(); d_inputs.release();
        d_c.release(); slot_aux[0].release(); slot_aux[1].release();
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

// q's witness into the handle's slot `slot`, for a call after this one; false, the slot
// emptied and the error cleared, where that fails: its own call uploads it then.
bool upload_into_slot(cuzk_gpu* g, const cuzk_partition* q, int slot)
{
    try {
        g->slot_aux[slot].reserve(q->aux_len ? q->aux_len : 1);
        upload_witness(g, g->slot_aux[slot].ptr, q);
        g->slot_id[slot] = q->witness_id;
        return true;
    } catch (...) {
        g->slot_id[slot] = 0;
        (void)cudaGetLastError();   // not sticky
        (void)cudaStreamSynchronize(g->stage.stream);
        return false;
    }
}

// After a failure, is the context still usable? Sticky errors (illegal address, launch
// failure) are not; out of memory and bad arguments are. A sticky one poisons the handle
// and marks `st` as the device lost.
void note_failure(cuzk_gpu* g, cuzk_status* st)
{
    if (st->code == 0)
        return;
    (void)cudaGetLastError();   // clears a non-sticky error; a sticky one stays
    cudaError_t sync = cudaDeviceSynchronize();
    if (sync != cudaSuccess && g->sticky.empty())
        g->sticky = st->message;
    if (!g->sticky.empty())
        st->device_lost = 1;
}

// True, with the reason in `st`, once a sticky error made the handle unusable.
bool is_poisoned(const cuzk_gpu* g, cuzk_status* st)
{
    if (g->sticky.empty())
        return false;
    set_status(st, -1, "the GPU failed earlier: %s", g->sticky.c_str());
    st->device_lost = 1;
    return true;
}

// Runs `body` on `g` under its device's lock: refused on a poisoned handle, every exception
// (the lock's included) turned into a status naming `step`, a sticky error noted. `detail`,
// when set, names the step inside `body` that failed, put before the message.
template<class F>
cuzk_status on_device(cuzk_gpu* g, const char* step, F body, const char* const* detail = nullptr)
{
    cuzk_status st = ok();
    try {
        std::lock_guard<std::mutex> lock(device_locks[g->index % 64]);
        if (is_poisoned(g, &st))
            return st;
        st = guarded(step, body);
        if (st.code != 0 && detail && *detail) {
            char buf[sizeof(st.message)];
            std::snprintf(buf, sizeof(buf), "%s: %s", *detail, st.message);
            std::snprintf(st.message, sizeof(st.message), "%s", buf);
        }
        note_failure(g, &st);
    } catch (...) {
        set_status(&st, -1, "%s: the device lock failed", step);
    }
    return st;
}

// Slot `slot` of `g`, or a bad-argument error naming it.
set_slot_t& set_at(cuzk_gpu* g, size_t slot)
{
    if (slot >= CUZK_SETS)
        throw sppark_error{cudaErrorInvalidValue, std::string("no such parameter set slot")};
    return g->sets[slot];
}

// The code of a cuda_error as cudaError_t: sppark throws them negated.
cudaError_t error_of(const cuda_error& e)
{
    int code = e.code();
    return (cudaError_t)(code < 0 ? -code : code);
}

// A fault injected by a test on a GPU machine (CUZK_TEST_GPU_FAULT), since a real one
// cannot be had on demand: `sticky` makes the L multiexp write through a null pointer (an
// illegal address: the context is lost; `sticky@N` on GPU N only), `hang` makes it wait for
// a kernel that never ends, `beside-oom` leaves the queries' work beside H undone (to the
// steps after H, as `split-oom` and `tail-oom` do too; `small-chunks` streams its bases in
// 1 MB chunks), `split-oom` and `tail-oom` make the bit split's tail and its
// gathered bases fail to allocate as out of memory, `matrices-oom` the pre-compiled
// constraints' upload. Read once; production runs never set it.
bool injects(const char* fault, int device = -1)
{
    static const char* spec = std::getenv("CUZK_TEST_GPU_FAULT");
    const char* at = spec ? std::strstr(spec, fault) : nullptr;
    if (!at)
        return false;
    at += std::strlen(fault);
    return *at != '@' || device < 0 || std::atoi(at + 1) == device;
}

#include "xyzz_add.cuh"
#include "wide_msm.cuh"
#include "split_msm.cuh"
#include "beside_h.cuh"
#include "coset_h.cuh"
#include "batch_ones.cuh"
#include "quotient.cuh"
#include "ceiling.cuh"

// Runs `body` (which allocates from `gpu`'s stream-ordered pool), then gives what the pool
// keeps back to the driver, whether `body` ends or throws (after its work is done).
template<class F>
void trimming_pool(const gpu_t& gpu, F body)
{
    auto trim = [&] {
        cudaMemPool_t pool;
        if (cudaDeviceGetDefaultMemPool(&pool, gpu.cid()) == cudaSuccess)
            (void)cudaMemPoolTrimTo(pool, 0);
    };
    try {
        body();
    } catch (...) {
        (void)cudaStreamSynchronize(gpu[0]);
        trim();
        throw;
    }
    trim();
}

// Pinned host memory for the bench's streamed bases, freed when it goes.
struct pinned_bytes {
    char* ptr = nullptr;
    explicit pinned_bytes(size_t bytes)
    {
        CUDA_OK(cudaHostAlloc((void**)&ptr, std::max<size_t>(bytes, 1), cudaHostAllocPortable));
    }
    pinned_bytes(const pinned_bytes&) = delete;
    pinned_bytes& operator=(const pinned_bytes&) = delete;
    ~pinned_bytes() { if (ptr) (void)cudaFreeHost(ptr); }
};

// The benches' bases on the device: the `given` host ones, repeated up to n.
template<class affine>
void upload_repeated(affine* device, const affine* host, size_t given, size_t n, stream_t& s)
{
    CUDA_OK(cudaMemcpyAsync(device, host, given * sizeof(affine), cudaMemcpyHostToDevice, s));
    for (size_t have = given; have < n; have *= 2)
        CUDA_OK(cudaMemcpyAsync(device + have, device, std::min(have, n - have) * sizeof(affine),
                                cudaMemcpyDeviceToDevice, s));
}

// The multiexp bench (cuzk_gpu_msm_bench, _g2): both multiexps on the same inputs, the
// bases on the device, or with `streamed_chunk` in pinned host memory (the wide multiexp's
// chunks at most that many bases).
template<class bucket, class point, class affine>
cuzk_status msm_bench_on(cuzk_gpu* g, const affine* bases, size_t nbases, const fr_t* scalars,
                         size_t n, uint32_t rounds, size_t streamed_chunk, point* results,
                         double* ms)
{
    return on_device(g, "timing the multiexps", [&] {
        using clock = std::chrono::steady_clock;
        g->gpu.select();
        if (nbases == 0 || n == 0)
            throw sppark_error{cudaErrorInvalidValue, std::string("nothing to multiply")};
        stream_t& s = g->gpu[0];
        const size_t given = std::min(nbases, n);
        // Streamed: the bases repeated up to n in pinned host memory (13 GB at 2^27 in G1).
        std::unique_ptr<pinned_bytes> host;
        if (streamed_chunk) {
            host.reset(new pinned_bytes{n * sizeof(affine)});
            std::memcpy(host->ptr, bases, given * sizeof(affine));
            for (size_t have = given; have < n; have *= 2)
                std::memcpy(host->ptr + have * sizeof(affine), host->ptr,
                            std::min(have, n - have) * sizeof(affine));
        }
        // The bases and scalars (17 GB at 2^27 in G1) go back to the driver after the call.
        trimming_pool(g->gpu, [&] {
            pool_buffer<affine> d_bases{streamed_chunk ? 0 : n, s};
            pool_buffer<fr_t> d_scalars{n, s};
            if (!streamed_chunk)
                upload_repeated(d_bases.ptr, bases, given, n, s);
            CUDA_OK(cudaMemcpyAsync(d_scalars.ptr, scalars, n * sizeof(fr_t),
                                    cudaMemcpyHostToDevice, s));
            s.sync();
            const affine* host_bases = host ? (const affine*)host->ptr : nullptr;
            // The wide multiexp within the memory a proof's plan gives it, as it runs there.
            const size_t held = wide_msm_bytes<bucket, affine>(g->gpu, n, host_bases != nullptr);
            for (int engine = 0; engine < 2; engine++) {
                double best = 1e300;
                for (uint32_t r = 0; r < std::max(rounds, 1u); r++) {
                    auto t0 = clock::now();
                    if (engine == 0)
                        run_msm<bucket>(g->gpu, results[0], d_bases.ptr, host_bases,
                                        d_scalars.ptr, n, false);
                    else if (host_bases)
                        wide_msm::multiexp_streamed<bucket>(g->gpu, results[1], host_bases,
                                                            d_scalars.ptr, n, held,
                                                            streamed_chunk);
                    else
                        wide_msm::multiexp<bucket>(g->gpu, results[1],
                                                   reinterpret_cast<const typename affine::mem_t*>(d_bases.ptr),
                                                   d_scalars.ptr, n, held);
                    g->gpu.sync();
                    double took = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
                    best = std::min(best, took);
                }
                ms[engine] = best;
            }
        });
    });
}

// The ones bench (cuzk_gpu_ones_bench, _g2): k partitions' sums of the bases where their
// bit is set, each partition by batch addition (results[0 .. k), as bit_split sums a
// query's ones today) and the whole batch by pattern (results[k .. 2k), batch_ones.cuh),
// over the same n bases on the device (`bases` repeated up to n) and the same bit maps
// (`ones`: partition j's `stride` words at ones + j stride, host memory). ms: the best
// of `rounds` for all k partitions, each way.
template<class bucket, class point, class affine>
cuzk_status ones_bench_on(cuzk_gpu* g, const affine* bases, size_t nbases, const uint32_t* ones,
                          size_t stride, size_t n, uint32_t k, uint32_t rounds, point* results,
                          double* ms)
{
    return on_device(g, "timing the ones' sums", [&] {
        using clock = std::chrono::steady_clock;
        using affine_h = typename affine::mem_t;
        g->gpu.select();
        // Batch addition reads its bit map in rows of 1024 terms.
        if (nbases == 0 || n == 0 || k == 0 || k > (uint32_t)batch_ones::MOST ||
            stride < (n + 1023) / 1024 * 32)
            throw sppark_error{cudaErrorInvalidValue, std::string("no ones to sum")};
        stream_t& s = g->gpu[0];
        const size_t given = std::min(nbases, n);
        trimming_pool(g->gpu, [&] {
            pool_buffer<affine> d_bases{n, s};
            pool_buffer<uint32_t> d_ones{(size_t)k * stride, s};
            upload_repeated(d_bases.ptr, bases, given, n, s);
            CUDA_OK(cudaMemcpyAsync(d_ones.ptr, ones, (size_t)k * stride * sizeof(uint32_t),
                                    cudaMemcpyHostToDevice, s));
            s.sync();
            const affine_h* device_bases = reinterpret_cast<const affine_h*>(d_bases.ptr);
            std::vector<bucket> sums(k);
            for (int way = 0; way < 2; way++) {
                double best = 1e300;
                for (uint32_t r = 0; r < std::max(rounds, 1u); r++) {
                    auto t0 = clock::now();
                    if (way == 0) {
                        for (uint32_t j = 0; j < k; j++)
                            sums[j] = sum_ones<bucket>(g->gpu, device_bases, n,
                                                       d_ones.ptr + (size_t)j * stride);
                    } else {
                        std::vector<const uint32_t*> maps(k);
                        for (uint32_t j = 0; j < k; j++)
                            maps[j] = d_ones.ptr + (size_t)j * stride;
                        batch_ones::pattern_sort sorted{g->gpu, maps.data(), (int)k, n};
                        sorted.sums<bucket>(sums.data(), device_bases);
                    }
                    g->gpu.sync();
                    double took = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
                    best = std::min(best, took);
                }
                ms[way] = best;
                for (uint32_t j = 0; j < k; j++)
                    results[way * k + j] = sums[j];
            }
        });
    });
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
        // does not go back to the driver for memory (under a limit, it is trimmed after
        // each proof instead; see cuzk_gpu_set_limit).
        cudaMemPool_t pool;
        CUDA_OK(cudaDeviceGetDefaultMemPool(&pool, gpu.cid()));
        uint64_t keep = UINT64_MAX;
        CUDA_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
        auto* g = new cuzk_gpu(gpu, (int)index);
        g->used_at_open = *total_bytes - *free_bytes;
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

// Holds what the handle takes on the device to `bytes` (see cuzk_gpu::limit_bytes).
cuzk_status cuzk_gpu_set_limit(cuzk_gpu* g, size_t bytes)
{
    return guarded("limiting the GPU's memory", [&] { g->limit_bytes = bytes; });
}

cuzk_status cuzk_gpu_free_memory(cuzk_gpu* g, size_t* free_bytes, size_t* total_bytes)
{
    return guarded("querying free memory", [&] {
        g->gpu.select();
        CUDA_OK(cudaMemGetInfo(free_bytes, total_bytes));
    });
}

// Allocates, in slot `slot`, the resident base vectors named in `resident` (bit i for
// cuzk_base_set i), freeing whatever the slot held (its constraints too); the others will
// be streamed from host memory at each proof.
cuzk_status cuzk_gpu_reserve_bases(cuzk_gpu* g, size_t slot, const cuzk_base_counts* counts,
                                   uint32_t resident)
{
    return on_device(g, "allocating resident bases", [&] {
        g->gpu.select();
        set_slot_t& set = set_at(g, slot);
        set.release_bases();
        set.release_matrices();
        set.counts = *counts;
        for (int i = 0; i < 5; i++)
            set.resident[i] = (resident >> i) & 1;
        if (set.resident[CUZK_H])    set.h.reserve(counts->h);
        if (set.resident[CUZK_L])    set.l.reserve(counts->l);
        if (set.resident[CUZK_A])    set.a.reserve(counts->a);
        if (set.resident[CUZK_B_G1]) set.b_g1.reserve(counts->b);
        if (set.resident[CUZK_B_G2]) set.b_g2.reserve(counts->b);
    });
}

// Frees slot `slot`: its bases and constraints go back to the device.
cuzk_status cuzk_gpu_release_set(cuzk_gpu* g, size_t slot)
{
    return on_device(g, "releasing a parameter set", [&] {
        g->gpu.select();
        set_slot_t& set = set_at(g, slot);
        set.release_bases();
        set.release_matrices();
    });
}

// Copies `count` points (Montgomery affine, blst's layout) from host memory (ideally
// pinned) into the resident vector `which` of slot `slot`, starting at point `first`.
cuzk_status cuzk_gpu_upload_bases(cuzk_gpu* g, size_t slot, uint32_t which, size_t first,
                                  const void* points, size_t count)
{
    return on_device(g, "uploading bases", [&] {
        g->gpu.select();
        set_slot_t& set = set_at(g, slot);
        void* dst = nullptr;
        size_t cap = 0, size = sizeof(affine_t);
        switch (which) {
            case CUZK_H:    dst = set.h.ptr;    cap = set.h.len;    break;
            case CUZK_L:    dst = set.l.ptr;    cap = set.l.len;    break;
            case CUZK_A:    dst = set.a.ptr;    cap = set.a.len;    break;
            case CUZK_B_G1: dst = set.b_g1.ptr; cap = set.b_g1.len; break;
            case CUZK_B_G2: dst = set.b_g2.ptr; cap = set.b_g2.len; size = sizeof(affine_fp2_t); break;
            default: throw sppark_error{cudaErrorInvalidValue, std::string("unknown base set")};
        }
        if (!dst || first + count > cap)
            throw sppark_error{cudaErrorInvalidValue, std::string("bases out of range")};
        CUDA_OK(cudaMemcpy((char*)dst + first * size, points, count * size,
                           cudaMemcpyHostToDevice));
    });
}

// Uploads a circuit's pre-compiled constraints into slot `slot`, beside its bases,
// replacing any before there; `one_id` and `minus_one_id` name the coefficients one and
// minus one (UINT32_MAX when absent). A and B only: the proof needs no C (set_slot_t).
cuzk_status cuzk_gpu_upload_matrices(cuzk_gpu* g, size_t slot, const cuzk_matrices* m,
                                     uint32_t one_id, uint32_t minus_one_id)
{
    return on_device(g, "uploading the pre-compiled constraints", [&] {
        g->gpu.select();
        set_slot_t& set = set_at(g, slot);
        set.release_matrices();
        if (injects("matrices-oom"))
            throw cuda_error{-cudaErrorMemoryAllocation,
                             std::string("injected: no memory for the constraints")};
        set.coeffs.reserve(m->ncoeffs ? m->ncoeffs : 1);
        g->stage.copy(set.coeffs.ptr, m->coeffs, m->ncoeffs * sizeof(fr_t));
        for (int k = 0; k < 2; k++) {
            set.row_ptr[k].reserve(m->rows + 1);
            set.entries[k].reserve(m->nnz[k] ? m->nnz[k] : 1);
            g->stage.copy(set.row_ptr[k].ptr, m->row_ptr[k], (m->rows + 1) * sizeof(uint64_t));
            g->stage.copy(set.entries[k].ptr, m->entries[k], m->nnz[k] * sizeof(uint64_t));
        }
        set.one_id = one_id;
        set.minus_one_id = minus_one_id;
        set.matrix_rows = m->rows;
    });
}

// Derives the H query in coset evaluation form (coset_h.cuh) from `h`, the file's m - 1
// points (affine, Montgomery, host memory), into `out`, m Jacobian points in blst's layout
// (host memory); `scalars` = {g^-1, 1/m, ω^-1} in Montgomery form. Its device memory (192
// bytes a point) goes back to the driver before it returns.
cuzk_status cuzk_gpu_derive_coset_h(cuzk_gpu* g, const affine_t* h, size_t m,
                                    const fr_t* scalars, void* out)
{
    return on_device(g, "deriving the coset H query", [&] {
        g->gpu.select();
        // The pool keeps what it is given back: its 192 bytes a point go back to the
        // driver whether the derivation ends or fails.
        trimming_pool(g->gpu, [&] {
            derive_coset_h(g->gpu, h, m, scalars, (jacobian_coords*)out);
            g->gpu.sync();
        });
    });
}

// H's multiexp both ways on the same inputs, for examples/msm_bench: `bases` (nbases affine
// points, host memory) repeated up to n on the device (`streamed_chunk` 0), or in pinned
// host memory, streamed at each multiexp (the wide multiexp's chunks at most
// `streamed_chunk` bases), `scalars` (n, Montgomery, host memory). Each runs `rounds`
// times; ms[0] and out[0] are sppark's Pippenger's best wall time and result, ms[1] and
// out[1] the wide multiexp's (Jacobian points, blst's layout).
cuzk_status cuzk_gpu_msm_bench(cuzk_gpu* g, const affine_t* bases, size_t nbases,
                               const fr_t* scalars, size_t n, uint32_t rounds,
                               size_t streamed_chunk, void* out, double* ms)
{
    return msm_bench_on<bucket_t>(g, bases, nbases, scalars, n, rounds, streamed_chunk,
                                  static_cast<point_t*>(out), ms);
}

// The same in G2.
cuzk_status cuzk_gpu_msm_bench_g2(cuzk_gpu* g, const affine_fp2_t* bases, size_t nbases,
                                  const fr_t* scalars, size_t n, uint32_t rounds,
                                  size_t streamed_chunk, void* out, double* ms)
{
    return msm_bench_on<bucket_fp2_t>(g, bases, nbases, scalars, n, rounds, streamed_chunk,
                                      static_cast<point_fp2_t*>(out), ms);
}

// The arithmetic's ceiling (ceiling.cuh): ops[i] operations in ms[i] milliseconds, i <
// CEILING_RATES (8): Fr multiplications, Fp multiplications and G1 bucket additions over
// `bases` (at least 32), then where lg_ntt is set sppark's three transforms of that size
// and the two ways to the coset, sppark's and the quotient's (compared).
cuzk_status cuzk_gpu_ceiling_bench(cuzk_gpu* g, const affine_t* bases, size_t nbases,
                                   uint32_t rounds, uint32_t lg_ntt, double* ops, double* ms)
{
    return on_device(g, "timing the arithmetic's ceiling", [&] {
        g->gpu.select();
        trimming_pool(g->gpu, [&] {
            ceiling_rates<bucket_t>(g->gpu, reinterpret_cast<const affine_t::mem_t*>(bases),
                                    nbases, rounds, lg_ntt, ops, ms);
        });
    });
}

// The ones' sums of k partitions, each and by pattern (ones_bench_on), in G1.
cuzk_status cuzk_gpu_ones_bench(cuzk_gpu* g, const affine_t* bases, size_t nbases,
                                const uint32_t* ones, size_t stride, size_t n, uint32_t k,
                                uint32_t rounds, void* out, double* ms)
{
    return ones_bench_on<bucket_t>(g, bases, nbases, ones, stride, n, k, rounds,
                                   static_cast<point_t*>(out), ms);
}

// The same in G2.
cuzk_status cuzk_gpu_ones_bench_g2(cuzk_gpu* g, const affine_fp2_t* bases, size_t nbases,
                                   const uint32_t* ones, size_t stride, size_t n, uint32_t k,
                                   uint32_t rounds, void* out, double* ms)
{
    return ones_bench_on<bucket_fp2_t>(g, bases, nbases, ones, stride, n, k, rounds,
                                       static_cast<point_fp2_t*>(out), ms);
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

}  // extern "C"

namespace {

#include "partition_proof.cuh"

}  // namespace

extern "C" {

// Proves the multiexps of one partition (see partition_proof for the steps); the next
// partition's witness (`next`, may be null) goes up into the other slot meanwhile.
cuzk_status cuzk_gpu_prove(cuzk_gpu* g, const cuzk_partition* p, const cuzk_partition* next,
                           cuzk_msm_results* out, cuzk_step_ms* ms)
{
    using clock = std::chrono::steady_clock;
    const char* step = "preparing";
    return on_device(g, "proving", [&] {
        g->gpu.select();
        auto t0 = clock::now();
        out->left_out = 0;
        partition_proof proof{g, p, step};
        proof.check();
        proof.begin_batch();
        proof.take_ahead();
        proof.allocate();
        proof.upload_densities();
        proof.quotient();
        auto t1 = clock::now();
        proof.upload_aux();
        beside_h side{g, g->beside_stream(0), g->beside_stream(1)};
        proof.prepare_beside(side, next);
        std::thread prefetch = proof.upload_next_witness(next);
        joiner join_prefetch{prefetch};
        std::thread beside = side.start();
        joiner join_beside{beside};
        proof.multiexp_h(out->h);
        if (beside.joinable())
            beside.join();
        side.check_after_join();
        proof.keep_next(side, next);
        auto t2 = clock::now();
        proof.multiexp_l(out->l, side);
        auto t3 = clock::now();
        proof.multiexp_a(out->a, side);
        auto t4 = clock::now();
        auto t5 = proof.multiexp_b(out->b_g1, out->b_g2, side);
        g->gpu.sync();
        auto t6 = clock::now();

        ms->upload = proof.upload_ms + proof.aux_upload_ms;
        ms->evaluate = proof.evaluate_ms;
        ms->quotient = ms_between(t0, t1) - proof.upload_ms - proof.evaluate_ms;
        ms->msm_h = ms_between(t1, t2) - proof.aux_upload_ms;
        ms->msm_l = ms_between(t2, t3);
        ms->msm_a = ms_between(t3, t4);
        ms->msm_b_g1 = ms_between(t4, t5);
        ms->msm_b_g2 = ms_between(t5, t6);
        ms->total = ms_between(t0, t6);
        ms->host_to_device_bytes = proof.sent_bytes;
        ms->beside_h = side.ms;
        out->left_out = proof.left_out;
        // Under a limit, the multiexps' temporaries go back to the driver between
        // partitions rather than staying in the pool beside the limit; a failure to trim
        // only leaves them there.
        cudaMemPool_t pool;
        if (g->limit_bytes && cudaDeviceGetDefaultMemPool(&pool, g->gpu.cid()) == cudaSuccess)
            (void)cudaMemPoolTrimTo(pool, 0);
    }, &step);
}

// The ones' sums a batch's calls left out (cuzk_partition.batch_position), by pattern
// (batch_ones.cuh): for each of the `count` positions listed, out[i] gets the L, A, B G1 and
// B G2 sums of its ones that its call left out (left_out says which; the identity
// elsewhere, and in h), over the bases of set slot `set_slot`. ms: milliseconds of the
// pass per query (L, A, B in G1, B in G2), for the whole batch. Every position's kept ones
// go, whether or not it is listed; a position that kept none gets identities.
cuzk_status cuzk_gpu_batch_ones(cuzk_gpu* g, size_t set_slot, const uint32_t* positions,
                                size_t count, cuzk_msm_results* out, double* ms)
{
    using clock = std::chrono::steady_clock;
    const char* step = "summing the batch's ones";
    return on_device(g, "proving", [&] {
        g->gpu.select();
        for (int q = 0; q < 4; q++)
            ms[q] = 0;
        for (size_t i = 0; i < count; i++) {
            out[i].h.inf();
            out[i].l.inf();
            out[i].a.inf();
            out[i].b_g1.inf();
            out[i].b_g2.inf();
            out[i].left_out = 0;
        }
        const set_slot_t& set = set_at(g, set_slot);
        batch_kept_t& kept = g->kept;
        for (int q = 0; q < batch_kept_t::QUERIES; q++) {
            // The listed positions that kept this query's ones, in passes of at most
            // batch_ones::MOST over the same terms (a batch's partitions share them).
            std::vector<size_t> left;
            for (size_t i = 0; i < count; i++)
                if (positions[i] < (uint32_t)batch_kept_t::POSITIONS &&
                    kept.ones[positions[i]][q].ptr)
                    left.push_back(i);
            while (!left.empty()) {
                const size_t terms = kept.terms[positions[left[0]]][q];
                std::vector<size_t> pass, rest;
                for (size_t i : left)
                    (kept.terms[positions[i]][q] == terms && pass.size() < batch_ones::MOST
                         ? pass : rest).push_back(i);
                left.swap(rest);
                std::vector<const uint32_t*> maps;
                for (size_t i : pass)
                    maps.push_back(kept.ones[positions[i]][q].ptr);
                auto t0 = clock::now();
                batch_ones::pattern_sort sorted{g->gpu, maps.data(), (int)pass.size(), terms};
                const int k = (int)pass.size();
                if (q == batch_kept_t::L || q == batch_kept_t::A) {
                    if (!set.resident[q == batch_kept_t::L ? CUZK_L : CUZK_A])
                        throw sppark_error{cudaErrorInvalidValue,
                                           std::string("a batch's kept ones without their bases")};
                    std::vector<bucket_t> sums(k);
                    sorted.sums<bucket_t>(sums.data(), reinterpret_cast<const affine_t::mem_t*>(
                                                           q == batch_kept_t::L ? set.l.ptr : set.a.ptr));
                    for (int j = 0; j < k; j++) {
                        cuzk_msm_results& r = out[pass[j]];
                        (q == batch_kept_t::L ? r.l : r.a) = sums[j];
                        r.left_out |= q == batch_kept_t::L ? CUZK_LEFT_OUT_L : CUZK_LEFT_OUT_A;
                    }
                    ms[q] += ms_between(t0, clock::now());
                    continue;
                }
                if (!set.resident[CUZK_B_G1] || !set.resident[CUZK_B_G2])
                    throw sppark_error{cudaErrorInvalidValue,
                                       std::string("a batch's kept ones without their bases")};
                std::vector<bucket_t> g1(k);
                sorted.sums<bucket_t>(g1.data(), reinterpret_cast<const affine_t::mem_t*>(set.b_g1.ptr));
                auto t1 = clock::now();
                std::vector<bucket_fp2_t> g2(k);
                sorted.sums<bucket_fp2_t>(g2.data(),
                                          reinterpret_cast<const affine_fp2_t::mem_t*>(set.b_g2.ptr));
                for (int j = 0; j < k; j++) {
                    cuzk_msm_results& r = out[pass[j]];
                    r.b_g1 = g1[j];
                    r.b_g2 = g2[j];
                    r.left_out |= CUZK_LEFT_OUT_B_G1 | CUZK_LEFT_OUT_B_G2;
                }
                ms[2] += ms_between(t0, t1);
                ms[3] += ms_between(t1, clock::now());
            }
        }
        kept.clear();
    }, &step);
}

}  // extern "C"
