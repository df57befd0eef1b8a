// The header every generated C++ kernel includes (mini version of
// torch/_inductor/codegen/cpp_prefix.h). It holds what the ops mean in C++ where C++ disagrees
// with torch: Python's floor division and remainder, NaN-propagating max/min, 16-bit floats,
// and the accumulators of the reductions C++ has no operator for (argmax, Welford).
// No torch header is used: a kernel compiles in a fraction of a second against the C++ library.
#ifndef MINICOMPILE_CPP_PREFIX_H
#define MINICOMPILE_CPP_PREFIX_H

#include <omp.h>
#if defined(__F16C__)
#include <immintrin.h>  // F16C: float16 <-> float, 8 lanes an instruction
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

// --- vector math: one implementation of each function, at every width --------------------------
//
// glibc's vector math library (libmvec) computes sin, exp, ... 4, 8 or 16 floats per call
// (_ZGVdN8v_expf: within 4 ulp, as ATen's SLEEF is within 1). But its scalar and vector
// versions round differently (about half of all floats get an exp one ulp apart), and so do its
// 4-, 8- and 16-wide ones. g++ runs the body of an `omp simd` loop 16 lanes at a time and its
// tail 8, 4 or 1 at a time, so a value computed twice (a fused kernel recomputes atan2(x, y) in
// the loop that compares it with the row's max; a backward kernel recomputes the forward's exp)
// could differ between the two loops, and `x == amax(x)` fail for the maximum itself. So each
// function has one implementation: mc_vm_expf is declared `simd`, and its scalar version and
// every vector version g++ may call (_ZGV{b,c,d,e}N*v_mc_vm_expf) pad their lanes into one
// call of glibc's widest version for this machine (as ATen runs a loop's tail through the same
// vector function, on a partly filled vector). A float's exp and erf are our own, inline (below):
// IEEE operations only, the same bits at every width by construction.
// cpp_build.py defines MC_LIBMVEC to the glibc version (222: 2.22, 235: 2.35) on x86-64 Linux.
// glibc declares its versions itself only under -ffast-math, which would break NaN semantics.
#if defined(MC_LIBMVEC)
#if defined(__AVX512F__)
#define MC_VM_ISA e
#define MC_VM_F 16
#define MC_VM_D 8
#elif defined(__AVX2__)
#define MC_VM_ISA d
#define MC_VM_F 8
#define MC_VM_D 4
#elif defined(__AVX__)
#define MC_VM_ISA c
#define MC_VM_F 8
#define MC_VM_D 4
#else
#define MC_VM_ISA b
#define MC_VM_F 4
#define MC_VM_D 2
#endif
typedef float mc_vf4 __attribute__((vector_size(16)));
typedef float mc_vf8 __attribute__((vector_size(32)));
typedef float mc_vf16 __attribute__((vector_size(64)));
typedef double mc_vd2 __attribute__((vector_size(16)));
typedef double mc_vd4 __attribute__((vector_size(32)));
typedef double mc_vd8 __attribute__((vector_size(64)));
#define MC_CAT2(a, b) a##b
#define MC_CAT(a, b) MC_CAT2(a, b)
#define MC_STR2(a) #a
#define MC_STR(a) MC_STR2(a)
typedef MC_CAT(mc_vf, MC_VM_F) mc_vf;  // glibc's widest vectors on this machine
typedef MC_CAT(mc_vd, MC_VM_D) mc_vd;
// the lanes of a narrower vector (or one scalar) in a wide one, repeated to fill it; and back.
// Repeated, not zeros above: glibc's vector functions compute special inputs (log's 0, acosh's
// values below 1) lane by lane with the scalar function, and zeros in the unused lanes sent
// every call of a scalar logf down that path (a T5 kernel's 32768 bucket logs: 3.2 ms, 127 us
// with std::log)
template <typename Wide, typename Narrow> inline Wide mc_vm_widen(Narrow x) {
    static_assert(sizeof(Wide) % sizeof(Narrow) == 0, "lanes repeat a whole number of times");
    Wide w;
    for (size_t at = 0; at < sizeof(Wide); at += sizeof(Narrow))
        std::memcpy(reinterpret_cast<char*>(&w) + at, &x, sizeof(x));
    return w;
}
template <typename Narrow, typename Wide> inline Narrow mc_vm_narrow(Wide w) {
    Narrow x;
    std::memcpy(&x, &w, sizeof(x));
    return x;
}
#define MC_VM_HIDDEN __attribute__((visibility("hidden")))
#define MC_VM_ARGS_1(T) T x
#define MC_VM_ARGS_2(T) T x, T y
#define MC_VM_WIDE_1(V) mc_vm_widen<V>(x)
#define MC_VM_WIDE_2(V) mc_vm_widen<V>(x), mc_vm_widen<V>(y)
// one version of mc_vm_<fn> (k arguments: "v" or "vv" in its name): ISA letter `isa`, N lanes VN
#define MC_VM_CLONE(k, vs, fn, V, isa, N, VN) \
    MC_VM_HIDDEN VN mc_vm_##fn##_##isa(MC_VM_ARGS_##k(VN)) noexcept \
        __asm__("_ZGV" #isa "N" #N vs "_mc_vm_" #fn); \
    VN mc_vm_##fn##_##isa(MC_VM_ARGS_##k(VN)) noexcept { \
        return mc_vm_narrow<VN>(mc_vm_glibc_##fn(MC_VM_WIDE_##k(V))); \
    }
// the versions g++ may call on this machine: b (SSE: 16-byte vectors) always; c and d (AVX,
// AVX2: 32 bytes) and e (AVX-512: 64 bytes) where the machine has them
#if defined(__AVX512F__)
#define MC_VM_CLONES(k, vs, fn, V, n4, n8, n16, VN4, VN8, VN16) \
    MC_VM_CLONE(k, vs, fn, V, b, n4, VN4) MC_VM_CLONE(k, vs, fn, V, c, n8, VN8) \
    MC_VM_CLONE(k, vs, fn, V, d, n8, VN8) MC_VM_CLONE(k, vs, fn, V, e, n16, VN16)
#elif defined(__AVX2__)
#define MC_VM_CLONES(k, vs, fn, V, n4, n8, n16, VN4, VN8, VN16) \
    MC_VM_CLONE(k, vs, fn, V, b, n4, VN4) MC_VM_CLONE(k, vs, fn, V, c, n8, VN8) \
    MC_VM_CLONE(k, vs, fn, V, d, n8, VN8)
#elif defined(__AVX__)
#define MC_VM_CLONES(k, vs, fn, V, n4, n8, n16, VN4, VN8, VN16) \
    MC_VM_CLONE(k, vs, fn, V, b, n4, VN4) MC_VM_CLONE(k, vs, fn, V, c, n8, VN8)
#else
#define MC_VM_CLONES(k, vs, fn, V, n4, n8, n16, VN4, VN8, VN16) MC_VM_CLONE(k, vs, fn, V, b, n4, VN4)
#endif
// mc_vm_<fn>, of k arguments of type T (expf: float; exp: double), on glibc's widest vectors V
// of W lanes: glibc's version and our function, declared simd, for every function here ...
#define MC_VM_DECLARE(k, vs, fn, T, V, W) \
    V mc_vm_glibc_##fn(MC_VM_ARGS_##k(V)) noexcept \
        __asm__("_ZGV" MC_STR(MC_VM_ISA) "N" MC_STR(W) vs "_" #fn); \
    __attribute__((simd("notinbranch"), const)) T mc_vm_##fn(MC_VM_ARGS_##k(T)) noexcept;
// ... and its scalar version (lane 0 of one wide call) and its clones, defined by each kernel
// for the functions it calls (MC_VM_FUNCTION lines after the #include; ~0.03 s of g++ each)
#define MC_VM_DEFINE(k, vs, fn, T, V, n4, n8, n16, VN4, VN8, VN16) \
    MC_VM_HIDDEN T mc_vm_##fn##_scalar(MC_VM_ARGS_##k(T)) noexcept __asm__("mc_vm_" #fn); \
    T mc_vm_##fn##_scalar(MC_VM_ARGS_##k(T)) noexcept { \
        return mc_vm_glibc_##fn(MC_VM_WIDE_##k(V))[0]; \
    } \
    MC_VM_CLONES(k, vs, fn, V, n4, n8, n16, VN4, VN8, VN16)
// a function of float and its double twin (expf and exp)
#define MC_VM_DECLARE_FUNCTION(k, vs, name) \
    MC_VM_DECLARE(k, vs, name##f, float, mc_vf, MC_VM_F) \
    MC_VM_DECLARE(k, vs, name, double, mc_vd, MC_VM_D)
#define MC_VM_FUNCTION(k, vs, name) extern "C" { \
    MC_VM_DEFINE(k, vs, name##f, float, mc_vf, 4, 8, 16, mc_vf4, mc_vf8, mc_vf16) \
    MC_VM_DEFINE(k, vs, name, double, mc_vd, 2, 4, 8, mc_vd2, mc_vd4, mc_vd8) }
extern "C" {
MC_VM_DECLARE_FUNCTION(1, "v", sin) MC_VM_DECLARE_FUNCTION(1, "v", cos)
MC_VM_DECLARE_FUNCTION(1, "v", exp) MC_VM_DECLARE_FUNCTION(1, "v", log)
MC_VM_DECLARE_FUNCTION(2, "vv", pow)
#if MC_LIBMVEC >= 235
MC_VM_DECLARE_FUNCTION(1, "v", tan) MC_VM_DECLARE_FUNCTION(1, "v", tanh)
MC_VM_DECLARE_FUNCTION(1, "v", sinh) MC_VM_DECLARE_FUNCTION(1, "v", cosh)
MC_VM_DECLARE_FUNCTION(1, "v", asin) MC_VM_DECLARE_FUNCTION(1, "v", acos)
MC_VM_DECLARE_FUNCTION(1, "v", atan) MC_VM_DECLARE_FUNCTION(1, "v", asinh)
MC_VM_DECLARE_FUNCTION(1, "v", acosh) MC_VM_DECLARE_FUNCTION(1, "v", atanh)
MC_VM_DECLARE_FUNCTION(1, "v", exp2) MC_VM_DECLARE_FUNCTION(1, "v", expm1)
MC_VM_DECLARE_FUNCTION(1, "v", log2) MC_VM_DECLARE_FUNCTION(1, "v", log1p)
MC_VM_DECLARE_FUNCTION(1, "v", erf) MC_VM_DECLARE_FUNCTION(1, "v", erfc)
MC_VM_DECLARE_FUNCTION(2, "vv", atan2) MC_VM_DECLARE_FUNCTION(2, "vv", hypot)
#endif
}
#endif

namespace mc {

// --- 16-bit floats: stored as their bits, computed in float -------------------------------------

inline uint32_t bits_of(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float float_of(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// bfloat16 is the top half of a float32: round to nearest even, keep NaN a NaN.
// Kernels convert through the free functions below, on the bits: with a struct temporary in the
// loop (``static_cast<mc::float16>(x)``), g++'s `omp simd` keeps it in a per-lane array, copies
// it as an aggregate and gives up vectorising the loop: a float16 add ran 30x slower.
struct bfloat16 {
    uint16_t bits;
    bfloat16() = default;
    explicit bfloat16(float f) : bits(bits_from(f)) {}
    operator float() const { return to_float(bits); }
    static uint16_t bits_from(float f) {
        const uint32_t u = bits_of(f);
        const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // round half to even
        // a select, not an early return: the loop stays vectorisable
        return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u : rounded);
    }
    static float to_float(uint16_t b) { return float_of(static_cast<uint32_t>(b) << 16); }
    static float round(float f) { return to_float(bits_from(f)); }
};

// IEEE half: the branch-free conversions of c10/util/Half.h (from the FP16 library).
struct float16 {
    uint16_t bits;
    float16() = default;
    explicit float16(float f) : bits(bits_from(f)) {}
    operator float() const { return to_float(bits); }
    static uint16_t bits_from(float f) {
        float base = (std::fabs(f) * 0x1.0p+112f) * 0x1.0p-110f;  // rounds into half's range
        const uint32_t w = bits_of(f), shl1_w = w + w, sign = w & 0x80000000u;
        uint32_t bias = shl1_w & 0xff000000u;
        if (bias < 0x71000000u) bias = 0x71000000u;
        base = float_of((bias >> 1) + 0x07800000u) + base;
        const uint32_t b = bits_of(base);
        const uint32_t nonsign = ((b >> 13) & 0x00007c00u) + (b & 0x00000fffu);
        return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xff000000u ? 0x7e00u : nonsign));
    }
    // f rounded to float16 and back, without the bits (the rounding a kernel does after each
    // op). On float's own bits, as bfloat16's: in float16's normal range the mantissa is
    // rounded to 10 bits, ties to even, by adding 0xfff plus the lowest kept bit and clearing
    // the 13 below; under 2^-14 (its subnormals) the step is a fixed 2^-24, 0.5's ulp, so
    // (|f| + 0.5) - 0.5 rounds it; a result past 65504 (float16's largest) is inf, a NaN stays
    // a NaN. Selects and integer adds only: 1.4x faster in a SwiGLU kernel than the float
    // formula it replaced ((|f| + 2^13 ulp) - 2^13 ulp), and equal to F16C's conversion there
    // and back on all 2^32 floats.
    static float round(float f) {
        const uint32_t w = bits_of(f), u = w & 0x7fffffffu;
        const uint32_t normal = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
        const float subnormal = (float_of(u) + 0.5f) - 0.5f;
        uint32_t r = u < 0x38800000u ? bits_of(subnormal) : normal;  // 0x38800000: 2^-14
        r = normal > 0x477fe000u ? 0x7f800000u : r;  // 0x477fe000: 65504
        r = u > 0x7f800000u ? u : r;
        return float_of(r | (w & 0x80000000u));
    }
    static float to_float(uint16_t h) {
        const uint32_t w = static_cast<uint32_t>(h) << 16, sign = w & 0x80000000u;
        const uint32_t two_w = w + w;
        const float normalized = float_of((two_w >> 4) + (0xe0u << 23)) * 0x1.0p-112f;
        const float denormalized = float_of((two_w >> 17) | (126u << 23)) - 0.5f;
        return float_of(sign | (two_w < (1u << 27) ? bits_of(denormalized) : bits_of(normalized)));
    }
};

// a 16-bit float in memory as a float; a float stored as one; a float rounded to one
template <typename H> inline float load_float(const H& h) { return H::to_float(h.bits); }
template <typename H> inline void store_float(H& dst, float f) { dst.bits = H::bits_from(f); }
template <typename H> inline float round_to(float f) { return H::round(f); }

// n float16s at src as floats at dst, and back (cpp_blocks.py: a kernel converts a row of a
// float16 tensor before its loop and after it, instead of element by element inside it). With
// F16C, eight at a time by one instruction, rounding to nearest even as store_float does (g++
// cannot find these instructions in the per-element formulas above); the rest, and every
// element on a machine without F16C, by those formulas.
inline void load_floats(float* dst, const float16* src, int64_t n) {
    int64_t i = 0;
#if defined(__F16C__)
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
    #pragma omp simd
    for (int64_t j = i; j < n; j++) dst[j] = load_float(src[j]);
}
inline void store_floats(float16* dst, const float* src, int64_t n) {
    int64_t i = 0;
#if defined(__F16C__)
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
    #pragma omp simd
    for (int64_t j = i; j < n; j++) store_float(dst[j], src[j]);
}

// n floats as bfloat16s: with AVX512-BF16, sixteen at a time by one instruction, rounding to
// nearest even as store_float does; else element by element. The instruction reads a subnormal
// float as zero and keeps a NaN's payload, where eager keeps the subnormal's rounding and
// writes every NaN as 0x7fc0: a vector holding either is converted element by element. (A
// bfloat16 load is a shift, which g++ vectorises: it stays per element, cpp_blocks.py.)
inline void store_floats(bfloat16* dst, const float* src, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512BF16__)
    const __m512 smallest_normal = _mm512_set1_ps(std::numeric_limits<float>::min());
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(src + i);
        const __mmask16 special =
            (_mm512_cmp_ps_mask(_mm512_abs_ps(v), smallest_normal, _CMP_LT_OQ)
             & _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NEQ_OQ))  // subnormal
            | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);  // NaN
        if (special) {
            for (int64_t j = i; j < i + 16; j++) store_float(dst[j], src[j]);
            continue;
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                            (__m256i)_mm512_cvtneps_pbh(v));
    }
