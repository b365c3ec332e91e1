// The bucket accumulator of wide_msm's accumulation (accumulate_buckets): a mixed XYZZ
// addition, an affine base into a bucket's running sum, the one step the H multiexp's time
// is made of. Included by groth16.cu inside its anonymous namespace, after sppark's field
// and curve headers; not a standalone header.
//
// Why its own: in G1 the last step of madd-2008-s, Y3 = R (Q - X3) - Y1 PPP, is two
// products subtracted. sppark's mont_t::dot_product(a, b, c, d) computes a b + c d with
// one interleaved Montgomery reduction for both (for moduli with at least two spare bits in
// their top word; BLS12-381's base field has 381 bits in 12 words), so
// Y3 = dot_product(R, Q - X3, -Y1, PPP) takes the reduction of one product fewer than
// sppark's xyzz_t::add: about half a multiplication of its ten. Measured, the 2^27 H
// multiexp takes 813 ms against 834 (2.4%, an H100, f126a56): less than the multiplications'
// 5%, the rest of the step (subtractions, loads, the count, sort and reduction) unchanged.
// G2's field (two halves in neighbouring lanes) keeps sppark's addition.
//
// sppark keeps xyzz_t's and Affine_t's coordinates private, so the G1 accumulator is a type
// of its own with xyzz_t's four coordinates in xyzz_t's order (X, Y, ZZZ, ZZ): `store`
// writes them word for word where an xyzz_t::mem_t goes, and a base comes in through
// Affine_t's public conversion to any point type built from (X, Y, is_inf).

// The accumulator a bucket type sums with, and how a base is read for it: sppark's own
// addition by default.
template<class bucket, class = void>
struct accumulator {
    using affine = typename bucket::affine_t;

    bucket sum;

    __device__ __forceinline__ static affine load(const typename affine::mem_t& base)
    {
        return base;
    }
    __device__ __forceinline__ void inf() { sum.inf(); }
    __device__ __forceinline__ void add(const affine& p, bool subtract) { sum.add(p, subtract); }
    __device__ __forceinline__ void store(typename bucket::mem_t& out) const { out = sum; }
};

// G1 (xyzz_t over a field of one lane): Y3 with one reduction fewer.
template<class field_t, class field_h, const field_h* a4>
struct accumulator<xyzz_t<field_t, field_h, a4>, std::enable_if_t<field_t::degree == 1>> {
    static_assert(a4 == nullptr, "the curve's a is zero (the doubling below leaves it out)");
    // dot_product's single reduction needs two spare bits; sppark falls back to two
    // products without them, which would still be right but save nothing.
    static_assert(field_t::nbits % 32 != 0 && field_t::nbits % 32 <= 30,
                  "two spare bits in the modulus's top word");

    using bucket = xyzz_t<field_t, field_h, a4>;
    // An element's 32-bit words (mont_t keeps its own count private).
    static constexpr size_t WORDS = (field_t::nbits + 31) / 32;
    static_assert(sizeof(field_t) == WORDS * sizeof(uint32_t), "an element is its words");

    // Its infinity (both coordinates zero) is tested in `add`, not here: a base is loaded
    // a step ahead of its addition, and a test here would wait for the load.
    struct affine {
        field_t X, Y;

        affine() = default;
        __device__ __forceinline__ affine(const field_t& x, const field_t& y, bool)
            : X(x), Y(y) {}
    };

    field_t X, Y, ZZZ, ZZ;

    __device__ __forceinline__ static affine load(const typename bucket::affine_t::mem_t& base)
    {
        typename bucket::affine_t p = base;
        return p;   // Affine_t's conversion: affine{X, Y, is_inf()}, is_inf() left unused
    }

    __device__ __forceinline__ void inf()
    {
        ZZZ.zero();
        ZZ.zero();
    }

    // madd-2008-s (http://hyperelliptic.org/EFD/g1p/auto-shortw-xyzz.html), p negated
    // where `subtract`, either side at infinity, and p equal to the sum doubled
    // (mdbl-2008-s-1): the same cases as sppark's xyzz_t::add(affine, subtract).
    __device__ __forceinline__ void add(const affine& p, bool subtract)
    {
        if ((bool)p.X.is_zero(p.Y))
            return;
        if ((bool)ZZZ.is_zero(ZZ)) {
            X = p.X;
            Y = p.Y;
            ZZZ = field_t::one();
            ZZZ.cneg(subtract);
            ZZ = field_t::one();
            return;
        }
        field_t R = p.Y * ZZZ;              // S2 = Y2 ZZZ1
        R.cneg(subtract);
        R -= Y;                             // R = S2 - Y1
        field_t P = p.X * ZZ;               // U2 = X2 ZZ1
        P -= X;                             // P = U2 - X1
        if (!P.is_zero()) {
            field_t PP = P ^ 2;
            field_t PPP = P * PP;
            ZZ *= PP;                       // ZZ3 = ZZ1 PP
            ZZZ *= PPP;                     // ZZZ3 = ZZZ1 PPP
            field_t Q = PP * X;             // Q = X1 PP
            X = R ^ 2;
            X -= PPP;
            X -= Q;
            X -= Q;                         // X3 = R^2 - PPP - 2 Q
            Q -= X;
            Y = field_t::dot_product(R, Q, -Y, PPP);   // Y3 = R (Q - X3) - Y1 PPP
        } else if (R.is_zero()) {           // the sum equals p (negated where subtract): double p
            field_t U = p.Y + p.Y;          // U = 2 Y
            ZZ = U ^ 2;                     // ZZ3 = V = U^2
            ZZZ = ZZ * U;                   // ZZZ3 = W = U V
            field_t S = p.X * ZZ;           // S = X V
            field_t M = p.X ^ 2;
            M = M + M + M;                  // M = 3 X^2 (a = 0)
            X = M ^ 2;
            X -= S;
            X -= S;                         // X3 = M^2 - 2 S
            Y = ZZZ * p.Y;                  // W Y
            S -= X;
            S *= M;                         // M (S - X3)
            Y = S - Y;                      // Y3 = M (S - X3) - W Y
            ZZZ.cneg(subtract);
        } else {                            // the sum equals -p: the identity
            inf();
        }
    }

    __device__ __forceinline__ static void put(uint32_t* words, const field_t& f)
    {
        #pragma unroll
        for (size_t i = 0; i < WORDS; i++)
            words[i] = f[i];
    }

    // Word for word into xyzz_t's memory form: X, Y, ZZZ, ZZ, each WORDS words.
    __device__ __forceinline__ void store(typename bucket::mem_t& out) const
    {
        static_assert(sizeof(typename bucket::mem_t) == 4 * WORDS * sizeof(uint32_t),
                      "xyzz_t::mem_t is its four coordinates' words");
        uint32_t* words = reinterpret_cast<uint32_t*>(&out);
        put(words, X);
        put(words + WORDS, Y);
        put(words + 2 * WORDS, ZZZ);
        put(words + 3 * WORDS, ZZ);
    }
};
