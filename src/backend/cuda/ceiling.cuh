// The arithmetic's ceiling (cuzk_gpu_ceiling_bench): how fast this device multiplies in Fr
// and in Fp, and adds an affine base into a G1 XYZZ bucket with the accumulator the H
// multiexp uses (xyzz_add.cuh), with every operand in registers; and the quotient's way to
// the coset beside sppark's. Included by groth16.cu inside its anonymous namespace, after
// wide_msm.cuh and quotient.cuh; not a standalone header.
//
// Why: the transforms are Fr multiplications and the H multiexp is mostly additions into
// buckets; the rates here are what those steps would reach if their loads, stores, shuffles
// and sorts cost nothing. The accumulation's measured rate (entries a second, from
// CUZK_WIDE_PHASES) against the addition's rate here says how much of H is left to win
// without fewer or cheaper field operations.
//
// Each thread runs independent chains (CHAINS of multiplications; one sum for the
// additions, as in the accumulation), from operands read once, and writes its result, so
// nothing can be left out by the compiler. Their results are not checked: the rates are the
// point, and the same arithmetic is checked against the CPU by every multiexp and proof
// check. The two ways to the coset are compared, element for element.

namespace ceiling {

constexpr int CHAINS = 4;
constexpr uint32_t OPERANDS = 64;

// out[t] = the sum of CHAINS chains, each x_c *= y `steps` times.
template<class field>
__global__ void multiply_chains(field* out, const field* operands, uint32_t steps)
{
    const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    const field y = operands[t % OPERANDS];
    field x[CHAINS];
    #pragma unroll
    for (int c = 0; c < CHAINS; c++)
        x[c] = operands[(t + 1 + c) % OPERANDS];
    #pragma unroll 1
    for (uint32_t i = 0; i < steps; i++) {
        #pragma unroll
        for (int c = 0; c < CHAINS; c++)
            x[c] *= y;
    }
    field sum = x[0];
    #pragma unroll
    for (int c = 1; c < CHAINS; c++)
        sum += x[c];
    out[t] = sum;
}

// out[t] = Q + P - P + P ...: `steps` additions of ±P into a bucket holding Q, P and Q two
// bases of `bases` (so the sum never equals ±P: every step takes the general addition, as
// nearly every step of the accumulation does).
template<class bucket>
__launch_bounds__(wide_msm::ACCUMULATE_THREADS) __global__
void add_chains(typename bucket::mem_t* out, const typename bucket::affine_t::mem_t* bases,
                uint32_t nbases, uint32_t steps)
{
    static_assert(bucket::degree == 1, "one thread a point (G1)");
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    accumulator<bucket> acc;
    acc.inf();
    acc.add(acc.load(bases[(t + 1) % nbases]), false);
    const auto p = acc.load(bases[t % nbases]);
    #pragma unroll 1
    for (uint32_t i = 0; i < steps; i++)
        acc.add(p, (i & 1) != 0);
    acc.store(out[t]);
}

// v[i] = distinct values below Fr's modulus (as Montgomery words), for comparing two
// transforms: a constant vector's inverse NTT is a single coefficient, and would leave
// most of a coset shift untested.
__global__ void fill_distinct(fr_t* v, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x) {
        uint32_t* words = reinterpret_cast<uint32_t*>(&v[i]);
        uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull;
        for (int k = 0; k < 8; k++) {
            x ^= x >> 29;
            x *= 0xbf58476d1ce4e5b9ull;
            // The top word below the modulus's, 0x73eda753.
            words[k] = (uint32_t)(x >> 32) & (k == 7 ? 0x0fffffffu : 0xffffffffu);
        }
    }
}

}  // namespace ceiling

// The rates (cuzk_gpu_ceiling_bench): ops[i] operations in ms[i] milliseconds, the best of
// `rounds`, for Fr multiplications, Fp multiplications and G1 bucket additions; then, where
// lg_ntt is set, sppark's transforms of 2^lg_ntt elements as the quotient runs them (ops:
// the elements): [3] the inverse (NR), [4] the forward from bit-reversed order (RN), [5]
// the same on the coset (RN, the shift a pass of its own before it); then a vector to the
// coset g·H as the quotient took it before (sppark's inverse and coset NTTs) [6] and as
// it does now (quotient_steps::to_coset: the inverse without its 1/n, the shift with it,
// the NTT) [7], whose results must be equal (else it throws). `bases` (nbases >= 32,
// affine, Montgomery, host memory) are the additions' operands.
constexpr int CEILING_RATES = 8;

