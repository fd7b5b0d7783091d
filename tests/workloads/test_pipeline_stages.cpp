// Pipeline stages on the oneDNN backend (workloads/models/pipeline_units.hpp, cpu::Model's stage interface).
//
// For every way of cutting the MLP, the Simple CNN and ResNet-8 into consecutive stages, the stages' tables laid end
// to end are the whole model's table (names, shapes, initial weights bit for bit: the same random streams), and the
// stages chained by hand (each stage's output copied into the next one's input, each gradient copied back) give the
// whole model's loss and, at every stage's rows, the whole model's gradient. Two slots on one stage keep two
// micro-batches apart. config::pipeline_units agrees with the models layer for every arch.
//
// Tolerance: 1e-5 of the largest magnitude. A stage boundary copies a tensor in plain layout where the whole plan
// may keep a blocked one, and oneDNN may then choose other kernels (other summation orders, ~1e-7 relative) for the
// layers at the boundary. A stage that loses a gradient, or a slot mix-up, is off by 1e-2 or more.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "config/rules.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "workloads/backend/train_model.hpp"
#include "workloads/cpu/model.hpp"
#include "workloads/models/checkpointing.hpp"
#include "workloads/models/model_description.hpp"
#include "workloads/models/pipeline_units.hpp"

namespace dtbench::test {
namespace {

models::ModelSpec spec_of(const std::string& arch) {
  models::ModelSpec s;
  s.arch = arch;
  s.in_c = 2, s.in_h = 8, s.in_w = 8, s.classes = 5;
  if (arch == "mlp") s.hidden = 12;
  if (arch == "simple_cnn") s.hidden = 10, s.conv_filters = {3, 4};
  return s;
}

models::ModelSpec stage_spec(models::ModelSpec s, int stages, int stage, int first, int end) {
  s.stages = stages, s.stage = stage, s.first_unit = first, s.end_unit = end;
  return s;
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, double(std::abs(x)));
  return m;
}

// One training step of the stages chained by hand: each stage's output copied into the next one's input, each
// gradient copied back. The last stage's loss and the stages' gradients end to end.
struct Chained {
  double loss = 0;
  std::vector<float> grads;
  size_t training_ops = 0;  // operations of the stages' training plans (a recomputed segment adds its forward's)
};
Chained chain(std::vector<cpu::Model>& stages, const std::vector<float>& x, const std::vector<int32_t>& labels, int n) {
  const size_t S = stages.size();
  Chained out;
  std::vector<float> act(x);
  for (size_t s = 0; s < S; ++s) {
    cpu::Model& m = stages[s];
    EXPECT_EQ(act.size(), m.stage_input_floats(n)) << "stage " << s;
    out.loss = m.forward(act.data(), labels.data(), n, true);
    if (s + 1 < S) act.assign(m.stage_output(), m.stage_output() + m.stage_output_floats(n));
  }
  std::vector<float> grad_back;
  for (size_t s = S; s-- > 0;) {
    cpu::Model& m = stages[s];
    if (s + 1 < S) m.set_output_gradient(grad_back.data());
    m.backward();
    if (s > 0) grad_back.assign(m.input_gradient(), m.input_gradient() + m.stage_input_floats(n));
  }
  for (cpu::Model& m : stages) {
    out.grads.insert(out.grads.end(), m.grads().begin(), m.grads().end());
    out.training_ops += m.profile(n, true).size();
  }
  return out;
}

// Every cut of `units` units into consecutive non-empty stages, as the stages' end units.
void cuts(int units, int from, std::vector<int>& ends, std::vector<std::vector<int>>& out) {
  if (from == units) {
    if (ends.size() >= 2) out.push_back(ends);
    return;
  }
  for (int end = from + 1; end <= units; ++end) {
    ends.push_back(end);
    cuts(units, end, ends, out);
    ends.pop_back();
  }
}

TEST(PipelineStages, ConfigKnowsTheModelsUnitCounts) {
  for (const char* arch : {"resnet8", "resnet20", "resnet32", "resnet56", "resnet18", "resnet50", "mlp", "simple_cnn"}) {
    models::ModelSpec s = spec_of(arch);
    if (std::string(arch) == "resnet18" || std::string(arch) == "resnet50") s.in_h = s.in_w = 64, s.in_c = 3;
    EXPECT_EQ(config::pipeline_units(arch), models::pipeline_units(s)) << arch;
  }
  EXPECT_EQ(models::pipeline_units(spec_of("resnet8")), 5);  // stem, 3 blocks, head
}

TEST(PipelineStages, StagesChainedGiveTheWholeModel) {
  const uint64_t seed = 11;
  const int n = 6;
  for (const char* arch : {"mlp", "simple_cnn", "resnet8"}) {
    SCOPED_TRACE(arch);
    const models::ModelSpec whole_spec = spec_of(arch);
    cpu::Model whole(whole_spec, seed);
    std::vector<float> x(whole.stage_input_floats(n));
    Rng rng(3, {1});
    for (float& v : x) v = float(rng.normal());
    std::vector<int32_t> labels(n);
    for (int i = 0; i < n; ++i) labels[size_t(i)] = (i * 3) % whole_spec.classes;
    const double loss = whole.forward(x.data(), labels.data(), n, true);
    whole.backward();
    const std::vector<float> grads(whole.grads().begin(), whole.grads().end());
    const std::vector<float> params(whole.params().begin(), whole.params().end());
    const double g_scale = max_abs(grads);

    std::vector<std::vector<int>> all_cuts;
    std::vector<int> ends;
    cuts(models::pipeline_units(whole_spec), 0, ends, all_cuts);
    for (const std::vector<int>& cut : all_cuts) {
      const int S = int(cut.size());
      std::vector<cpu::Model> stages;
      for (int s = 0; s < S; ++s)
        stages.emplace_back(stage_spec(whole_spec, S, s, s == 0 ? 0 : cut[size_t(s) - 1], cut[size_t(s)]), seed);
      // The tables end to end are the whole model's, with its initial weights.
      size_t offset = 0, index = 0;
      for (cpu::Model& m : stages) {
        for (const models::ParamInfo& p : m.param_table()) {
          const models::ParamInfo& w = whole.param_table()[index++];
          ASSERT_EQ(p.name, w.name) << arch;
          ASSERT_EQ(p.shape, w.shape) << p.name;
          EXPECT_TRUE(std::equal(m.params().begin() + long(p.offset), m.params().begin() + long(p.offset + p.size),
                                 params.begin() + long(w.offset)))
              << arch << " " << p.name << ": initial weights differ from the whole model's";
        }
        offset += m.params().size();
      }
      ASSERT_EQ(offset, params.size()) << arch;
      ASSERT_EQ(index, whole.param_table().size()) << arch;

      const Chained c = chain(stages, x, labels, n);
      EXPECT_NEAR(c.loss, loss, 1e-5 * std::abs(loss)) << arch;
      ASSERT_EQ(c.grads.size(), grads.size());
      for (size_t i = 0; i < grads.size(); ++i)
        ASSERT_NEAR(c.grads[i], grads[i], 1e-5 * g_scale) << arch << " cut of " << S << ", gradient " << i;
    }
  }
}

// Gradient checkpointing within the stages (each cuts its own checkpoint units into segments, at most one per unit):
// the recomputation reruns the same operations on the same inputs, so every cut gives the bits it gives without
// checkpointing, for 1 and for 2 segments per stage.
TEST(PipelineStages, CheckpointedStagesGiveTheSameBits) {
  const int n = 6;
  for (const char* arch : {"simple_cnn", "resnet8"}) {
    const models::ModelSpec whole_spec = spec_of(arch);
    std::vector<float> x(size_t(n) * 2 * 8 * 8);
    Rng rng(3, {1});
    for (float& v : x) v = float(rng.normal());
    std::vector<int32_t> labels(n);
    for (int i = 0; i < n; ++i) labels[size_t(i)] = (i * 3) % whole_spec.classes;
    std::vector<std::vector<int>> all_cuts;
    std::vector<int> ends;
    cuts(models::pipeline_units(whole_spec), 0, ends, all_cuts);
    for (const std::vector<int>& cut : all_cuts) {
      const auto run = [&](int segments) {
        std::vector<cpu::Model> stages;
        for (int s = 0; s < int(cut.size()); ++s) {
          models::ModelSpec st = stage_spec(whole_spec, int(cut.size()), s, s == 0 ? 0 : cut[size_t(s) - 1], cut[size_t(s)]);
          st.checkpoint_segments = segments;
          stages.emplace_back(st, 11);
        }
        return chain(stages, x, labels, n);
      };
      const Chained plain = run(0);
      // A stage of two checkpoint units or more cut in 2 segments recomputes the first one's forward.
      bool recomputes = false;
      for (size_t s = 0; s < cut.size(); ++s)
        recomputes |= std::min(cut[s], models::checkpoint_units(whole_spec)) - (s == 0 ? 0 : cut[s - 1]) >= 2;
      for (int segments : {1, 2}) {
        const Chained checkpointed = run(segments);
        if (segments == 2 && recomputes) {
          EXPECT_GT(checkpointed.training_ops, plain.training_ops) << arch;
        }
        EXPECT_EQ(plain.loss, checkpointed.loss) << arch;
        ASSERT_EQ(plain.grads.size(), checkpointed.grads.size());
        EXPECT_EQ(0, std::memcmp(plain.grads.data(), checkpointed.grads.data(), plain.grads.size() * sizeof(float)))
            << arch << ", a cut of " << cut.size() << " stages, " << segments << " segment(s) per stage";
      }
    }
  }
}

TEST(PipelineStages, SlotsKeepMicroBatchesApart) {
  // Stage 1 of 2 of the MLP (fc2 and the loss): micro-batch A forward in slot 0, B in slot 1, then the backwards in
  // that order; each gives the gradient a fresh model computes for it alone.
  const models::ModelSpec s = stage_spec(spec_of("mlp"), 2, 1, 1, 2);
  const int n = 4;
  cpu::Model m(s, 7), fresh(s, 7);
  std::vector<float> a(m.stage_input_floats(n)), b(a.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 7) * 0.1f, b[i] = float(i % 5) * -0.2f;
  const std::vector<int32_t> la{0, 1, 2, 3}, lb{4, 3, 2, 1};
  auto alone = [&](const std::vector<float>& in, const std::vector<int32_t>& labels) {
    fresh.forward(in.data(), labels.data(), n, true);
    fresh.backward();
    return std::vector<float>(fresh.grads().begin(), fresh.grads().end());
  };
  const std::vector<float> ga = alone(a, la), gb = alone(b, lb);
  m.set_slot(0);
  m.forward(a.data(), la.data(), n, true);
  m.set_slot(1);
  m.forward(b.data(), lb.data(), n, true);
  m.set_slot(0);
  m.backward();
  EXPECT_TRUE(std::equal(ga.begin(), ga.end(), m.grads().begin())) << "slot 0's backward is not micro-batch A's";
  m.set_slot(1);
  m.backward();
  EXPECT_TRUE(std::equal(gb.begin(), gb.end(), m.grads().begin())) << "slot 1's backward is not micro-batch B's";
  EXPECT_THROW(m.stage_output(), std::logic_error);  // the last stage has the loss, not an output
}

// The cut's measurement: a stage times exactly its own units (the trainer adds the stages' vectors), the units after
// the first stage's included (their input arrives as a tensor, and the gradient of their output is given).
TEST(PipelineStages, EachStageTimesItsOwnUnits) {
  for (const char* arch : {"mlp", "simple_cnn", "resnet8"}) {
    const models::ModelSpec whole = spec_of(arch);
    const int units = models::pipeline_units(whole);
    for (int first = 0; first < units; ++first)
      for (int end = first + 1; end <= units; ++end) {
        if (first == 0 && end == units) continue;  // the whole model: one stage
        const std::vector<double> s = measure_cpu_unit_seconds(stage_spec(whole, 2, first == 0 ? 0 : 1, first, end), 4, 1, 5);
        for (int u = 0; u < units; ++u) {
          const double t = u < static_cast<int>(s.size()) ? s[size_t(u)] : 0.0;
          if (u >= first && u < end) {
            EXPECT_GT(t, 0) << arch << " [" << first << ", " << end << ") unit " << u;
          } else {
            EXPECT_EQ(t, 0) << arch << " [" << first << ", " << end << ") unit " << u;
          }
        }
      }
  }
}

TEST(PipelineStages, BadStagesAreRefusedNamingTheKey) {
  models::ModelSpec s = stage_spec(spec_of("mlp"), 3, 0, 0, 1);
  try {
    models::validate(s);
    FAIL() << "3 stages of the MLP's 2 units were accepted";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("/parallel/pipeline_stages: 3 stages are more than arch mlp's 2"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(models::validate(stage_spec(spec_of("mlp"), 2, 1, 1, 1)), BadInput);  // empty stage
  EXPECT_THROW(models::validate(stage_spec(spec_of("mlp"), 2, 2, 0, 1)), BadInput);  // stage out of range
}

}  // namespace
}  // namespace dtbench::test