#endif
    #pragma omp simd
    for (int64_t j = i; j < n; j++) store_float(dst[j], src[j]);
}

// the start of a max (min) reduction: -inf (+inf) for floats, so that a row of -inf still
// reports its first position to argmax
template <typename T> constexpr T lowest() {
    if constexpr (std::numeric_limits<T>::has_infinity) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();
}
template <typename T> constexpr T highest() {
    if constexpr (std::numeric_limits<T>::has_infinity) return std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::max();
}

// --- vector math (see the top of this file) ---------------------------------------------------
// mc::vm::exp(x): mc_vm_expf for a float, mc_vm_exp for a double, std::exp for anything else
// (and for every type where glibc has no vector version)
namespace vm {
#define MC_VM_FALLBACK_1(name) template <typename T> inline auto name(T x) { return std::name(x); }
#define MC_VM_FALLBACK_2(name) \
    template <typename T, typename U> inline auto name(T x, U y) { return std::name(x, y); }
MC_VM_FALLBACK_1(sin) MC_VM_FALLBACK_1(cos) MC_VM_FALLBACK_1(exp) MC_VM_FALLBACK_1(log)
MC_VM_FALLBACK_1(tan) MC_VM_FALLBACK_1(tanh) MC_VM_FALLBACK_1(sinh) MC_VM_FALLBACK_1(cosh)
MC_VM_FALLBACK_1(asin) MC_VM_FALLBACK_1(acos) MC_VM_FALLBACK_1(atan) MC_VM_FALLBACK_1(asinh)
MC_VM_FALLBACK_1(acosh) MC_VM_FALLBACK_1(atanh) MC_VM_FALLBACK_1(exp2) MC_VM_FALLBACK_1(expm1)
MC_VM_FALLBACK_1(log2) MC_VM_FALLBACK_1(log1p) MC_VM_FALLBACK_1(erf) MC_VM_FALLBACK_1(erfc)
MC_VM_FALLBACK_2(pow) MC_VM_FALLBACK_2(atan2) MC_VM_FALLBACK_2(hypot)
#if defined(MC_LIBMVEC)
#define MC_VM_1(name) \
    inline float name(float x) { return mc_vm_##name##f(x); } \
    inline double name(double x) { return mc_vm_##name(x); }
#define MC_VM_2(name) \
    inline float name(float x, float y) { return mc_vm_##name##f(x, y); } \
    inline double name(double x, double y) { return mc_vm_##name(x, y); }
MC_VM_1(sin) MC_VM_1(cos) MC_VM_1(exp) MC_VM_1(log) MC_VM_2(pow)
#if MC_LIBMVEC >= 235
MC_VM_1(tan) MC_VM_1(tanh) MC_VM_1(sinh) MC_VM_1(cosh) MC_VM_1(asin) MC_VM_1(acos) MC_VM_1(atan)
MC_VM_1(asinh) MC_VM_1(acosh) MC_VM_1(atanh) MC_VM_1(exp2) MC_VM_1(expm1) MC_VM_1(log2)
MC_VM_1(log1p) MC_VM_1(erf) MC_VM_1(erfc) MC_VM_2(atan2) MC_VM_2(hypot)
#endif
#endif
}  // namespace vm

// --- exp of a float: a reduction, a polynomial and two scalings -------------------------------
//
// glibc's vector expf is a call: the registers a loop keeps (a row's running sum, the constants)
// are spilled around it, and it checks its lanes for special cases. This one is inline, and
// about 1.6 times as fast (a 1024-float row's exp and sum on one core of the CPU machine: 0.27 ns
// a float against glibc's 0.41-0.44), within 0.9 ulp of the correctly rounded exp over every
// float. Like erf below, it is IEEE operations only, so a value has the same bits in every lane.
//
//   exp(x) = 2^n * exp(r),  n = x / ln 2 rounded,  r = x - n ln 2 in [-ln2/2, ln2/2]
//   exp(r) ~ 1 + r + r^2 P(r),  P of degree 4
//
// Adding 1.5 * 2^23 to x / ln 2 (in the fused multiply-add) rounds it to n, which lands in the
// low bits of the sum. ln 2 is split in two so that n * ln2_hi (16 bits times 8) is exact.
// 2^n is built from its bits in two halves, 2^(n/2) * 2^(n - n/2): one would cover only
// n in [-126, 127], and exp reaches 2^128 (x up to 88.72) and subnormal results (2^-149, x down
// to -103.97), where the second multiplication rounds once, correctly. Past those ends a select
// gives 0 or +inf (and the reduction's NaN for +-inf never shows); a NaN x stays NaN.
// P: a relative minimax fit in float64 on 6000 Chebyshev nodes (Lawson's iteratively
// reweighted least squares), rounded to float one coefficient at a time from the constant up,
// refitting the others: 0.026 ulp of fit error. Against glibc's double exp, over every float:
// at most 0.89 ulp (99.4% correctly rounded); a NaN, +-inf, 0 and the ends as exp's.
inline float exp_float(float x) {
    const float big = std::fma(x, 1.44269504f, 0x1.8p23f);  // 1.5 * 2^23 + n
    const float n = big - 0x1.8p23f;
    float r = std::fma(n, -0.693145752f, x);  // ln2_hi: 0x3f317200
    r = std::fma(n, -1.42860677e-6f, r);      // ln2_lo = ln 2 - ln2_hi
    float p = 0.0013818296f;  // P(r), Horner, then 1 + r (1 + r P(r) ...)
    p = std::fma(p, r, 0.008368532f);
    p = std::fma(p, r, 0.041668292f);
    p = std::fma(p, r, 0.16666523f);
    p = std::fma(p, r, 0.49999994f);
    p = std::fma(p, r, 1.0f);
    p = std::fma(p, r, 1.0f);
    const int32_t k = static_cast<int32_t>(bits_of(big) - bits_of(0x1.8p23f));  // n, an integer
    const int32_t half = k >> 1;
    float e = p * float_of(static_cast<uint32_t>(half + 127) << 23) *
              float_of(static_cast<uint32_t>(k - half + 127) << 23);
    e = x < -104.0f ? 0.0f : e;  // (two selects: of one nested, g++ made a tangle of masks)
    return x > 89.0f ? std::numeric_limits<float>::infinity() : e;
}
// torch.exp: ours for a float (bfloat16 and float16 compute in float), glibc's vector exp for a
// double (and std::exp's type for anything else, as mc::vm::exp)
template <typename T> inline auto exp(T x) {
    if constexpr (std::is_same_v<T, float>) return exp_float(x); else return vm::exp(x);
}

// --- erf of a float: three short polynomials ---------------------------------------------------
//
// glibc's erff costs about two exps; this one about one and a half (torch.erf of 1024x1024
// floats on 2 cores: 350 us -> 255 us), within 1.14 ulp of the correctly rounded erf (see
// below). g++ vectorises it like any other loop body: every lane computes both regions and a
// select picks one, so a value gets the same bits in the 16 lanes of a loop's body and in its
// tail (explicit fused multiply-adds, IEEE operations only).
//
//   |x| < 1:           erf(x) = x + x * R(x^2)        R(s) ~ erf(sqrt s) / sqrt s - 1
//   1 <= |x| < 3.92:   erf(x) = +-(1 - 2^Q(|x|))      Q(t) ~ log2(erfc(t))
//   |x| >= 3.921875:   erf(x) = +-1                   (erfc(x) < 2^-25: half an ulp below 1)
//
// x + x * R, not x * (1 + R): one rounding, and a tiny (even subnormal) x keeps its relative
// accuracy; -0.0 stays -0.0. Outside, an error dQ costs only erfc(t) * ln 2 * dQ in erf (at
// most 0.11 dQ, at t = 1, and less and less further out), so a short Q does. 2^q (q in [-30, 0])
// is 2^n * 2^f: adding 1.5 * 2^23 rounds q to the integer n, which lands in the low bits of the
// sum; f = q - n (exact) is in [-1/2, 1/2], where E(f) ~ 2^f; 2^n is built from its bits.
// (Not glibc's exp: calling it, this erf was no faster than glibc's erff. Inline, and with q
// known to be in range, 2^q needs no checks for overflow, and no call spills the registers.)
//
// The coefficients: weighted minimax fits in float64 on 6000 Chebyshev nodes of each interval
// (Lawson's iteratively reweighted least squares), all of degree 6: R for the error relative
// to erf (weight x / erf(x)); Q for the error it makes in erf (weight erfc(t) / erf(t) * ln 2);
// E relative, E(0) = 1. Then rounded to float one coefficient at a time, refitting the ones not
// rounded yet (R from its constant up; Q from its t term up, its constant last; E from its f
// term up). Fit errors after rounding: R 0.024 ulp, Q 0.018 ulp, E 0.05 ulp (of 2^f; at most a
// sixth of that in erf).
// Against glibc's double erf, over every float: at most 1.14 ulp (at |x| = 1.044), 0.99 below
// |x| = 1; 99.3% of all floats correctly rounded, the others the next float.
inline float erf_float(float x) {
    const float t = std::fabs(x), s = x * x;
    float r = 7.806904e-05f;  // R(s), Horner
    r = std::fma(r, s, -0.0007997853f);
    r = std::fma(r, s, 0.005187162f);
    r = std::fma(r, s, -0.026853347f);
    r = std::fma(r, s, 0.11283579f);
    r = std::fma(r, s, -0.37612626f);
    r = std::fma(r, s, 0.12837917f);  // 2/sqrt(pi) - 1
    const float inner = std::fma(x, r, x);
    float q = 0.00026888784f;  // Q(t)
    q = std::fma(q, t, -0.004252565f);
    q = std::fma(q, t, 0.031505637f);
    q = std::fma(q, t, -0.14875154f);
    q = std::fma(q, t, -0.92064846f);
    q = std::fma(q, t, -1.626046f);
    q = std::fma(q, t, -0.00049272476f);
    q = t >= 3.921875f ? -30.0f : q;  // (+-inf too); 1 - 2^-30 rounds to 1
    const float big = q + 0x1.8p23f;  // 1.5 * 2^23 + n
    const float n = big - 0x1.8p23f, f = q - n;
    float e = 0.00015326463f;  // E(f)
    e = std::fma(e, f, 0.0013390806f);
    e = std::fma(e, f, 0.009618506f);
    e = std::fma(e, f, 0.0555036f);
    e = std::fma(e, f, 0.24022648f);
    e = std::fma(e, f, 0.6931472f);
    e = std::fma(e, f, 1.0f);
    e = e * float_of((bits_of(big) + 127u) << 23);  // * 2^n (the bits of 1.5 * 2^23 shift out)
    return t < 1.0f ? inner : std::copysign(1.0f - e, x);  // (a NaN x: e is NaN)
}
// torch.erf: our polynomials for a float (bfloat16 and float16 compute in float), glibc's
// vector erf for a double
template <typename T> inline T erf(T x) {
    if constexpr (std::is_same_v<T, float>) return erf_float(x); else return vm::erf(x);
}

// --- checks: an out-of-range index or a zero divisor fails the call, never reads memory ---------
//
// A kernel that checks (inductor/checks.py) declares one `mc::KernelError error;`, shared by its
// threads. The first check to fail records where (its site number), the value and the size; the
// loop goes on with a safe value (index 0, divisor 1), since a parallel loop cannot be left early,
// and the kernel returns 1. The caller then reads the record with `mc_kernel_error` (from the
// same thread: it is thread-local) and raises eager's error.
struct KernelError {
    int failed = 0;
    int64_t site = 0, value = 0, size = 0;
    int64_t finish();
};
inline thread_local int64_t last_error[3];
inline int64_t KernelError::finish() {
    if (!failed) return 0;
    last_error[0] = site, last_error[1] = value, last_error[2] = size;
    return 1;
}
// out of line and marked cold: the check in the loop is one compare and a never-taken branch
[[gnu::cold, gnu::noinline]] inline void fail(KernelError& error, int64_t site, int64_t value,
                                              int64_t size) {
    if (__atomic_exchange_n(&error.failed, 1, __ATOMIC_ACQ_REL) == 0)
        error.site = site, error.value = value, error.size = size;
}
// an index into a dimension of `size`: inside [0, size), else the error (eager: gather, embedding)
inline int64_t checked_index(int64_t i, int64_t size, KernelError& error, int64_t site) {
    if (__builtin_expect(i < 0 || i >= size, 0)) { fail(error, site, i, size); return 0; }
    return i;
}
// one that may count from the end (eager: x[i], x[-1] is x[size - 1])
inline int64_t wrapped_index(int64_t i, int64_t size, KernelError& error, int64_t site) {
    const int64_t j = i < 0 ? i + size : i;
    if (__builtin_expect(j < 0 || j >= size, 0)) { fail(error, site, i, size); return 0; }
    return j;
}
// an integer division's divisor: 0 is the error (eager: ZeroDivisionError), a float's is itself
template <typename T> inline T divisor(T b, KernelError& error, int64_t site) {
    if constexpr (std::is_integral_v<T>) {
        if (__builtin_expect(b == 0, 0)) { fail(error, site, 0, 0); return T(1); }
    }
    return b;
}

// --- ops whose C++ meaning differs from torch's -------------------------------------------------

// NaN wins, as in torch.maximum and amax (a NaN b is false, so b is picked when b is NaN).
// Two selects, the NaN test apart: written as one, (a > b || a != a) ? a : b (or with |), g++
// kept the test as branches and did not vectorise the loop; on random data every other branch
// mispredicted (a 3x3 max pool of 8x64x45x45 floats: 2.6 ms, 0.4 ms as two selects)
template <typename T> inline T maximum(T a, T b) { const T r = a > b ? a : b; return a != a ? a : r; }
template <typename T> inline T minimum(T a, T b) { const T r = a < b ? a : b; return a != a ? a : r; }

// log(exp(a) + exp(b)) from the larger, so that nothing overflows (logcumsumexp's step, as
// eager's _log_add_exp_helper): two equal infinities combine to themselves (inf - inf is NaN)
template <typename T> inline T logaddexp(T a, T b) {
    T low = minimum(a, b), high = maximum(a, b);
    if (low == high && std::isinf(low)) return a;
    return std::log1p(std::exp(low - high)) + high;
}

// The most negative integer divided by -1 overflows, and x86's divide instruction traps on it
// (SIGFPE): the quotient is the negation, wrapped as eager's result is, and the remainder 0.
template <typename T> inline bool overflows(T a, T b) {
    return std::is_signed_v<T> && b == T(-1) && a == std::numeric_limits<T>::min();
}
template <typename T> inline T floordiv(T a, T b) {  // Python's a // b
    if constexpr (std::is_integral_v<T>) {
        if (overflows(a, b)) return a;
        T q = a / b;
        return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    } else {
        return std::floor(a / b);
    }
}
template <typename T> inline T truncdiv(T a, T b) {  // C's a / b
    if constexpr (std::is_integral_v<T>) return overflows(a, b) ? a : a / b;
    else return std::trunc(a / b);
}
template <typename T> inline T fmod(T a, T b) {  // remainder with the sign of a (C)
    if constexpr (std::is_integral_v<T>) return overflows(a, b) ? T(0) : a % b;
    else return std::fmod(a, b);
}
template <typename T> inline T remainder(T a, T b) {  // remainder with the sign of b (Python)
    T r = mc::fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename T> inline T pow(T a, T b) {
    if constexpr (std::is_integral_v<T>) {  // exact integer power (torch.pow on ints)
        if (b < 0)  // as ATen's powi: 1 and -1 have integer reciprocals, the rest truncate to 0
            return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
        T result = 1;
        for (; b > 0; b >>= 1, a *= a) if (b & 1) result *= a;
        return result;
    } else {
        return vm::pow(a, b);
    }
}

// rounding ops are the identity on integers (std::floor(int) would return a double)
template <typename T> inline T floor(T x) { if constexpr (std::is_integral_v<T>) return x; else return std::floor(x); }
template <typename T> inline T ceil(T x) { if constexpr (std::is_integral_v<T>) return x; else return std::ceil(x); }
template <typename T> inline T trunc(T x) { if constexpr (std::is_integral_v<T>) return x; else return std::trunc(x); }
template <typename T> inline T round(T x) {  // half to even, like torch.round
    if constexpr (std::is_integral_v<T>) return x; else return std::nearbyint(x);
}
template <typename T> inline T abs(T x) { if constexpr (std::is_same_v<T, bool>) return x; else return x < 0 ? -x : x; }
template <typename T> inline T sign(T x) { return static_cast<T>((T(0) < x) - (x < T(0))); }
template <typename T> inline T relu(T x) { return x < T(0) ? T(0) : x; }  // NaN stays NaN
template <typename T> inline T sigmoid(T x) { return T(1) / (T(1) + mc::exp(-x)); }
template <typename T> inline T rsqrt(T x) { return T(1) / std::sqrt(x); }
template <typename T> inline T reciprocal(T x) { return T(1) / x; }
template <typename T> inline T bitwise_not(T x) { if constexpr (std::is_same_v<T, bool>) return !x; else return ~x; }
// & | ^ on two bools: C++ promotes both to int, so `~(a | b)` would be ~1, which is true; torch
// keeps a bool, and its ~ is a logical not
#define MC_BITWISE(name, op) \
    template <typename T, typename U> inline auto name(T a, U b) { \
        if constexpr (std::is_same_v<T, bool> && std::is_same_v<U, bool>) return static_cast<bool>(a op b); \
        else return a op b; \
    }
MC_BITWISE(bitwise_and, &) MC_BITWISE(bitwise_or, |) MC_BITWISE(bitwise_xor, ^)
#undef MC_BITWISE
// Shifts as ATen defines them (C++ leaves an amount outside [0, bits) undefined, and x86 takes it
// modulo the width): such a left shift is 0, such a right shift is the sign (0 unsigned). An
// amount is read as signed, as ATen reads it (a uint8 200 is -56). Left shifts run unsigned.
template <typename T, typename U> inline T bitwise_left_shift(T a, U b) {
    const auto s = static_cast<std::make_signed_t<U>>(b);
    if (s < 0 || s >= static_cast<int64_t>(sizeof(T) * 8)) return T(0);
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) << s);
}
template <typename T, typename U> inline T bitwise_right_shift(T a, U b) {
    constexpr int64_t bits = sizeof(T) * 8;
    const auto s = static_cast<std::make_signed_t<U>>(b);
    if (s < 0 || s >= bits) return std::is_signed_v<T> ? static_cast<T>(a < 0 ? -1 : 0) : T(0);
    return static_cast<T>(a >> s);
}
template <typename T> inline bool isnan(T x) { if constexpr (std::is_integral_v<T>) return false; else return std::isnan(x); }
template <typename T> inline bool isinf(T x) { if constexpr (std::is_integral_v<T>) return false; else return std::isinf(x); }

// --- accumulators of the reductions ------------------------------------------------------------

// argmax/argmin: the value and its flat position in the row; the first position wins a tie,
// and a NaN beats every number (torch.argmax returns the first NaN).
template <typename T> struct ArgAcc { T value; int64_t index; };

// whether value a at position i comes before value b at position j in argmax's order (argmin's:
// !is_max): a NaN first, then the larger (smaller) value, then the smaller position. Written
// with & and | on bools, not && and ||: without branches, g++ turns it into vector compares and
// blends in a lane's loop (with && and ||, into branches around masked stores, 2.5x slower)
template <bool is_max, typename T> inline bool arg_before(T a, int64_t i, T b, int64_t j) {
    const bool a_nan = mc::isnan(a), b_nan = mc::isnan(b), first = i < j;
    const bool wins = is_max ? a > b : a < b;
    return (a_nan & (!b_nan | first)) | (!a_nan & !b_nan & (wins | ((a == b) & first)));
}
template <typename T> inline ArgAcc<T> argmax_combine(ArgAcc<T> a, ArgAcc<T> b) {
    return arg_before<true>(a.value, a.index, b.value, b.index) ? a : b;
}
template <typename T> inline ArgAcc<T> argmin_combine(ArgAcc<T> a, ArgAcc<T> b) {
    return arg_before<false>(a.value, a.index, b.value, b.index) ? a : b;
}
// argmax/argmin in vector lanes (cpp_loops.lanes_loop): lane w keeps a value v and its position
// i in two arrays. Its elements come in the row's order, so an element replaces the lane's only
// if it is strictly larger (smaller), or the lane's first NaN: a tie keeps the earlier position.
// A lane starts at the lowest (highest) value and at its own first position (w), not at an
// empty one: a row of -inf reports the first of them as eager does. After the row the lanes are
// merged pairwise, in argmax's full order (arg_before).
template <bool is_max, typename T> inline void arg_lane(T& v, int64_t& i, T x, int64_t r) {
    const bool take = (is_max ? x > v : x < v) | (mc::isnan(x) & !mc::isnan(v));
    v = take ? x : v;
    i = take ? r : i;
}
template <bool is_max, typename T> inline void arg_merge(T& v, int64_t& i, T v2, int64_t i2) {
    const bool take = arg_before<is_max>(v2, i2, v, i);
    v = take ? v2 : v;
    i = take ? i2 : i;
}

// Welford's running (mean, m2, weight): one pass, no cancellation of sum(x^2) - sum(x)^2/n.
template <typename T> struct Welford { T mean = 0, m2 = 0, weight = 0; };

template <typename T> inline Welford<T> welford_add(Welford<T> acc, T x) {
    const T weight = acc.weight + 1, delta = x - acc.mean, mean = acc.mean + delta / weight;
    return {mean, acc.m2 + delta * (x - mean), weight};
}
template <typename T> inline Welford<T> welford_combine(Welford<T> a, Welford<T> b) {  // Chan et al.
    if (b.weight == 0) return a;
    const T weight = a.weight + b.weight, delta = b.mean - a.mean, frac = b.weight / weight;
    return {a.mean + delta * frac, a.m2 + b.m2 + delta * delta * a.weight * frac, weight};
}
template <typename T> inline T welford_mean(Welford<T> acc) {  // the mean of no elements is NaN
    return acc.weight == 0 ? std::numeric_limits<T>::quiet_NaN() : acc.mean;
}

// A scatter with accumulation (``ops.store(..., mode="atomic_add")``): points of a parallel loop
// may add into one element at once (``shared``: the loop runs on several threads). A float,
// double or integer adds atomically; a 16-bit float has no atomic add, so a compare-and-swap on
// its bits retries until no other thread wrote between its read and its write (Inductor's
// cpp_prefix.h ``atomic_add`` does the same). A lone thread adds plainly: an atomic costs a
// locked instruction per element, several times the add.
template <typename T> inline void atomic_add(T* addr, T value, bool shared) {
    if (!shared) {
        *addr += value;
        return;
    }
    #pragma omp atomic
    *addr += value;
}
template <typename H> inline void atomic_add_float(H* addr, float value, bool shared) {
    if (!shared) {
        store_float(*addr, load_float(*addr) + value);
        return;
    }
    uint16_t* bits = &addr->bits;
    uint16_t seen = __atomic_load_n(bits, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(bits, &seen, H::bits_from(H::to_float(seen) + value),
                                        true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

// A 16 x 16 block transposed in registers: out[j * 16 + i] = in[i * ld + j], for elements of
// B bytes (a C++ type of that size stands for them: the bits move, nothing is converted). A
// 2-D tile's read across its rows (cpp_ops.CppOpsHandler.tiled_read) loads 16 rows of 16
// consecutive elements as vectors and stores 16 such vectors, Inductor's ``transpose_mxn``;
// element by element, its copy gathered one cache line per element. Four butterfly stages:
// stage K swaps the off-diagonal K x K blocks of rows i and i + K (g++'s vector extensions
// make each a two-vector shuffle, one instruction where the vectors fit a register).
template <typename B> struct Rows16 {
    typedef B v __attribute__((vector_size(16 * sizeof(B))));
    typedef B m __attribute__((vector_size(16 * sizeof(B))));
};
template <int K, typename V, typename M> inline void transpose_stage(V* r) {
    M lo, hi;
    for (int j = 0; j < 16; j++) {
        lo[j] = (j & K) ? 16 + j - K : j;
        hi[j] = (j & K) ? 16 + j : j + K;
    }
    #pragma GCC unroll 16
    for (int i = 0; i < 16; i++) {
        if (i & K) continue;
        V a = r[i], b = r[i + K];
        r[i] = __builtin_shuffle(a, b, lo);
        r[i + K] = __builtin_shuffle(a, b, hi);
    }
}
template <typename B> inline void transpose16(const void* in, int64_t ld, void* out) {
    typedef typename Rows16<B>::v V;
    typedef typename Rows16<B>::m M;
    V r[16];
    #pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
        __builtin_memcpy(&r[i], static_cast<const char*>(in) + i * ld * sizeof(B), sizeof(V));
    transpose_stage<8, V, M>(r);
    transpose_stage<4, V, M>(r);
    transpose_stage<2, V, M>(r);
    transpose_stage<1, V, M>(r);
    #pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
        __builtin_memcpy(static_cast<char*>(out) + i * sizeof(V), &r[i], sizeof(V));
}

}  // namespace mc

// NaN-propagating max/min as OpenMP reductions (the built-in max/min drop NaNs), so that a
// `#pragma omp simd` or `parallel for` loop may keep one partial result per lane or thread.
#define MC_PRAGMA(text) _Pragma(#text)
#define MC_DECLARE_MINMAX(T)                                                                  \
    MC_PRAGMA(omp declare reduction(mc_max : T : omp_out = mc::maximum(omp_out, omp_in))     \
              initializer(omp_priv = mc::lowest<T>()))                       \
    MC_PRAGMA(omp declare reduction(mc_min : T : omp_out = mc::minimum(omp_out, omp_in))     \
              initializer(omp_priv = mc::highest<T>()))
MC_DECLARE_MINMAX(float)
MC_DECLARE_MINMAX(double)
MC_DECLARE_MINMAX(int64_t)
MC_DECLARE_MINMAX(int32_t)
MC_DECLARE_MINMAX(int16_t)
MC_DECLARE_MINMAX(int8_t)
MC_DECLARE_MINMAX(uint8_t)
MC_DECLARE_MINMAX(bool)

// the failed check of this thread's last kernel call: site, value, size
extern "C" void mc_kernel_error(int64_t* out) {
    std::memcpy(out, mc::last_error, sizeof(mc::last_error));
}

#endif  // MINICOMPILE_CPP_PREFIX_H
