// cuzk's own kernels for the quotient h = (a*b - c) / Z, appended to ec-gpu-gen's generated
// source by build.rs, which replaces FIELD with the scalar field's name. Each thread works
// on `chunk` consecutive elements, so the powers of `g` cost one exponentiation per thread.

// x[i] *= scale * g^i for i < n.
KERNEL void FIELD_cuzk_distribute_powers(GLOBAL FIELD* x, uint n, uint chunk,
                                         GLOBAL FIELD* scale_and_g) {
  const uint start = (GET_GLOBAL_ID()) * chunk;
  if (start >= n) return;
  const uint end = min(start + chunk, n);
  const FIELD g = scale_and_g[1];
  FIELD power = FIELD_mul(scale_and_g[0], FIELD_pow(g, start));
  for (uint i = start; i < end; i++) {
    x[i] = FIELD_mul(x[i], power);
    power = FIELD_mul(power, g);
  }
}

// a[i] = (a[i] * b[i] - c[i]) * z_inv[0] for i < n.
KERNEL void FIELD_cuzk_divide_by_z(GLOBAL FIELD* a, GLOBAL FIELD* b, GLOBAL FIELD* c, uint n,
                                   uint chunk, GLOBAL FIELD* z_inv) {
  const uint start = (GET_GLOBAL_ID()) * chunk;
  if (start >= n) return;
  const uint end = min(start + chunk, n);
  const FIELD z = z_inv[0];
  for (uint i = start; i < end; i++) {
    a[i] = FIELD_mul(FIELD_sub(FIELD_mul(a[i], b[i]), c[i]), z);
  }
}

// x[i] = x[i] out of Montgomery form, for i < n: the multiexp kernel reads exponents as
// plain integers.
KERNEL void FIELD_cuzk_to_exponents(GLOBAL FIELD* x, uint n, uint chunk) {
  const uint start = (GET_GLOBAL_ID()) * chunk;
  if (start >= n) return;
  const uint end = min(start + chunk, n);
  for (uint i = start; i < end; i++) {
    x[i] = FIELD_unmont(x[i]);
  }
}
