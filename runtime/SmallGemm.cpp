#include "runtime/SmallGemm.h"

#include "runtime/Blas.h"
#include "runtime/WorkerPool.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

// The vectors never cross a call (every helper is inlined), so GCC's note that passing them would differ
// between ISAs does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace tg::runtime {

namespace {

/// A vector of `Bytes` bytes: 32 (8 floats, 4 doubles; one AVX register, two SSE ones on a baseline CPU)
/// or 64 (one AVX-512 register).
template <typename T, int Bytes>
struct VecOf {
  typedef T type __attribute__((vector_size(Bytes)));
};
template <typename T, int Bytes = 32>
using Vec = typename VecOf<T, Bytes>::type;
template <typename T, int Bytes = 32>
constexpr int64_t kLanes = Bytes / static_cast<int64_t>(sizeof(T));

/// Below this many columns of c, the row form's vectors would be mostly empty.
constexpr int64_t kNarrow = 8;

template <typename T, int Bytes = 32>
[[gnu::always_inline]] inline Vec<T, Bytes> load(const T *from) {
  Vec<T, Bytes> v;
  std::memcpy(&v, from, sizeof v);
  return v;
}

template <typename T, int Bytes = 32>
[[gnu::always_inline]] inline void store(T *to, std::type_identity_t<Vec<T, Bytes>> v) {
  std::memcpy(to, &v, sizeof v);
}

/// The sum of a vector's lanes, halves added pairwise (a chain of log2(lanes) additions, in registers).
[[gnu::always_inline]] inline float laneSum(Vec<float> v) {
  auto quarter = __builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7);
  auto pair =
      __builtin_shufflevector(quarter, quarter, 0, 1) + __builtin_shufflevector(quarter, quarter, 2, 3);
  return pair[0] + pair[1];
}

[[gnu::always_inline]] inline double laneSum(Vec<double> v) {
  auto pair = __builtin_shufflevector(v, v, 0, 1) + __builtin_shufflevector(v, v, 2, 3);
  return pair[0] + pair[1];
}

/// The lane sums of kLanes vectors as one vector: lane r is the sum of acc[r]'s lanes (neighbours added
/// pairwise, then pairs, then halves: log2(lanes) shuffles and additions for all of them together).
[[gnu::always_inline]] inline Vec<float> laneSums(const Vec<float> (&acc)[8]) {
  auto pair = [](Vec<float> a, Vec<float> b) {
    return __builtin_shufflevector(a, b, 0, 8, 2, 10, 4, 12, 6, 14) +
           __builtin_shufflevector(a, b, 1, 9, 3, 11, 5, 13, 7, 15);
  };
  auto quad = [](Vec<float> p, Vec<float> q) {
    return __builtin_shufflevector(p, q, 0, 1, 8, 9, 4, 5, 12, 13) +
           __builtin_shufflevector(p, q, 2, 3, 10, 11, 6, 7, 14, 15);
  };
  Vec<float> low = quad(pair(acc[0], acc[1]), pair(acc[2], acc[3]));
  Vec<float> high = quad(pair(acc[4], acc[5]), pair(acc[6], acc[7]));
  return __builtin_shufflevector(low, high, 0, 1, 2, 3, 8, 9, 10, 11) +
         __builtin_shufflevector(low, high, 4, 5, 6, 7, 12, 13, 14, 15);
}

[[gnu::always_inline]] inline Vec<double> laneSums(const Vec<double> (&acc)[4]) {
  auto pair = [](Vec<double> a, Vec<double> b) {
    return __builtin_shufflevector(a, b, 0, 4, 2, 6) + __builtin_shufflevector(a, b, 1, 5, 3, 7);
  };
  Vec<double> low = pair(acc[0], acc[1]), high = pair(acc[2], acc[3]);
  return __builtin_shufflevector(low, high, 0, 1, 4, 5) + __builtin_shufflevector(low, high, 2, 3, 6, 7);
}

/// Memory for packed operands, kept by each thread from one call to the next.
template <typename T>
T *scratch(size_t count) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < count) buffer.resize(count);
  return buffer.data();
}

