// Double-precision reference forwards of every layer, written from the textbook definitions with plain loops
// over plain NCHW (N x C x H x W row-major) arrays, and a central finite-difference gradient.
//
// The tests run each oneDNN layer in fp32 on inputs that are exactly representable in fp32, compare its
// forward with these references, and compare its backward with the finite differences of the scalar
// L(x, w) = sum_j dy_j * f(x, w)_j, whose gradient is exactly what a backward pass computes from dy.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace dtbench::test {

using Vec = std::vector<double>;

struct Dims4 {
  int n, c, h, w;
  size_t size() const { return size_t(n) * size_t(c) * size_t(h) * size_t(w); }
  size_t at(int a, int b, int y, int x) const { return ((size_t(a) * c + size_t(b)) * h + size_t(y)) * w + size_t(x); }
};

// y[n,k,p,q] = b[k] + sum_{c,r,s} w[k,c,r,s] x[n,c,p*stride-pad+r,q*stride-pad+s]
inline Vec conv2d(const Vec& x, Dims4 xd, const Vec& w, const Vec* bias, int out_c, int kernel, int stride, int pad,
                  Dims4* yd_out = nullptr) {
  const int P = (xd.h + 2 * pad - kernel) / stride + 1, Q = (xd.w + 2 * pad - kernel) / stride + 1;
  Dims4 yd{xd.n, out_c, P, Q};
  if (yd_out) *yd_out = yd;
  Vec y(yd.size(), 0.0);
  for (int n = 0; n < xd.n; ++n)
    for (int k = 0; k < out_c; ++k)
      for (int p = 0; p < P; ++p)
        for (int q = 0; q < Q; ++q) {
          double acc = bias ? (*bias)[size_t(k)] : 0.0;
          for (int c = 0; c < xd.c; ++c)
            for (int r = 0; r < kernel; ++r)
              for (int s = 0; s < kernel; ++s) {
                const int iy = p * stride - pad + r, ix = q * stride - pad + s;
                if (iy < 0 || iy >= xd.h || ix < 0 || ix >= xd.w) continue;
                acc += w[((size_t(k) * xd.c + size_t(c)) * kernel + size_t(r)) * kernel + size_t(s)] * x[xd.at(n, c, iy, ix)];
              }
          y[yd.at(n, k, p, q)] = acc;
        }
  return y;
}

// Training-mode batch norm with batch statistics (biased variance), optionally followed by ReLU.
inline Vec batch_norm_train(const Vec& x, Dims4 d, const Vec& gamma, const Vec& beta, double eps, bool relu,
                            Vec* mean_out = nullptr, Vec* var_out = nullptr) {
  Vec y(x.size());
  const double m = double(d.n) * d.h * d.w;
  if (mean_out) mean_out->assign(size_t(d.c), 0.0);
  if (var_out) var_out->assign(size_t(d.c), 0.0);
  for (int c = 0; c < d.c; ++c) {
    double mean = 0.0, var = 0.0;
    for (int n = 0; n < d.n; ++n)
      for (int i = 0; i < d.h; ++i)
        for (int j = 0; j < d.w; ++j) mean += x[d.at(n, c, i, j)];
    mean /= m;
    for (int n = 0; n < d.n; ++n)
      for (int i = 0; i < d.h; ++i)
        for (int j = 0; j < d.w; ++j) var += (x[d.at(n, c, i, j)] - mean) * (x[d.at(n, c, i, j)] - mean);
    var /= m;
    if (mean_out) (*mean_out)[size_t(c)] = mean;
    if (var_out) (*var_out)[size_t(c)] = var;
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int n = 0; n < d.n; ++n)
      for (int i = 0; i < d.h; ++i)
        for (int j = 0; j < d.w; ++j) {
          double v = gamma[size_t(c)] * (x[d.at(n, c, i, j)] - mean) * inv + beta[size_t(c)];
          y[d.at(n, c, i, j)] = relu ? std::max(v, 0.0) : v;
        }
  }
  return y;
}

// Inference-mode batch norm with given statistics.
inline Vec batch_norm_eval(const Vec& x, Dims4 d, const Vec& gamma, const Vec& beta, const Vec& mean, const Vec& var,
                           double eps, bool relu) {
  Vec y(x.size());
  for (int n = 0; n < d.n; ++n)
    for (int c = 0; c < d.c; ++c)
      for (int i = 0; i < d.h; ++i)
        for (int j = 0; j < d.w; ++j) {
          const size_t k = d.at(n, c, i, j);
          double v = gamma[size_t(c)] * (x[k] - mean[size_t(c)]) / std::sqrt(var[size_t(c)] + eps) + beta[size_t(c)];
          y[k] = relu ? std::max(v, 0.0) : v;
        }
  return y;
}

