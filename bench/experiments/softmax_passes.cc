// Softmax over a row tile held in L1 (8 rows x 512, W5's tile in the fused attention kernel):
// the two passes tessera emits (the row's max; then exp(x - max) stored and summed) against
// the online form (running max and sum in one pass, the sum rescaled by exp(m_old - m_new) at
// every vector; the exps stored in a second pass) and a chunked online form (one rescale per
// four vectors), and a one-pass form that stores the exps against a reference moved only when
// a score passes it by far (the stored exps and the sum then rescaled: FlashAttention's
// deferred rescaling). Where the exps are stored for the product that follows, the sum comes
// with them for free, and one pass for the max and the sum costs the exps once more, unless
// the rescale is deferred.
//
//   g++ -O3 -march=native -ffp-contract=fast -o /tmp/softmax_passes bench/experiments/softmax_passes.cc
//   /tmp/softmax_passes
//
// (-mno-avx512f for the AVX2 form on an AVX-512 machine.) Results: bench/RESULTS.md, issue 13's
// sixth measurement (the deferred form: the fifteenth).
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#ifdef __AVX512F__
#define W 16
#else
#define W 8
#endif
typedef float vf __attribute__((vector_size(W * 4)));
typedef int32_t vi __attribute__((vector_size(W * 4)));
#define ROWS 8
#define N 512

static inline vf splat(float x) { vf v; for (int i = 0; i < W; i++) v[i] = x; return v; }
static inline vf vmax(vf a, vf b) { return a > b ? a : b; }
// exp by 2^k * p(r), a degree-5 polynomial on [-ln2/2, ln2/2]: the cost of tessera's.
static inline vf vexp(vf x) {
  x = vmax(x, splat(-87.0f));
  vf k = (x * splat(1.44269504f) + splat(12582912.0f)) - splat(12582912.0f);
  vf r = x - k * splat(0.693359375f) + k * splat(2.12194440e-4f);
  vf r2 = r * r;
  vf p = (splat(1.0f) + r) + r2 * ((splat(0.5f) + r * splat(1.6666666e-1f)) +
                                   r2 * (splat(4.1666668e-2f) + r * splat(8.333334e-3f)));
  vi e = (__builtin_convertvector(k, vi) + 127) << 23;
  vf s; memcpy(&s, &e, sizeof s);
  return p * s;
}
static inline float hmax(vf v) { float m = v[0]; for (int i = 1; i < W; i++) m = fmaxf(m, v[i]); return m; }
static inline float hsum(vf v) { float s = 0; for (int i = 0; i < W; i++) s += v[i]; return s; }

static float S[ROWS][N] __attribute__((aligned(64))), P[ROWS][N] __attribute__((aligned(64)));
static float SUM[ROWS], REF[ROWS];

__attribute__((noinline)) static void two_pass(void) {
  for (int i = 0; i < ROWS; i++) {
    const vf *x = (const vf *)S[i];
    vf m0 = x[0], m1 = x[1], m2 = x[2], m3 = x[3];
    for (int j = 4; j < N / W; j += 4) { m0 = vmax(m0, x[j]); m1 = vmax(m1, x[j + 1]); m2 = vmax(m2, x[j + 2]); m3 = vmax(m3, x[j + 3]); }
    vf m = splat(hmax(vmax(vmax(m0, m1), vmax(m2, m3))));
    vf s0 = splat(0), s1 = splat(0);
    vf *p = (vf *)P[i];
    for (int j = 0; j < N / W; j += 2) { vf e0 = vexp(x[j] - m), e1 = vexp(x[j + 1] - m); p[j] = e0; p[j + 1] = e1; s0 += e0; s1 += e1; }
    SUM[i] = hsum(s0 + s1);
    REF[i] = hmax(m);
  }
}

// The first of the two passes alone: what merging the max into the second could save at most.
__attribute__((noinline)) static void max_pass(void) {
  for (int i = 0; i < ROWS; i++) {
    const vf *x = (const vf *)S[i];
    vf m0 = x[0], m1 = x[1], m2 = x[2], m3 = x[3];
    for (int j = 4; j < N / W; j += 4) { m0 = vmax(m0, x[j]); m1 = vmax(m1, x[j + 1]); m2 = vmax(m2, x[j + 2]); m3 = vmax(m3, x[j + 3]); }
    SUM[i] = hmax(vmax(vmax(m0, m1), vmax(m2, m3)));
  }
}

static inline void finish(int i, vf m, vf s) {
  float mm = hmax(m), t = 0;
  for (int l = 0; l < W; l++) t += s[l] * expf(m[l] - mm);
  vf M = splat(mm);
  const vf *x = (const vf *)S[i];
  vf *p = (vf *)P[i];
  for (int j = 0; j < N / W; j++) p[j] = vexp(x[j] - M);
  SUM[i] = t;
  REF[i] = mm;
}