/// R rows of c from row i, V vectors of columns from column j, in registers: the sum over p of a[i + r, p]
/// times row p of b (contiguous, `ldb` apart).
template <typename T, int Bytes, int R, int V>
[[gnu::always_inline]] inline void rowTile(StridedMatrix<T> a, const T *b, int64_t ldb, T *c, int64_t m,
                                           int64_t k, int64_t i, int64_t j) {
  constexpr int64_t lanes = kLanes<T, Bytes>;
  Vec<T, Bytes> acc[R][V] = {};
  const T *ai = a.data + i * a.rowStride;
  for (int64_t p = 0; p < k; ++p) {
    Vec<T, Bytes> bp[V];
    for (int v = 0; v < V; ++v)
      bp[v] = load<T, Bytes>(b + p * ldb + j + v * lanes);
    for (int r = 0; r < R; ++r) {
      T x = ai[r * a.rowStride + p * a.colStride];
      for (int v = 0; v < V; ++v)
        acc[r][v] += x * bp[v];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v)
      store<T, Bytes>(c + (i + r) * m + j + v * lanes, acc[r][v]);
}

/// Rows i to i + R of c by the row form: four vectors of columns at a time (below four rows), two, then
/// one, then the last columns one by one.
template <typename T, int Bytes, int R>
[[gnu::always_inline]] inline void rowBlock(StridedMatrix<T> a, const T *b, int64_t ldb, T *c, int64_t m,
                                            int64_t k, int64_t i) {
  constexpr int64_t lanes = kLanes<T, Bytes>;
  int64_t j = 0;
  if constexpr (R < 4) // fewer rows, wider tiles: a dozen independent accumulators hide the adds' latency
    for (; j + 4 * lanes <= m; j += 4 * lanes)
      rowTile<T, Bytes, R, 4>(a, b, ldb, c, m, k, i, j);
  for (; j + 2 * lanes <= m; j += 2 * lanes)
    rowTile<T, Bytes, R, 2>(a, b, ldb, c, m, k, i, j);
  if (j + lanes <= m) {
    rowTile<T, Bytes, R, 1>(a, b, ldb, c, m, k, i, j);
    j += lanes;
  }
  if constexpr (Bytes > 32) // half a vector more
    if (j + lanes / 2 <= m) {
      rowTile<T, Bytes / 2, R, 1>(a, b, ldb, c, m, k, i, j);
      j += lanes / 2;
    }
  for (int64_t r = i; r < i + R; ++r)
    for (int64_t col = j; col < m; ++col) {
      T sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += a.data[r * a.rowStride + p * a.colStride] * b[p * ldb + col];
      c[r * m + col] = sum;
    }
}

/// The row form, for a c of kNarrow columns or more: row i of c is the sum over p of a[i, p] times row p of
/// b (contiguous, `ldb` apart), four rows and two vectors of columns at a time in registers.
template <typename T, int Bytes>
[[gnu::always_inline]] inline void rowForm(StridedMatrix<T> a, const T *b, int64_t ldb, T *c, int64_t n,
                                           int64_t m, int64_t k) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    rowBlock<T, Bytes, 4>(a, b, ldb, c, m, k, i);
  switch (n - i) {
  case 3:
    return rowBlock<T, Bytes, 3>(a, b, ldb, c, m, k, i);
  case 2:
    return rowBlock<T, Bytes, 2>(a, b, ldb, c, m, k, i);
  case 1:
    return rowBlock<T, Bytes, 1>(a, b, ldb, c, m, k, i);
  }
}

/// The dot product of x and y (k elements each, contiguous), over a vector's lanes.
template <typename T>
[[gnu::always_inline]] inline T dot(const T *x, const T *y, int64_t k) {
  Vec<T> acc = {};
  int64_t p = 0;
  for (; p + kLanes<T> <= k; p += kLanes<T>)
    acc += load(x + p) * load(y + p);
  T sum = laneSum(acc);
  for (; p < k; ++p)
    sum += x[p] * y[p];
  return sum;
}

/// Rows i to i + kLanes of column j of c by the dot form: one accumulator per row, their lane sums found
/// together (laneSums).
template <typename T>
[[gnu::always_inline]] inline void dotColumn(const T *a, int64_t lda, const T *bt, T *c, int64_t m, int64_t k,
                                             int64_t i, int64_t j) {
  constexpr int64_t lanes = kLanes<T>;
  Vec<T> acc[lanes] = {};
  const T *bj = bt + j * k;
  int64_t p = 0;
  for (; p + lanes <= k; p += lanes) {
    Vec<T> y = load(bj + p);
    for (int64_t r = 0; r < lanes; ++r)
      acc[r] += load(a + (i + r) * lda + p) * y;
  }
  Vec<T> sums = laneSums(acc);
  for (int64_t r = 0; r < lanes; ++r) {
    T sum = sums[r];
    for (int64_t rest = p; rest < k; ++rest)
      sum += a[(i + r) * lda + rest] * bj[rest];
    c[(i + r) * m + j] = sum;
  }
}

/// The dot form, for a c of fewer than kNarrow columns: c[i, j] is the dot product of row i of a
/// (contiguous, `lda` apart) and row j of bt, a vector's width of rows at a time.
template <typename T>
[[gnu::always_inline]] inline void dotForm(const T *a, int64_t lda, const T *bt, T *c, int64_t n, int64_t m,
                                           int64_t k) {
  int64_t i = 0;
  for (; i + kLanes<T> <= n; i += kLanes<T>)
    for (int64_t j = 0; j < m; ++j)
      dotColumn(a, lda, bt, c, m, k, i, j);
  for (; i < n; ++i) // the last rows, fewer than a vector's width
    for (int64_t j = 0; j < m; ++j)
      c[i * m + j] = dot(a + i * lda, bt + j * k, k);
}

/// Copies `source` (rows x cols, any strides) to `target` in C order.
template <typename T>
[[gnu::always_inline]] inline void pack(StridedMatrix<T> source, T *target, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      target[i * cols + j] = source.data[i * source.rowStride + j * source.colStride];
}

