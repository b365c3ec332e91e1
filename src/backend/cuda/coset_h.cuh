// The H query in coset evaluation form (params/coset_h.rs), derived on the GPU once per
// parameter file: H'_j = sum_i P_i w^(ij) with P_i = (g^-i / m) H_i (P_{m-1} the identity)
// and w = ω^-1, a transform whose elements are points and whose twiddles are scalars.
// Included by groth16.cu inside its anonymous namespace, after the kernels; not a
// standalone header.
//
// How: the points are held in XYZZ coordinates (sppark's bucket_t: additions without
// inversions, doubling included), m of them on the device (192 bytes each: 26 GB at 2^27).
// H goes up a chunk at a time and is scaled as it lands; then one launch per stage of a
// decimation in frequency (natural order in, bit-reversed out), each butterfly
// (u, v) -> (u + v, (u - v) * w^k) with its twiddle's scalar multiplication done by
// double-and-add over the twiddle's bits (none where the twiddle is one); last, the points
// come back a chunk at a time in natural order, as Jacobian points in blst's layout
// (X*ZZ, Y*ZZZ, ZZ: no inversion here; the host normalizes them). The scalars (g^-1, 1/m,
// ω^-1) come from the host, so the transform is the CPU's (params/coset_h.rs::derive) to
// the bit; the caller checks the result against the file's H query all the same.

// The coordinates of an XYZZ point as stored (sppark keeps them private): x = X/ZZ,
// y = Y/ZZZ, ZZ^3 = ZZZ^2, the identity where ZZ = ZZZ = 0.
struct xyzz_coords {
    fp_t X, Y, ZZZ, ZZ;
};

// A Jacobian point in blst's layout: x = X/Z^2, y = Y/Z^3, Z = 0 for the identity.
struct jacobian_coords {
    fp_t X, Y, Z;
};

// p * k, k canonical (not Montgomery: its 32-bit limbs, least significant first, are the
// scalar's bits), by double-and-add from the top bit.
__device__ __forceinline__ bucket_t times_canonical(const bucket_t& p, const fr_t& k)
{
    const uint32_t* limbs = reinterpret_cast<const uint32_t*>(&k);
    bucket_t acc;
    acc.inf();
    for (int bit = 254; bit >= 0; bit--) {
        acc.add(acc);   // sppark's XYZZ addition doubles equal points
        if ((limbs[bit / 32] >> (bit % 32)) & 1)
            acc.add(p);
    }
    return acc;
}

// P[first + t] = (g^-(first+t) / m) * H[t] for t < len, the points `first` .. of H that
// landed in `chunk` (affine, Montgomery); the identity at and beyond `count`.
__global__ void coset_h_scale(bucket_t::mem_t* P, const affine_t::mem_t* chunk, size_t first,
                              size_t len, size_t count, fr_t g_inv, fr_t m_inv)
{
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < len;
         t += (size_t)gridDim.x * blockDim.x) {
        size_t i = first + t;
        bucket_t p;
        if (i >= count) {
            p.inf();
        } else {
            affine_t a = chunk[t];
            p = a;
            fr_t k = (g_inv ^ (uint32_t)i) * m_inv;
            k.from();
            p = times_canonical(p, k);
        }
        P[i] = p;
    }
}

// One stage of the decimation in frequency over m points, blocks of 2 * half:
// (u, v) -> (u + v, (u - v) * w^(j * m / (2 half))) for the j-th pair of each block.
__global__ void coset_h_stage(bucket_t::mem_t* P, size_t m, size_t half, fr_t w)
{
    const size_t stride = m / (2 * half);   // the twiddle's step at this stage
    for (size_t b = blockIdx.x * (size_t)blockDim.x + threadIdx.x; b < m / 2;
         b += (size_t)gridDim.x * blockDim.x) {
        size_t j = b % half;
        size_t i0 = (b / half) * 2 * half + j, i1 = i0 + half;
        bucket_t u = P[i0], v = P[i1];
        bucket_t sum = u;
        sum.add(v);
        v.cneg(true);
        u.add(v);
        if (j != 0) {
            fr_t k = w ^ (uint32_t)(j * stride);
            k.from();
            u = times_canonical(u, k);
        }
        P[i0] = sum;
        P[i1] = u;
    }
}

// out[t] = H'_{first + t} for t < len, as a Jacobian point (blst's layout): the DIF left
// H'_j at the bit reversal of j over lg_m bits.
__global__ void coset_h_gather(jacobian_coords* out, const bucket_t::mem_t* P, size_t first,
                               size_t len, int lg_m)
{
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < len;
         t += (size_t)gridDim.x * blockDim.x) {
        size_t j = first + t;
        size_t at = (size_t)(__brevll((unsigned long long)j) >> (64 - lg_m));
        const xyzz_coords& p = *reinterpret_cast<const xyzz_coords*>(&P[at]);
        jacobian_coords q;
        q.X = p.X * p.ZZ;
        q.Y = p.Y * p.ZZZ;
        q.Z = p.ZZ;
        out[t] = q;
    }
}

// The derivation on `gpu`: h (count = m - 1 affine points, host memory) into out (m
// Jacobian points, host memory); scalars = {g^-1, 1/m, ω^-1}, Montgomery.
void derive_coset_h(const gpu_t& gpu, const affine_t* h, size_t m, const fr_t* scalars,
                    jacobian_coords* out)
{
    static_assert(sizeof(xyzz_coords) == sizeof(bucket_t::mem_t), "XYZZ as stored");
    static_assert(sizeof(jacobian_coords) == 3 * 48, "blst's Jacobian G1 point");
    int lg_m = 0;
    while (((size_t)1 << lg_m) < m)
        lg_m++;
    if (m < 2 || ((size_t)1 << lg_m) != m || m > ((size_t)1 << 31))
        throw sppark_error{cudaErrorInvalidValue,
                           std::string("the coset H query's domain is not a power of two up to 2^31")};
    stream_t& s = gpu[0];
    const int grid = (int)gpu.sm_count() * 4;
    const size_t count = m - 1;
    const size_t chunk_points = std::min(m, (size_t)1 << 20);
    pool_buffer<bucket_t::mem_t> P{m, s};
    {
        pool_buffer<affine_t::mem_t> chunk{chunk_points, s};
        for (size_t first = 0; first < m; first += chunk_points) {
            size_t len = std::min(chunk_points, m - first);
            size_t given = first < count ? std::min(len, count - first) : 0;
            if (given)
                CUDA_OK(cudaMemcpyAsync(chunk.ptr, h + first, given * sizeof(affine_t),
                                        cudaMemcpyHostToDevice, s));
            coset_h_scale<<<grid, 256, 0, s>>>(P.ptr, chunk.ptr, first, len, count,
                                               scalars[0], scalars[1]);
            CUDA_OK(cudaGetLastError());
            s.sync();   // the chunk is overwritten by the next copy
        }
    }
    // Allocated before the stages, so that no lack of memory ends minutes of work.
    pool_buffer<jacobian_coords> back{chunk_points, s};
    for (size_t half = m / 2; half >= 1; half /= 2) {
        coset_h_stage<<<grid, 256, 0, s>>>(P.ptr, m, half, scalars[2]);
        CUDA_OK(cudaGetLastError());
    }
    for (size_t first = 0; first < m; first += chunk_points) {
        size_t len = std::min(chunk_points, m - first);
        coset_h_gather<<<grid, 256, 0, s>>>(back.ptr, P.ptr, first, len, lg_m);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaMemcpyAsync(out + first, back.ptr, len * sizeof(jacobian_coords),
                                cudaMemcpyDeviceToHost, s));
        s.sync();
    }
}
