#include "optim/kfac_factors.hpp"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.h>

namespace dtbench::optim {

namespace {

// The rows of C one call computes. oneDNN's sgemm may split the inner dimension k among its threads on some CPUs
// (AVX2: K-FAC's results then changed with the thread count, and X^T X was not exactly symmetric); each call here
// runs on one thread (inside this parallel region oneDNN does not start more), on a block fixed by the shapes
// alone, so the sums, and the results, are the same bits for any thread count.
constexpr size_t kRowBlock = 32;

void sgemm_block(char ta, char tb, size_t m, size_t n, size_t k, float alpha, const float* a, dnnl_dim_t lda,
                 const float* b, dnnl_dim_t ldb, float beta, float* c, dnnl_dim_t ldc) {
  const dnnl_status_t s = dnnl_sgemm(ta, tb, dnnl_dim_t(m), dnnl_dim_t(n), dnnl_dim_t(k), alpha, a, lda, b, ldb, beta,
                                     c, ldc);
  if (s != dnnl_success) throw std::runtime_error("dnnl_sgemm failed with status " + std::to_string(int(s)));
}

// Runs body(b) for each block b in [0, count) on the OpenMP threads, each block on one thread. An exception may not
// leave a parallel region: the first is kept and thrown after it.
template <class Body>
void for_each_block(int64_t count, const Body& body) {
  std::string error;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t b = 0; b < count; ++b) {
    try {
      body(b);
    } catch (const std::exception& e) {
#pragma omp critical
      if (error.empty()) error = e.what();
    }
  }
  if (!error.empty()) throw std::runtime_error(error);
}

}  // namespace

void sgemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha, const float* a, const float* b,
           float beta, float* c) {
  const auto lda = static_cast<dnnl_dim_t>(trans_a ? m : k);
  const auto ldb = static_cast<dnnl_dim_t>(trans_b ? k : n);
  for_each_block(int64_t((m + kRowBlock - 1) / kRowBlock), [&](int64_t blk) {
    const size_t i = size_t(blk) * kRowBlock, rows = std::min(kRowBlock, m - i);
    // Rows i.. of op(a): a row block of a, or a column block of a stored transposed.
    const float* ai = trans_a ? a + i : a + i * k;
    sgemm_block(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', rows, n, k, alpha, ai, lda, b, ldb, beta, c + i * n,
                dnnl_dim_t(n));
  });
}

namespace {

// The lower triangle to the upper, inside the diagonal blocks too, where sgemm's rounding of (i, j) and (j, i)
// may differ: the factors are then exactly symmetric.
void mirror_lower(float* a, size_t dim) {
  for (size_t i = 0; i < dim; ++i)
    for (size_t j = i + 1; j < dim; ++j) a[i * dim + j] = a[j * dim + i];
}

// a += alpha m m^T for a symmetric dim x dim a and m dim x width, stored row-major, or with `transposed` stored as
// its transpose (width x dim row-major: X^T X for a fully connected layer's input rows X). Only the blocks on and
// below the diagonal are multiplied (about half the work of one sgemm for large dim), each on one thread (see
// kRowBlock), then the lower triangle mirrored.
void add_gram(const float* m, bool transposed, size_t dim, size_t width, float alpha, float* a) {
  std::vector<std::pair<size_t, size_t>> blocks;
  for (size_t i = 0; i < dim; i += kRowBlock)
    for (size_t j = 0; j <= i; j += kRowBlock) blocks.emplace_back(i, j);
  for_each_block(int64_t(blocks.size()), [&](int64_t b) {
    const auto [i, j] = blocks[size_t(b)];
    const size_t bi = std::min(kRowBlock, dim - i), bj = std::min(kRowBlock, dim - j);
    if (transposed)  // rows i.. and j.. of m are columns i.. and j.. of what is stored
      sgemm_block('T', 'N', bi, bj, width, alpha, m + i, dnnl_dim_t(dim), m + j, dnnl_dim_t(dim), 1.0f,
                  a + i * dim + j, dnnl_dim_t(dim));
    else
      sgemm_block('N', 'T', bi, bj, width, alpha, m + i * width, dnnl_dim_t(width), m + j * width,
                  dnnl_dim_t(width), 1.0f, a + i * dim + j, dnnl_dim_t(dim));
  });
  mirror_lower(a, dim);
}

}  // namespace

void im2col(const LayerActivity& act, int first, int count, float* patches) {
  // Row j = c k^2 + r k + s holds input channel c shifted by kernel offset (r, s) at every output location of
  // every image, so each row is written in runs along q; rows are independent and spread over the threads.
  const int kk = act.kernel * act.kernel;
  const int64_t rows = int64_t(act.in_c) * kk;
  const size_t locations = size_t(act.out_h) * size_t(act.out_w);
  const size_t image = size_t(act.in_c) * size_t(act.in_h) * size_t(act.in_w);
  const size_t width = size_t(count) * locations;
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < rows; ++j) {
    const int c = int(j / kk), r = int(j % kk) / act.kernel, s = int(j % kk) % act.kernel;
    // The output columns q whose input column q stride - pad + s lies inside the image: [q0, q1).
    int q0 = 0;
    while (q0 < act.out_w && q0 * act.stride - act.pad + s < 0) ++q0;
    int q1 = act.out_w;
    while (q1 > q0 && (q1 - 1) * act.stride - act.pad + s >= act.in_w) --q1;
    for (int i = 0; i < count; ++i) {
      const float* x = act.x + size_t(first + i) * image + size_t(c) * size_t(act.in_h) * size_t(act.in_w);
      float* out = patches + size_t(j) * width + size_t(i) * locations;
      for (int p = 0; p < act.out_h; ++p) {
        float* o = out + size_t(p) * size_t(act.out_w);
        const int h = p * act.stride - act.pad + r;
        if (h < 0 || h >= act.in_h) {
          std::fill(o, o + act.out_w, 0.0f);
          continue;
        }
        // Input column q stride - pad + s of row h (signed: the offset is formed only for q inside the image).
        const float* xr = x + size_t(h) * size_t(act.in_w);
        const std::ptrdiff_t shift = std::ptrdiff_t(s) - act.pad;
        std::fill(o, o + q0, 0.0f);
        for (int q = q0; q < q1; ++q) o[q] = xr[std::ptrdiff_t(q) * act.stride + shift];
        std::fill(o + q1, o + act.out_w, 0.0f);
      }
    }
  }
}