/// Picks the form that reads both operands in order: the row form when c is wide (b packed unless its rows
/// are contiguous), the row form on the transposed product when c is narrow and a's columns are contiguous
/// (c^T = b^T a^T, then c^T transposed into c), else the dot form (b^T packed, a packed unless its rows are
/// contiguous).
template <typename T, int Bytes>
[[gnu::always_inline]] inline void gemm(StridedMatrix<T> a, StridedMatrix<T> b, T *c, int64_t n, int64_t m,
                                        int64_t k) {
  if (k == 0) {
    std::fill_n(c, n * m, T(0));
    return;
  }
  if (m >= kNarrow) {
    if (b.colStride == 1) return rowForm<T, Bytes>(a, b.data, b.rowStride, c, n, m, k);
    T *packed = scratch<T>(static_cast<size_t>(k * m));
    pack(b, packed, k, m);
    return rowForm<T, Bytes>(a, packed, m, c, n, m, k);
  }
  if (a.rowStride == 1 && n >= kNarrow) {
    T *transposed = scratch<T>(static_cast<size_t>(m * n));
    rowForm<T, Bytes>(StridedMatrix<T>{b.data, b.colStride, b.rowStride}, a.data, a.colStride, transposed, m,
                      n, k);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j)
        c[i * m + j] = transposed[j * n + i];
    return;
  }
  bool packA = a.colStride != 1;
  T *bt = scratch<T>(static_cast<size_t>(m * k + (packA ? n * k : 0)));
  pack(StridedMatrix<T>{b.data, b.colStride, b.rowStride}, bt, m, k);
  if (!packA) return dotForm(a.data, a.rowStride, bt, c, n, m, k);
  T *rows = bt + m * k;
  pack(a, rows, n, k);
  dotForm(rows, k, bt, c, n, m, k);
}

// The same code compiled three times; the first the CPU runs is called.
template <typename T>
[[gnu::target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,bmi2")]] void
gemmAvx512(StridedMatrix<T> a, StridedMatrix<T> b, T *c, int64_t n, int64_t m, int64_t k) {
  gemm<T, 64>(a, b, c, n, m, k);
}

template <typename T>
[[gnu::target("avx2,fma,bmi2")]] void gemmAvx2(StridedMatrix<T> a, StridedMatrix<T> b, T *c, int64_t n,
                                               int64_t m, int64_t k) {
  gemm<T, 32>(a, b, c, n, m, k);
}

template <typename T>
void gemmBaseline(StridedMatrix<T> a, StridedMatrix<T> b, T *c, int64_t n, int64_t m, int64_t k) {
  gemm<T, 32>(a, b, c, n, m, k);
}

enum class Isa { Avx512, Avx2, Baseline };

Isa cpuIsa() {
  static const Isa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
      return Isa::Avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::Avx2;
    return Isa::Baseline;
  }();
  return isa;
}

template <typename T>
void dispatch(StridedMatrix<T> a, StridedMatrix<T> b, T *c, int64_t n, int64_t m, int64_t k) {
  switch (cpuIsa()) {
  case Isa::Avx512:
    return gemmAvx512(a, b, c, n, m, k);
  case Isa::Avx2:
    return gemmAvx2(a, b, c, n, m, k);
  case Isa::Baseline:
    return gemmBaseline(a, b, c, n, m, k);
  }
}

} // namespace

bool isSmallGemm(ir::DType dtype, int64_t n, int64_t m, int64_t k) {
  auto volume = static_cast<double>(n) * static_cast<double>(m) * static_cast<double>(k);
  bool libraryHasSmallKernels = dtype == ir::DType::F64 && blasHasSmallMatrixKernels();
  return (volume <= 96.0 * 96 * 96 && !libraryHasSmallKernels) || (k <= 16 && m >= 16);
}

namespace {

/// The rows of c split between the host threads when the product is large enough (the same code for
/// each range of rows).
template <typename T>
void splitRows(StridedMatrix<T> a, StridedMatrix<T> b, T *c, int64_t n, int64_t m, int64_t k) {
  double work =
      static_cast<double>(n) * static_cast<double>(m) * static_cast<double>(std::max<int64_t>(k, 1));
  int64_t threads =
      std::min<int64_t>({hostThreads(), static_cast<int64_t>(work / kMultiplyAddsPerThread), n});
  if (threads <= 1) return dispatch(a, b, c, n, m, k);
  parallelFor(threads, [&](int64_t t) {
    int64_t begin = n * t / threads, end = n * (t + 1) / threads;
    dispatch(StridedMatrix<T>{a.data + begin * a.rowStride, a.rowStride, a.colStride}, b, c + begin * m,
             end - begin, m, k);
  });
}

} // namespace

void smallGemm(StridedMatrix<float> a, StridedMatrix<float> b, float *c, int64_t n, int64_t m, int64_t k) {
  splitRows(a, b, c, n, m, k);
}

void smallGemm(StridedMatrix<double> a, StridedMatrix<double> b, double *c, int64_t n, int64_t m, int64_t k) {
  splitRows(a, b, c, n, m, k);
}

} // namespace tg::runtime