inline Vec relu(const Vec& x) {
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = std::max(x[i], 0.0);
  return y;
}

// Max over kernel x kernel windows; padded positions are ignored (never the maximum).
inline Vec max_pool(const Vec& x, Dims4 d, int kernel, int stride, int pad, Dims4* yd_out = nullptr) {
  const int P = (d.h + 2 * pad - kernel) / stride + 1, Q = (d.w + 2 * pad - kernel) / stride + 1;
  Dims4 yd{d.n, d.c, P, Q};
  if (yd_out) *yd_out = yd;
  Vec y(yd.size());
  for (int n = 0; n < d.n; ++n)
    for (int c = 0; c < d.c; ++c)
      for (int p = 0; p < P; ++p)
        for (int q = 0; q < Q; ++q) {
          double best = -std::numeric_limits<double>::infinity();
          for (int r = 0; r < kernel; ++r)
            for (int s = 0; s < kernel; ++s) {
              const int iy = p * stride - pad + r, ix = q * stride - pad + s;
              if (iy < 0 || iy >= d.h || ix < 0 || ix >= d.w) continue;
              best = std::max(best, x[d.at(n, c, iy, ix)]);
            }
          y[yd.at(n, c, p, q)] = best;
        }
  return y;
}

// N x C x H x W -> N x C.
inline Vec global_avg_pool(const Vec& x, Dims4 d) {
  Vec y(size_t(d.n) * size_t(d.c), 0.0);
  for (int n = 0; n < d.n; ++n)
    for (int c = 0; c < d.c; ++c) {
      double s = 0.0;
      for (int i = 0; i < d.h; ++i)
        for (int j = 0; j < d.w; ++j) s += x[d.at(n, c, i, j)];
      y[size_t(n) * size_t(d.c) + size_t(c)] = s / (double(d.h) * d.w);
    }
  return y;
}

// x: N x I, w: O x I, b: O -> N x O.
inline Vec linear(const Vec& x, int n, int in, const Vec& w, const Vec& b, int out) {
  Vec y(size_t(n) * size_t(out));
  for (int i = 0; i < n; ++i)
    for (int o = 0; o < out; ++o) {
      double acc = b[size_t(o)];
      for (int k = 0; k < in; ++k) acc += w[size_t(o) * size_t(in) + size_t(k)] * x[size_t(i) * size_t(in) + size_t(k)];
      y[size_t(i) * size_t(out) + size_t(o)] = acc;
    }
  return y;
}

// Mean over the batch of -sum_k q_k log softmax(z)_k, q = (1 - eps) onehot(label) + eps / K.
inline double softmax_cross_entropy(const Vec& z, int n, int k, const std::vector<int32_t>& labels, double eps) {
  double total = 0.0;
  for (int i = 0; i < n; ++i) {
    const double* row = z.data() + size_t(i) * size_t(k);
    const double zmax = *std::max_element(row, row + k);
    double s = 0.0;
    for (int j = 0; j < k; ++j) s += std::exp(row[j] - zmax);
    const double lse = zmax + std::log(s);
    for (int j = 0; j < k; ++j) {
      const double q = (j == labels[size_t(i)] ? 1.0 - eps : 0.0) + eps / k;
      total -= q * (row[j] - lse);
    }
  }
  return total / n;
}

inline double dot(const Vec& a, const Vec& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Central differences (f(v + h e_i) - f(v - h e_i)) / 2h for every i. Truncation error O(h^2 f'''), rounding
// error O(eps_double |f| / h).
inline Vec fd_gradient(const std::function<double(const Vec&)>& f, Vec v, double h) {
  Vec g(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    v[i] = keep + h;
    const double up = f(v);
    v[i] = keep - h;
    const double down = f(v);
    v[i] = keep;
    g[i] = (up - down) / (2.0 * h);
  }
  return g;
}

// max_i |a_i - b_i| / max_i |b_i|: the error relative to the tensor's scale.
template <class A>
double rel_max_err(const A& a, const Vec& b) {
  double err = 0.0, scale = 0.0;
  for (size_t i = 0; i < b.size(); ++i) {
    err = std::max(err, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return scale > 0.0 ? err / scale : err;
}

}  // namespace dtbench::test
