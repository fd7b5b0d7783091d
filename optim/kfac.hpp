// K-FAC: Kronecker-factored approximate curvature (Martens and Grosse 2015; Grosse and Martens 2016 for
// convolutions; the factors, damping and inverses are in kfac_factors.hpp).
//
// Every conv and fc weight W is preconditioned by its layer's damped Kronecker factors; every other tensor (bias,
// batch norm) takes the plain gradient. With step t (1-based), lr the step's learning rate, mu the momentum and
// lambda the tensor's weight decay:
//   - statistics: on steps with (t - 1) % factor_interval == 0 the backward reports every layer's input and output
//     gradient (observe(); the trainer asks wants_statistics() before the backward), of which the first
//     statistics_images images of each backward (each micro-batch; all when 0) enter the estimate (the Fisher is an expectation: a subsample of the
//     batch estimates it at a fraction of the cost, which grows with the batch; the gradient uses every image),
//     and the step's Omega and
//     Gamma (averaged over micro-batches, then over ranks by the trainer through statistics()) enter running
//     averages  F = xi F + (1 - xi) F_step  (the first observation sets F), xi = factor_decay;
//   - inverses: on steps with (t - 1) % inverse_interval == 0 they are recomputed from the running averages
//     (factored Tikhonov damping with gamma = damping); between refreshes the last ones are used;
//   - preconditioned gradient P = Gamma_d^-1 dW Omega_d^-1 for each weight, scaled by the KL clip of Ba et al.
//     2017 (as in Osawa et al. 2019 and Pauloski et al. 2020's implementation): nu = min(1, sqrt(kl_clip /
//     sum_W lr^2 <P, dW>)), off when kl_clip is 0 or the sum is not positive;
//   - the update, torch.optim.SGD's momentum on the preconditioned gradient:
//       d = nu P + lambda w  (weights)   or   d = g + lambda w  (bias, batch norm)
//       b = d on the first step, else b = mu b + d;   w = w - lr b.
// Gradient clipping (by norm or value) applies to dW before preconditioning. A step that throws (a non-finite
// gradient or statistics, a factor that damping cannot make positive definite) changes no state and drops the
// statistics gathered for it.
//
// Distributed (Osawa et al. 2019; Pauloski et al. 2020): every rank computes the factors of its own shard of the
// batch; in synchronous SGD the trainer averages them with one allreduce per statistics step (statistics() is that
// buffer: every layer's Omega then Gamma, full matrices in fp32), so every rank holds the same factors, computes
// the same inverses (redundantly, rather than distributing them and broadcasting the results) and takes the same
// step. Under local SGD the factors of local steps stay each rank's own, as its weights do between averages.
// The inverses are serial Cholesky factorisations in double, O(dim^3) per factor, spread over threads by layer:
// milliseconds for ResNet-20's largest (576), but a ResNet-50's 4608-wide factors would take minutes per refresh.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "optim/kfac_factors.hpp"
#include "optim/optimizer.hpp"

namespace dtbench::optim {

struct KfacOptions {
  double momentum = 0.9;           // [0, 1)
  double damping = 1e-3;           // gamma > 0
  double factor_decay = 0.95;      // xi in [0, 1)
  int64_t factor_interval = 10;    // >= 1 steps between statistics
  int64_t inverse_interval = 100;  // >= 1 steps between inverses
  double kl_clip = 1e-3;           // >= 0, 0 = off
  int64_t statistics_images = 0;   // >= 0: the factors from at most this many images per backward; 0 = all
};

// Checks the options (BadInput naming the key "/optimizer/...").
void check_options(const KfacOptions& options);

class Kfac final : public Optimizer {
 public:
  // Every conv_weight and fc_weight tensor of `table` must give its rows (output channels or features).
  Kfac(ParamTable table, CommonOptions common, KfacOptions options = {});
  // w rw, g r, momentum rw, and the preconditioned gradient written and read.
  size_t bytes_per_param() const override { return 28; }

  // Whether the next step (steps_taken() + 1) takes statistics: its backward must observe() every layer.
  bool wants_statistics() const;
  // One layer's input and output gradient in the next step's backward (once per micro-batch). Throws
  // std::invalid_argument when the activity matches no preconditioned weight or its shape.
  void observe(const LayerActivity& activity);
  // The statistics observed for the next step, each layer's Omega then Gamma averaged over its observations
  // (the trainer may average them across ranks in place before step()); empty when none were observed.
  std::span<float> statistics();

  // For tests: the layers (weight tensors in table order), the running factors and the inverses in use.
  struct Layer {
    size_t tensor = 0;
    size_t rows = 0, cols = 0;
  };
  const std::vector<Layer>& layers() const { return layers_; }
  const std::vector<double>& factor_a(size_t layer) const { return a_[layer]; }
  const std::vector<double>& factor_g(size_t layer) const { return g_[layer]; }
  const std::vector<float>& inverse_a(size_t layer) const { return a_inv_[layer]; }
  const std::vector<float>& inverse_g(size_t layer) const { return g_inv_[layer]; }
  double last_nu() const { return nu_; }
  // Bytes of one statistics exchange (the buffer statistics() returns).
  size_t statistics_bytes() const { return stats_.size() * sizeof(float); }

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  void refused() override;
  void save_extra(StateWriter& out) const override;
  void load_extra(StateReader& in) override;
  void finish_statistics();
  void drop_statistics();
  // The running averages after this step's statistics (into a, g), and their damped inverses (into a_inv, g_inv);
  // throw, leaving the optimizer as it was, on non-finite statistics or a factor that is not positive definite.
  void next_factors(std::vector<std::vector<double>>& a, std::vector<std::vector<double>>& g) const;
  void inverses_of(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& g,
                   std::vector<std::vector<float>>& a_inv, std::vector<std::vector<float>>& g_inv) const;

  KfacOptions options_;
  std::vector<Layer> layers_;
  std::vector<size_t> stats_offset_;  // each layer's Omega in stats_ (its Gamma follows)
  std::vector<float> stats_;          // this step's statistics
  std::vector<int> observations_;     // per layer, in this step
  bool stats_finished_ = false;
  bool have_factors_ = false;
  std::vector<std::vector<double>> a_, g_;          // running averages
  std::vector<std::vector<float>> a_inv_, g_inv_;   // damped inverses
  std::vector<float> momentum_;                     // flat, as the parameters
  std::vector<float> direction_;                    // flat scratch: nu P or the clipped gradient
  std::vector<float> scratch_;                      // rows x cols
  double nu_ = 1.0;
};

}  // namespace dtbench::optim
