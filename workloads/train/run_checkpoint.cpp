#include "workloads/train/run_checkpoint.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "core/crc32.hpp"
#include "core/error.hpp"
#include "core/provenance.hpp"
#include "core/run_record.hpp"
#include "reducers/mpi_comm.hpp"
#include "core/checkpoint_files.hpp"

namespace dtbench {
namespace fs = std::filesystem;

Json placement(const World& world) {
  std::array<int, 2> negated_fewest_and_most = {-omp_get_max_threads(), omp_get_max_threads()};
  world.max(negated_fewest_and_most);  // one collective for both
  return {{"threads", Json::array({-negated_fewest_and_most[0], negated_fewest_and_most[1]})},
          {"nodes", MpiComm(world.comm()).nodes()}};
}

// A new checkpoint replaces the previous one only once it is whole (file names and order: checkpoint.hpp).
// A write that fails on any rank (a full disk, a quota) ends the run on every rank with one message naming
// that rank; this attempt's files are removed, and its folder too when this attempt created it, so the
// previous checkpoint, if any, is left exactly as it was and no empty folder is left behind.
void save_checkpoint(const World& world, const fs::path& dir, const Json& cfg, TrainModel& model,
                     const optim::Schedule& schedule, const std::optional<NoiseScaleEstimator>& noise,
                     TrainState& st, const Json& placement, const Json& data_shape) {
  RankState rs;
  rs.step = st.step;
  auto p = model.host_params();
  rs.params.assign(p.begin(), p.end());
  auto b = model.host_buffers();
  rs.buffers.assign(b.begin(), b.end());
  rs.optimizer = model.optimizer_state();
  rs.extra["backend"] = model.extra_state();
  rs.extra["schedule"] = schedule.save_state();
  const fs::path mine = rank_file(dir, world.rank(), rs.step);
  // Every rank looks, as a rank with its own /output/dir (a node's disk) creates its own folder.
  const bool had_folder = fs::exists(dir), had_mine = fs::exists(mine);
  // A header write that a kill cut short left its temporary file: gone before this checkpoint's header is written
  // (no rank writes one until the barrier below; the previous checkpoint's writes ended at its last barrier).
  if (had_folder) remove_header_temporaries(dir);
  world.barrier();  // every rank looked before any rank created the folder
  // The header this rank had before this checkpoint's (rank 0's, or a rank's copy; null: none), and whether this
  // rank wrote this checkpoint's: a failure puts it back, so that the previous checkpoint stays whole.
  Json previous_header;
  bool wrote_header = false;
  auto abandon = [&] {
    std::error_code ec;
    if (wrote_header) {  // best effort (an I/O error here changes nothing for the run's end)
      try {
        if (previous_header.is_null()) fs::remove(dir / "header.json", ec);
        else write_header(dir, previous_header);
      } catch (const Error&) {
      }
    }
    if (!had_mine) fs::remove(mine, ec);  // a file of the same step is the previous checkpoint's: keep it
    world.barrier();
    if (!had_folder) fs::remove(dir, ec);  // only if empty: never another run's files (a shared one: the first)
  };
  // This rank's header as it is now; null when there is none or it is damaged (then it is replaced).
  auto header_here = [&] {
    try {
      return read_header(dir);
    } catch (const BadInput&) {
      return Json();
    }
  };
  try {
    std::optional<Error> err;
    uint32_t crc = 0;
    try {
      crc = write_rank_state(dir, world.rank(), rs);
    } catch (const Error& e) {
      err = e;
    }
    world.agree_on_any_error(err);  // every rank file exists before the header names them
    const std::vector<std::string> crcs = world.gather_text(crc32_hex(crc));  // rank 0: every rank's, in rank order
    Json header;
    if (world.root()) {
      try {
        if (noise) st.noise = noise->save_state();
        header = {{"config", cfg},        {"ranks", world.size()},       {"state", st.to_json()},
                  {"dtbench", dtbench_build()}, {"threads", placement["threads"]}, {"nodes", placement["nodes"]},
                  {"data", data_shape}, {"rank_crc32", crcs}};
        previous_header = header_here();
        write_header(dir, header);
        wrote_header = true;
      } catch (const Error& e) {
        err = e;
      }
    }
    world.agree_on_error(err);
    // A rank whose /output/dir is not rank 0's folder (a node's own disk, under the same path or another) keeps a
    // copy of the header beside its rank file, so that --resume finds the checkpoint there too (it found none, and
    // a preempted run could never resume). On a folder shared with rank 0 the header it reads is rank 0's already.
    header = Json::parse(world.broadcast_text(world.root() ? header.dump() : std::string()));
    if (!world.root()) {
      try {
        previous_header = header_here();
        if (previous_header != header) write_header(dir, header), wrote_header = true;
      } catch (const Error& e) {
        err = e;
      }
    }
    world.agree_on_any_error(err);
  } catch (const SameOnAllRanks&) {
    abandon();
    throw;
  }
  remove_rank_states(dir, world.rank(), rs.step);  // the previous checkpoint's files
  world.barrier();
}

namespace {

// The state of a checkpoint's ranks into the model (both --resume and --init-from); returns the schedule's.
Json load_rank_state(const World& world, const fs::path& dir, const Json& header, const TrainState& st,
                     TrainModel& model) {
  const RankState rs = read_rank_state(dir, world.rank(), st.step);
  check_rank_file(dir, header, world.rank(), rs);
  auto p = model.host_params();
  auto b = model.host_buffers();
  if (rs.params.size() != p.size() || rs.buffers.size() != b.size())
    throw BadInput(dir.string() + ": checkpoint holds a different model (parameter count differs)");
  // A non-finite weight or statistic is no state a run can continue from: a run that made one would diverge at its
  // next step, and a NaN batch-norm statistic would only show as a wrong accuracy (the CRC cannot tell: a file
  // written with the NaN in it has a matching one).
  for (const auto& [what, values] : {std::pair{"weight", &rs.params}, std::pair{"batch-norm statistic", &rs.buffers}})
    for (size_t i = 0; i < values->size(); ++i)
      if (!std::isfinite((*values)[i]))
        throw BadInput(rank_file(dir, world.rank(), st.step).string() + ": checkpoint holds a non-finite " + what +
                       " (number " + std::to_string(i) + " is " + std::to_string((*values)[i]) + ")");
  std::copy(rs.params.begin(), rs.params.end(), p.begin());
  std::copy(rs.buffers.begin(), rs.buffers.end(), b.begin());
  model.push_host_params();
  model.push_host_buffers();
  const std::string file = rank_file(dir, world.rank(), st.step).string();
  try {
    model.load_optimizer_state(rs.optimizer);
  } catch (const BadInput& e) {
    // The optimizer's offsets count from its own state; where that starts in the file says where they are.
    throw BadInput(file + ": " + e.what() + " (the optimizer state starts at byte " +
                   std::to_string(rs.optimizer_offset) + " of the file)");
  }
  try {
    if (rs.extra.contains("backend")) model.load_extra_state(rs.extra["backend"]);
  } catch (const BadInput& e) {
    throw BadInput(file + ": " + e.what());
  }
  return rs.extra["schedule"];
}

// The run state of a checkpoint's header, errors naming the header file.
TrainState header_state(const fs::path& dir, const Json& header) {
  try {
    return TrainState::from_json(header["state"]);
  } catch (const BadInput& e) {
    throw BadInput((dir / "header.json").string() + ": " + e.what());
  }
}

// The schedule's state into `schedule`, errors naming this rank's file.
void load_schedule(const World& world, const fs::path& dir, int64_t step, optim::Schedule& schedule, const Json& state) {
  try {
    schedule.load_state(state);
  } catch (const BadInput& e) {
    throw BadInput(rank_file(dir, world.rank(), step).string() + ": the schedule's state: " + e.what());
  } catch (const Json::exception& e) {
    throw BadInput(rank_file(dir, world.rank(), step).string() + ": the schedule's state is damaged (" + e.what() + ")");
  }
}

// /data/path may differ from the checkpoint's (a node's copy of the data), not what its files hold: a resume on 20
// images of a checkpoint written on 40 trained on, exit 0 (a hunt). A header from before it kept the shape has none.
void check_data_shape(const fs::path& dir, const Json& header, const Json& data_shape, const std::string& option) {
  if (!header.contains("data")) return;
  for (auto it = data_shape.begin(); it != data_shape.end(); ++it) {
    // A header from before a key (the synthetic data's seed, the training data's CRC-32 came after the shape) says
    // nothing of it; the config comparison keeps /data/synthetic/seed for such a header (init_from_checkpoint).
    if (header["data"].is_object() && !header["data"].contains(it.key())) continue;
    const Json& was = header["data"].is_object() ? header["data"][it.key()] : Json();
    if (was != it.value() && it.key() == "training data crc32")
      throw BadInput(dir.string() + ": " + option + ": the checkpoint was written on training images and labels "
                     "whose CRC-32 is " + was.dump() + ", this run's is " + it.value().dump() + " (other files at "
                     "/data/path: the same data, copied, has the same); it must train on the same data");
    if (was != it.value() && it.key() == "synthetic data seed")
      throw BadInput(dir.string() + ": " + option + ": the checkpoint was written on synthetic data drawn with seed " +
                     was.dump() + ", this run's is drawn with seed " + it.value().dump() + " (/data/synthetic/seed, or "
                     "the run's /seed where that is -1); it must train on the same data");
    if (was != it.value())
      throw BadInput(dir.string() + ": " + option + ": the checkpoint was written on data with " + was.dump() + " " +
                     it.key() + ", this run's has " + it.value().dump() + " (other files at /data/path?); " +
                     "it must train on the same data");
  }
}

// The keys in which a run started --init-from another run's checkpoint may differ from it.
const char* const kInitFromMayDiffer[] = {"/name",     "/seed",     "/output",    "/duration",
                                          "/eval",     "/schedule", "/lr_scaling", "/data/path"};

}  // namespace

void agree_on_checkpoint(const World& world, const fs::path& dir, const std::string& option) {
  std::optional<Error> err;
  std::string mine;
  try {
    mine = read_header(dir).dump();
  } catch (const Error& e) {  // removed or damaged since it was loaded
    err = e;
  }
  world.agree_on_any_error(err);
  const std::string root = world.broadcast_text(mine);
  if (mine != root)
    err = BadInput(dir.string() + ": " + option + ": this checkpoint is not rank 0's (its header.json differs at " +
                   first_difference(Json::parse(root), Json::parse(mine)) + "); every rank must load the same one");
  world.agree_on_any_error(err);
}

bool resume_from_checkpoint(const World& world, const fs::path& dir, const Json& cfg, TrainModel& model,
                            optim::Schedule& schedule, std::optional<NoiseScaleEstimator>& noise, TrainState& st,
                            const Json& placement, const Json& data_shape) {
  const Json header = read_header(dir);
  if (header.is_null()) return false;  // nothing to resume: start fresh
  // /output/dir and /data/path may differ between ranks (a node's own disk, its copy of the data), as the ranks'
  // commands may (trainer.cpp): the header is rank 0's, and names rank 0's (a rank with its own /data/path could
  // never resume; a hunt).
  Json saved = header["config"], mine = cfg;
  for (Json* c : {&saved, &mine})
    for (const auto& [section, key] : {std::pair{"output", "dir"}, std::pair{"data", "path"}})
      if (c->contains(section) && (*c)[section].is_object()) (*c)[section].erase(key);
  if (saved != mine)
    throw BadInput(dir.string() + ": checkpoint was written by a different config (first difference at " +
                   first_difference(saved, mine) + "); resume needs the same config");
  if (header["ranks"].get<int>() != world.size())
    throw BadInput(dir.string() + ": checkpoint was written by " + std::to_string(header["ranks"].get<int>()) +
                   " ranks, this run has " + std::to_string(world.size()));
  check_data_shape(dir, header, data_shape, "--resume");
  st = header_state(dir, header);
  load_schedule(world, dir, st.step, schedule, load_rank_state(world, dir, header, st, model));
  if (noise) noise->load_state(st.noise);
  // A kept final checkpoint (output.keep_checkpoint) carries no preemption: a requeued run that had already
  // finished resumes at its end.
  if (!st.preemptions.empty()) {
    st.preemptions.back()["resumed_utc"] = utc_timestamp();
    // Resumed by another build than the one that checkpointed: said in the record (bitwise resumption is a
    // promise of one build; a checkpoint from before the header named its build says nothing).
    if (header.contains("dtbench") && header["dtbench"] != dtbench_build())
      st.preemptions.back()["checkpoint_written_by"] = header["dtbench"];
    // Resumed on other thread counts (another placement of the ranks under `threads` 0): said too, for the same
    // reason ([fewest, most] over the ranks).
    if (header.contains("threads") && header["threads"] != placement["threads"])
      st.preemptions.back()["threads_changed"] = {{"checkpointed", header["threads"]}, {"resumed", placement["threads"]}};
    // On other nodes: the hierarchical reducer's sums change with them (a requeued job resumed across another node
    // layout ended with weights of neither layout's run, and said nothing; a hunt).
    if (header.contains("nodes") && header["nodes"] != placement["nodes"])
      st.preemptions.back()["nodes_changed"] = {{"checkpointed", header["nodes"]}, {"resumed", placement["nodes"]}};
  }
  return true;
}

void init_from_checkpoint(const World& world, const fs::path& dir, const Json& cfg, TrainModel& model,
                          optim::Schedule& schedule, std::optional<NoiseScaleEstimator>& noise, TrainState& st,
                          int64_t stop_step, const Json& data_shape) {
  const Json header = read_header(dir);
  if (header.is_null()) throw BadInput(dir.string() + ": --init-from: no checkpoint there");
  Json saved = header["config"], mine = cfg;
  // The hyperparameters may change, not the optimizer (its state would not fit another one). Only its name is
  // compared: another optimizer's keys differ too, and the first of them was named instead (/optimizer/dampening).
  for (Json* c : {&saved, &mine}) {
    // Only where the key's parent is an object: elsewhere the comparison names the difference (a header whose
    // /config/data was an array made the pointer throw, an internal error; found by a hunt).
    for (const char* key : kInitFromMayDiffer) {
      const Json::json_pointer p(key), up = p.parent_pointer();
      if (up.empty() || (c->contains(up) && (*c)[up].is_object())) (*c)[p] = nullptr;
    }
    if ((*c)["optimizer"].is_object()) (*c)["optimizer"] = Json{{"name", (*c)["optimizer"].value("name", Json())}};
    // The synthetic images' seed as written (-1: the run's /seed) may differ where the seed it resolves to is the
    // same, which the header's data shape compares (check_data_shape): a new /seed with the images of the
    // checkpoint's was refused whichever way it was written (a hunt). A header without the shape keeps the key.
    if (header.contains("data") && header["data"].is_object() && header["data"].contains("synthetic data seed") &&
        c->contains("data") && (*c)["data"].is_object() &&
        (*c)["data"].contains("synthetic") && (*c)["data"]["synthetic"].is_object())
      (*c)["data"]["synthetic"].erase("seed");
  }
  if (saved != mine)
    throw BadInput(dir.string() + ": --init-from: the checkpoint's config differs at " + first_difference(saved, mine) +
                   "; only /name, /seed, /output, /duration, /eval, /schedule, /lr_scaling, /data/path, "
                   "/data/synthetic/seed (to the same images) and the optimizer's hyperparameters may change");
  if (header["ranks"].get<int>() != world.size())
    throw BadInput(dir.string() + ": --init-from: checkpoint was written by " + std::to_string(header["ranks"].get<int>()) +
                   " ranks, this run has " + std::to_string(world.size()));
  check_data_shape(dir, header, data_shape, "--init-from");
  st = header_state(dir, header);
  if (st.step >= stop_step)
    throw BadInput(dir.string() + ": --init-from: the checkpoint is at step " + std::to_string(st.step) +
                   " and this run ends at step " + std::to_string(stop_step) + " (/duration, --stop-at); nothing would "
                   "be trained");
  st.preemptions = Json::array();  // another run's preemptions are not this run's
  // The curve goes on (the run's history); whether and where it reached a target is this run's target's question.
  st.retarget(cfg["eval"]["target_accuracy"].get<double>());
  st.mllog_from_point = static_cast<int64_t>(st.curve.size());  // this run's MLLOG file starts after them
  st.inherited_elapsed = st.elapsed;                             // and its timed run after this time
  st.mllog_timed_run_end_ms = -1;                                // and its timed run has not ended
  const Json schedule_state = load_rank_state(world, dir, header, st, model);
  const Json& was = header["config"];
  const auto at = [](const Json& j, const char* pointer) {  // null where the saved config lacks the key
    const Json::json_pointer p(pointer);
    return j.contains(p) ? j[p] : Json();
  };
  if (at(was, "/optimizer/lr") == at(cfg, "/optimizer/lr") && at(was, "/schedule") == at(cfg, "/schedule") &&
      at(was, "/lr_scaling") == at(cfg, "/lr_scaling"))
    load_schedule(world, dir, st.step, schedule, schedule_state);
  if (noise) noise->load_state(st.noise);
}

}  // namespace dtbench
