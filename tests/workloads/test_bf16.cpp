// bf16 mixed precision: bf16 activations and weights in every primitive; fp32 master weights, gradients,
// batch-norm statistics, logits and loss. Compared with the fp32 model from the same weights and batch.
//
// bf16 keeps 8 significant bits: each rounding has relative error up to 2^-9 = 0.2%. The forward is well
// conditioned: logits agree to about 1e-2 of the largest logit and the loss to 5e-4 (observed, ResNet-8/20,
// batch 16); we allow 3e-2 and 1e-2 (relative). The gradients of a freshly initialised ResNet are not: a
// batch-norm backward subtracts projections of dy from dy, and the remainders are small, so tiny changes of
// the activations move the gradients of the early layers a lot. The yardstick is measured in the same test:
// the fp32 model with only its weights and input rounded to bf16 (one rounding each, all arithmetic in fp32)
// already moves the gradients by 8% (ResNet-8) and 20% (ResNet-20) in relative norm over all tensors, up to
// 15% and 44% for the worst tensor. Full bf16 compute moves them 1.2 to 1.5 times as much (observed). We
// require at most twice the yardstick, over all gradients and for the worst tensor, and 2e-2 relative norm
// on the last fully connected layer's weight gradient, which no batch norm precedes in the backward. A wrong
// conversion or layout gives errors of order 1 in the forward as well.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/rng.hpp"
#include "tests/workloads/needs_bf16.hpp"
#include "workloads/cpu/model.hpp"

namespace dtbench::test {
namespace {

// Round to nearest even, as oneDNN converts fp32 to bf16.
float round_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  bits &= 0xffff0000u;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

struct Result {
  double loss;
  std::vector<float> logits, grads;
};

Result run(const models::ModelSpec& spec, const std::vector<float>& x, const std::vector<int32_t>& labels, int n,
           bool round_weights) {
  cpu::Model m(spec, 21);
  if (round_weights) {
    for (float& w : m.params()) w = round_to_bf16(w);
  }
  Result r;
  r.loss = m.forward(x.data(), labels.data(), n, true);
  r.logits.assign(m.logits(), m.logits() + n * spec.classes);
  m.backward();
  r.grads.assign(m.grads().begin(), m.grads().end());
  return r;
}

struct GradError {
  double all = 0.0, worst = 0.0, fc = 0.0;
};

GradError grad_error(const std::vector<models::ParamInfo>& table, const Result& ref, const Result& other) {
  GradError e;
  double d_all = 0.0, r_all = 0.0;
  for (const auto& t : table) {
    double d2 = 0.0, r2 = 0.0;
    for (size_t k = t.offset; k < t.offset + t.size; ++k) {
      const double d = double(other.grads[k]) - ref.grads[k];
      d2 += d * d, r2 += double(ref.grads[k]) * ref.grads[k];
    }
    d_all += d2, r_all += r2;
    e.worst = std::max(e.worst, std::sqrt(d2 / r2));
    if (t.kind == models::ParamInfo::fc_weight && &t == &table[table.size() - 2]) e.fc = std::sqrt(d2 / r2);
  }
  e.all = std::sqrt(d_all / r_all);
  return e;
}

void compare(const std::string& arch, int n, int hidden = 0) {
  models::ModelSpec spec;
  spec.arch = arch;
  spec.in_c = 1, spec.in_h = 28, spec.in_w = 28, spec.classes = 10;
  spec.hidden = hidden;
  Rng rng(3);
  std::vector<float> x(size_t(n) * 784);
  for (float& v : x) v = float(rng.normal());
  std::vector<int32_t> labels;
  for (int i = 0; i < n; ++i) labels.push_back(int32_t(rng.below(10)));
  std::vector<float> x_rounded = x;
  for (float& v : x_rounded) v = round_to_bf16(v);

  const Result f = run(spec, x, labels, n, false);
  const Result yardstick = run(spec, x_rounded, labels, n, true);
  models::ModelSpec bspec = spec;
  bspec.precision = "bf16";
  const Result b = run(bspec, x, labels, n, false);

  EXPECT_NEAR(b.loss, f.loss, 1e-2 * f.loss) << arch;
  double err = 0.0, scale = 0.0;
  for (size_t i = 0; i < f.logits.size(); ++i) {
    err = std::max(err, double(std::abs(b.logits[i] - f.logits[i])));
    scale = std::max(scale, double(std::abs(f.logits[i])));
  }
  EXPECT_LE(err / scale, 3e-2) << arch;

  const cpu::Model layout(spec, 21);
  const auto& table = layout.param_table();
  const GradError ye = grad_error(table, f, yardstick), be = grad_error(table, f, b);
  EXPECT_GT(ye.all, 0.0);
  EXPECT_LE(be.all, 2.0 * ye.all) << arch;
  EXPECT_LE(be.worst, 2.0 * ye.worst) << arch;
  EXPECT_LE(be.fc, 2e-2) << arch;
  std::printf("[%s] loss fp32 %.6f bf16 %.6f; logits %.2e; gradients (relative norm) all %.3f (yardstick %.3f), "
              "worst tensor %.3f (%.3f), fc weight %.2e\n",
              arch.c_str(), f.loss, b.loss, err / scale, be.all, ye.all, be.worst, ye.worst, be.fc);
}

TEST(Bf16, ResNet8AgreesWithFp32) {
  DTBENCH_SKIP_WITHOUT_BF16();
  compare("resnet8", 16);
}
TEST(Bf16, ResNet20AgreesWithFp32) {
  DTBENCH_SKIP_WITHOUT_BF16();
  compare("resnet20", 16);
}
TEST(Bf16, MlpAgreesWithFp32) {
  DTBENCH_SKIP_WITHOUT_BF16();
  compare("mlp", 16, 64);
}

}  // namespace
}  // namespace dtbench::test