void add_kronecker_factors(const LayerActivity& act, std::span<float> a, std::span<float> g) {
  const size_t cols = size_t(act.in_c) * size_t(act.kernel) * size_t(act.kernel);
  const size_t rows = size_t(act.out_c);
  const size_t locations = size_t(act.out_h) * size_t(act.out_w);
  if (a.size() != cols * cols || g.size() != rows * rows || act.n < 1)
    throw std::invalid_argument("add_kronecker_factors: factor sizes do not match the layer");
  const float n = static_cast<float>(act.n);
  const float batch = static_cast<float>(act.batch > 0 ? act.batch : act.n);  // N, which scales Ds = N dy

  if (locations == 1 && act.in_h == 1 && act.in_w == 1 && act.kernel == 1 && act.pad == 0) {
    // Fully connected (or a 1 x 1 image): the patches are the input rows, Omega = X^T X / N.
    add_gram(act.x, true, cols, size_t(act.n), 1.0f / n, a.data());
  } else {
    // Omega = P P^T / N over the patch columns of a few images at a time (at most about 4 MiB of patches).
    const size_t per_image = locations * cols;
    const int chunk = static_cast<int>(std::max<size_t>(1, (size_t(1) << 20) / std::max<size_t>(per_image, 1)));
    std::vector<float> patches(size_t(std::min(chunk, act.n)) * per_image);
    for (int first = 0; first < act.n; first += chunk) {
      const int count = std::min(chunk, act.n - first);
      im2col(act, first, count, patches.data());
      add_gram(patches.data(), false, cols, size_t(count) * locations, 1.0f / n, a.data());
    }
  }

  // Gamma = (N^2 / (n T)) D D^T with D = rows x (n T), image i's dy (rows x T) in columns [i T, (i + 1) T).
  const size_t width = size_t(act.n) * locations;
  std::vector<float> d(rows * width);
  for (size_t k = 0; k < rows; ++k)
    for (int i = 0; i < act.n; ++i)
      std::copy_n(act.dy + (size_t(i) * rows + k) * locations, locations, d.data() + k * width + size_t(i) * locations);
  add_gram(d.data(), false, rows, width, batch * batch / (n * static_cast<float>(locations)), g.data());
}

FactorDamping factored_damping(std::span<const double> a, size_t cols, std::span<const double> g, size_t rows,
                               double gamma) {
  double ta = 0, tg = 0;
  for (size_t i = 0; i < cols; ++i) ta += a[i * cols + i];
  for (size_t i = 0; i < rows; ++i) tg += g[i * rows + i];
  double pi = 1.0;
  if (ta > 0 && tg > 0) pi = std::sqrt((ta / double(cols)) / (tg / double(rows)));
  const double root = std::sqrt(gamma);
  return {pi * root, root / pi};
}

bool damped_inverse(std::span<const double> m, size_t dim, double d, std::span<float> inv) {
  // L L^T = m + d I (lower triangle of l), then L^-1 by forward substitution, then inv = L^-T L^-1.
  std::vector<double> l(dim * dim, 0.0);
  for (size_t j = 0; j < dim; ++j) {
    double diag = m[j * dim + j] + d;
    for (size_t k = 0; k < j; ++k) diag -= l[j * dim + k] * l[j * dim + k];
    if (!(diag > 0)) return false;
    const double ljj = std::sqrt(diag);
    l[j * dim + j] = ljj;
    for (size_t i = j + 1; i < dim; ++i) {
      double s = m[i * dim + j];  // symmetric: the lower triangle is read
      for (size_t k = 0; k < j; ++k) s -= l[i * dim + k] * l[j * dim + k];
      l[i * dim + j] = s / ljj;
    }
  }
  std::vector<double> li(dim * dim, 0.0);  // L^-1, lower triangular
  for (size_t j = 0; j < dim; ++j) {
    li[j * dim + j] = 1.0 / l[j * dim + j];
    for (size_t i = j + 1; i < dim; ++i) {
      double s = 0;
      for (size_t k = j; k < i; ++k) s += l[i * dim + k] * li[k * dim + j];
      li[i * dim + j] = -s / l[i * dim + i];
    }
  }
  // inv[i][j] = sum_k li[k][i] li[k][j] over k >= max(i, j).
  for (size_t i = 0; i < dim; ++i)
    for (size_t j = 0; j <= i; ++j) {
      double s = 0;
      for (size_t k = i; k < dim; ++k) s += li[k * dim + i] * li[k * dim + j];
      inv[i * dim + j] = inv[j * dim + i] = static_cast<float>(s);
    }
  return true;
}

}  // namespace dtbench::optim