template<class bucket>
void ceiling_rates(const gpu_t& gpu, const typename bucket::affine_t::mem_t* bases,
                   size_t nbases, uint32_t rounds, uint32_t lg_ntt, double* ops, double* ms)
{
    using affine_h = typename bucket::affine_t::mem_t;
    using bucket_h = typename bucket::mem_t;
    // The multiplications' operands are the first 32 bases' words.
    if (nbases < 32)
        throw sppark_error{cudaErrorInvalidValue, std::string("32 bases at least")};
    stream_t& s = gpu[0];
    const size_t sms = gpu.sm_count();
    // Enough threads to fill every SM several times over for the multiplications, 256 a
    // block.
    const uint32_t mul_blocks = (uint32_t)sms * 16, mul_threads = 256;
    // The additions in blocks of the accumulation's size, as many an SM as fit (one, as for
    // the accumulation: the same addition sets the registers).
    const int block = wide_msm::ACCUMULATE_THREADS;
    int resident = 0;
    CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, ceiling::add_chains<bucket>,
                                                          block, 0));
    const uint32_t add_blocks = (uint32_t)sms * (uint32_t)std::max(resident, 1);
    const uint32_t mul_steps = 2048, add_steps = 8192;
    const size_t mul_n = (size_t)mul_blocks * mul_threads;
    const size_t add_n = (size_t)add_blocks * block;

    const size_t given = std::min<size_t>(nbases, 1 << 16);
    pool_buffer<affine_h> d_bases{given, s};
    pool_buffer<fr_t> fr_operands{ceiling::OPERANDS, s}, fr_out{mul_n, s};
    pool_buffer<fp_t> fp_operands{ceiling::OPERANDS, s}, fp_out{mul_n, s};
    pool_buffer<bucket_h> sums{add_n, s};
    CUDA_OK(cudaMemcpyAsync(d_bases.ptr, bases, given * sizeof(affine_h),
                            cudaMemcpyHostToDevice, s));
    // The multiplications' operands: the bases' words, their top word cut below each
    // modulus's (any elements will do for a rate).
    std::vector<uint32_t> words(ceiling::OPERANDS * 12);
    std::memcpy(words.data(), bases, words.size() * sizeof(uint32_t));
    std::vector<fr_t> fr_host(ceiling::OPERANDS);
    std::vector<fp_t> fp_host(ceiling::OPERANDS);
    static_assert(sizeof(fr_t) == 8 * sizeof(uint32_t) && sizeof(fp_t) == 12 * sizeof(uint32_t),
                  "Fr and Fp are 8 and 12 words");
    for (size_t i = 0; i < ceiling::OPERANDS; i++) {
        uint32_t fr_words[8], fp_words[12];
        std::memcpy(fr_words, &words[i * 8], sizeof(fr_words));
        std::memcpy(fp_words, &words[i * 12], sizeof(fp_words));
        fr_words[7] &= 0x0fffffffu;
        fp_words[11] &= 0x0fffffffu;
        std::memcpy(&fr_host[i], fr_words, sizeof(fr_words));
        std::memcpy(&fp_host[i], fp_words, sizeof(fp_words));
    }
    CUDA_OK(cudaMemcpyAsync(fr_operands.ptr, fr_host.data(), fr_host.size() * sizeof(fr_t),
                            cudaMemcpyHostToDevice, s));
    CUDA_OK(cudaMemcpyAsync(fp_operands.ptr, fp_host.data(), fp_host.size() * sizeof(fp_t),
                            cudaMemcpyHostToDevice, s));
    s.sync();

    // Host time around a launch and its wait: each kernel runs tens of milliseconds, so
    // the launch's microseconds do not count.
    auto best_of = [&](auto launch) {
        double best = 1e300;
        for (uint32_t r = 0; r < std::max(rounds, 1u); r++) {
            auto t0 = std::chrono::steady_clock::now();
            launch();
            CUDA_OK(cudaGetLastError());
            s.sync();
            best = std::min(best, std::chrono::duration<double, std::milli>(
                                      std::chrono::steady_clock::now() - t0).count());
        }
        return best;
    };
    ms[0] = best_of([&] {
        ceiling::multiply_chains<<<mul_blocks, mul_threads, 0, s>>>(fr_out.ptr, fr_operands.ptr,
                                                                    mul_steps);
    });
    ops[0] = (double)mul_n * mul_steps * ceiling::CHAINS;
    ms[1] = best_of([&] {
        ceiling::multiply_chains<<<mul_blocks, mul_threads, 0, s>>>(fp_out.ptr, fp_operands.ptr,
                                                                    mul_steps);
    });
    ops[1] = (double)mul_n * mul_steps * ceiling::CHAINS;
    ms[2] = best_of([&] {
        ceiling::add_chains<bucket><<<add_blocks, block, 0, s>>>(sums.ptr, d_bases.ptr,
                                                                 (uint32_t)given, add_steps);
    });
    ops[2] = (double)add_n * add_steps;

    for (int i = 3; i < CEILING_RATES; i++)
        ops[i] = ms[i] = 0;
    if (lg_ntt == 0)
        return;
    if (lg_ntt > MAX_LG_DOMAIN_SIZE)
        throw sppark_error{cudaErrorInvalidValue, std::string("no transform that large")};
    const size_t n = (size_t)1 << lg_ntt;
    pool_buffer<fr_t> v{n, s};
    // Every element 0x1111...11, below Fr's modulus: the values do not change the time.
    CUDA_OK(cudaMemsetAsync(v.ptr, 0x11, n * sizeof(fr_t), s));
    ms[3] = best_of([&] {
        NTT::Base_dev_ptr(s, v.ptr, lg_ntt, NTT::InputOutputOrder::NR, NTT::Direction::inverse,
                          NTT::Type::standard);
    });
    ms[4] = best_of([&] {
        NTT::Base_dev_ptr(s, v.ptr, lg_ntt, NTT::InputOutputOrder::RN, NTT::Direction::forward,
                          NTT::Type::standard);
    });
    ms[5] = best_of([&] {
        NTT::Base_dev_ptr(s, v.ptr, lg_ntt, NTT::InputOutputOrder::RN, NTT::Direction::forward,
                          NTT::Type::coset);
    });
    // The two ways to the coset, timed in place, then compared from the same distinct values.
    pool_buffer<fr_t> w{n, s};
    CUDA_OK(cudaMemsetAsync(w.ptr, 0x11, n * sizeof(fr_t), s));
    auto sppark_steps = [&](fr_t* x) {
        NTT::Base_dev_ptr(s, x, lg_ntt, NTT::InputOutputOrder::NR, NTT::Direction::inverse,
                          NTT::Type::standard);
        NTT::Base_dev_ptr(s, x, lg_ntt, NTT::InputOutputOrder::RN, NTT::Direction::forward,
                          NTT::Type::coset);
    };
    quotient_steps steps{s, lg_ntt, true};
    ms[6] = best_of([&] { sppark_steps(v.ptr); });
    ms[7] = best_of([&] { steps.to_coset(w.ptr); });
    ceiling::fill_distinct<<<sms, 1024, 0, s>>>(v.ptr, n);
    ceiling::fill_distinct<<<sms, 1024, 0, s>>>(w.ptr, n);
    CUDA_OK(cudaGetLastError());
    sppark_steps(v.ptr);
    steps.to_coset(w.ptr);
    std::vector<fr_t> a(std::min<size_t>(n, 1 << 20)), b(a.size());
    for (size_t at : {(size_t)0, n - a.size()}) {
        CUDA_OK(cudaMemcpyAsync(a.data(), v.ptr + at, a.size() * sizeof(fr_t),
                                cudaMemcpyDeviceToHost, s));
        CUDA_OK(cudaMemcpyAsync(b.data(), w.ptr + at, b.size() * sizeof(fr_t),
                                cudaMemcpyDeviceToHost, s));
        s.sync();
        if (std::memcmp(a.data(), b.data(), a.size() * sizeof(fr_t)) != 0)
            throw sppark_error{cudaErrorInvalidValue,
                               std::string("the quotient's coset transform differs from sppark's")};
    }
    for (int i = 3; i < CEILING_RATES; i++)
        ops[i] = (double)n;
}