__attribute__((noinline)) static void online(void) {
  for (int i = 0; i < ROWS; i++) {
    const vf *x = (const vf *)S[i];
    vf m = splat(-INFINITY), s = splat(0);
    for (int j = 0; j < N / W; j++) { vf n = vmax(m, x[j]); s = s * vexp(m - n) + vexp(x[j] - n); m = n; }
    finish(i, m, s);
  }
}

__attribute__((noinline)) static void online_chunked(void) {
  for (int i = 0; i < ROWS; i++) {
    const vf *x = (const vf *)S[i];
    vf m = x[0], s = splat(0);
    for (int j = 0; j < N / W; j += 4) {
      vf n = vmax(vmax(m, vmax(x[j], x[j + 1])), vmax(x[j + 2], x[j + 3]));
      s = s * vexp(m - n) + (vexp(x[j] - n) + vexp(x[j + 1] - n)) + (vexp(x[j + 2] - n) + vexp(x[j + 3] - n));
      m = n;
    }
    finish(i, m, s);
  }
}

// One pass, the exps taken against a reference that only moves when a score passes it by
// more than RESCALE_ABOVE (e^8 keeps the sum far from overflow): then the exps stored so far
// and the sum are rescaled, which random scores make rare after the first vector.
#define RESCALE_ABOVE 8.0f
static inline int any_above(vf a, vf b, vf limit) {
#ifdef __AVX512F__
  return (_mm512_cmp_ps_mask((__m512)a, (__m512)limit, _CMP_GT_OQ) |
          _mm512_cmp_ps_mask((__m512)b, (__m512)limit, _CMP_GT_OQ)) != 0;
#else
  return _mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps((__m256)a, (__m256)limit, _CMP_GT_OQ),
                                         _mm256_cmp_ps((__m256)b, (__m256)limit, _CMP_GT_OQ))) != 0;
#endif
}
__attribute__((noinline)) static void lazy_rescale(void) {
  for (int i = 0; i < ROWS; i++) {
    const vf *x = (const vf *)S[i];
    vf *p = (vf *)P[i];
    float ref = hmax(x[0]);
    vf m = splat(ref), limit = splat(ref + RESCALE_ABOVE), s0 = splat(0), s1 = splat(0);
    for (int j = 0; j < N / W; j += 2) {
      vf a = x[j], b = x[j + 1];
      if (__builtin_expect(any_above(a, b, limit), 0)) {
        float next = fmaxf(hmax(vmax(a, b)), ref);
        vf factor = splat(expf(ref - next));
        for (int k = 0; k < j; k++) p[k] *= factor;
        s0 *= factor; s1 *= factor;
        ref = next; m = splat(ref); limit = splat(ref + RESCALE_ABOVE);
      }
      vf e0 = vexp(a - m), e1 = vexp(b - m);
      p[j] = e0; p[j + 1] = e1; s0 += e0; s1 += e1;
    }
    SUM[i] = hsum(s0 + s1);
    REF[i] = ref;
  }
}

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }

// Compares the sums as taken against the row's max (a form's reference may lie below it).
static void check(const char *name, void (*f)(void), const float *want_sum, const float *want_max) {
  f();
  float worst = 0;
  for (int i = 0; i < ROWS && want_sum; i++) {
    float sum = SUM[i] * expf(REF[i] - want_max[i]);
    worst = fmaxf(worst, fabsf(sum - want_sum[i]) / want_sum[i]);
  }
  double best = 1e9;
  for (int r = 0; r < 7; r++) {
    double t0 = now();
    for (int k = 0; k < 20000; k++) { f(); __asm__ volatile("" ::: "memory"); }
    double t = (now() - t0) / 20000;
    if (t < best) best = t;
  }
  printf("%-16s %7.3f us per 8 x 512 tile (%.2f ns per element), sums within %.1e\n", name, best * 1e6, best * 1e9 / (ROWS * N), worst);
}

int main(void) {
  uint32_t seed = 1;
  for (int i = 0; i < ROWS; i++)
    for (int j = 0; j < N; j++) { seed = seed * 1664525u + 1013904223u; S[i][j] = (seed >> 8) * (8.0f / 16777216.0f) - 4.0f; }
  two_pass();
  float want[ROWS], want_max[ROWS];
  memcpy(want, SUM, sizeof want);
  memcpy(want_max, REF, sizeof want_max);
  check("two passes", two_pass, want, want_max);
  check("online", online, want, want_max);
  check("online chunked", online_chunked, want, want_max);
  check("lazy rescale", lazy_rescale, want, want_max);
  check("max pass alone", max_pass, NULL, NULL);
  return 0;
}
