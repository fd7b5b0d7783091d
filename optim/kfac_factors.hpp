// K-FAC's Kronecker factors of one layer (Martens and Grosse 2015, arXiv:1503.05671; for convolutions
// Grosse and Martens 2016, "A Kronecker-factored approximate Fisher matrix for convolution layers" (KFC),
// arXiv:1602.01407).
//
// Terms. A layer with weight W (rows = output channels or features, cols = C k k input patch elements or input
// features) maps input patches a_{n,t} to outputs s_{n,t} = W a_{n,t}, at the T spatial locations t of image n
// (T = 1 for a fully connected layer). The backward gives dy = dL/ds for the mean loss L = (1/N) sum_n l_n, so
// the per-example derivative is Ds_{n,t} = dl_n/ds_{n,t} = N dy_{n,t}. KFC approximates the Fisher block of W by
// Omega (x) Gamma with
//     Omega = (1/N) sum_n sum_t a_{n,t} a_{n,t}^T               (cols x cols; "A")
//     Gamma = (1/N) sum_n (1/T) sum_t Ds_{n,t} Ds_{n,t}^T       (rows x rows; "G")
//           = (N / T) sum_n sum_t dy_{n,t} dy_{n,t}^T
// For a fully connected layer these are Martens and Grosse's A = E[a a^T] and G = E[g g^T]. The patches are
// those of the convolution (im2col, zero outside the image), element c k k + r k + s for channel c and kernel
// offset (r, s), the order of the OIHW weight's columns. Biases are not folded in: bias and batch-norm tensors
// take the plain update (optim/kfac.hpp).
//
// Damping (Martens and Grosse 2015, section 6.3, factored Tikhonov): with gamma the damping and
//     pi = sqrt( (tr(Omega) / cols) / (tr(Gamma) / rows) ),
// the inverses are of Omega + pi sqrt(gamma) I and Gamma + (sqrt(gamma) / pi) I, computed by Cholesky
// factorisation in double precision. Then the preconditioned gradient of W is P = Gamma_d^-1 dW Omega_d^-1.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace dtbench::optim {

// What a backward hands K-FAC about one conv or fc layer: its input and the gradient of its output, as plain
// fp32 host arrays in NCHW order. A fully connected layer is a 1 x 1 convolution of a 1 x 1 image whose channels
// are the input features (an N x C x H x W input flattened in that order, as PyTorch does).
struct LayerActivity {
  size_t weight_offset = 0;   // the layer's weight tensor in the flat parameter buffer
  int n = 0;                  // images
  // The images N of the mean loss that dy differentiates; 0: n. Larger than n when the factors are estimated
  // from the first n images of the batch only: then Omega = (1/n) sum over them, Gamma = (N^2 / (n T)) sum dy dy^T.
  int batch = 0;
  const float* x = nullptr;   // n x in_c x in_h x in_w
  int in_c = 0, in_h = 1, in_w = 1;
  const float* dy = nullptr;  // n x out_c x out_h x out_w, the gradient of the mean loss
  int out_c = 0, out_h = 1, out_w = 1;
  int kernel = 1, stride = 1, pad = 0;
};

// Adds this activity's Omega and Gamma (as defined above, over its n images) to a (cols x cols) and
// g (rows x rows), row-major fp32. cols must be in_c kernel^2 and rows out_c.
void add_kronecker_factors(const LayerActivity& act, std::span<float> a, std::span<float> g);

// The im2col patches of images [first, first + count) of act as columns: (in_c kernel^2) x (count out_h out_w),
// row-major, column i out_h out_w + p out_w + q the patch of image first + i at output location (p, q).
void im2col(const LayerActivity& act, int first, int count, float* patches);

// The inverse of m + d I for a symmetric positive definite m + d I (dim x dim, row-major): by Cholesky
// factorisation in double. Returns false (inv untouched) when the factorisation meets a pivot <= 0.
bool damped_inverse(std::span<const double> m, size_t dim, double d, std::span<float> inv);

// The factored Tikhonov split of gamma (see the top): {pi sqrt(gamma), sqrt(gamma) / pi}, to add to Omega and
// Gamma. pi is 1 when either trace is not positive.
struct FactorDamping {
  double a = 0, g = 0;
};
FactorDamping factored_damping(std::span<const double> a, size_t cols, std::span<const double> g, size_t rows,
                               double gamma);

// c = alpha op(a) op(b) + beta c for row-major fp32 matrices (oneDNN's sgemm on blocks of rows, one thread each:
// the same bits for any thread count); op transposes when the flag is set. m x k times k x n.
void sgemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha, const float* a, const float* b,
           float beta, float* c);

}  // namespace dtbench::optim
