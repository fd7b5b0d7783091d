// `dtbench model`: fits the cost model (reducers/cost_model.hpp) to `dtbench allreduce --json` sweeps,
// prints the fit, predictions at other rank counts and sizes and the check against a measured sweep;
// and answers the seeds' batch-split question (reducers/batch_split.hpp) on a published network profile
// (results/published/networks.json) or on the fitted one.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/cli_checks.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/provenance.hpp"
#include "core/published_dir.hpp"
#include "reducers/allreduce_bench.hpp"
#include "reducers/batch_split.hpp"
#include "reducers/commands.hpp"
#include "reducers/cost_model.hpp"
#include "reducers/parallelism_choice.hpp"
#include "reducers/profiles.hpp"
#include "reducers/sweep_document.hpp"

namespace dtbench {
namespace {

// --compute-us-per-image when it is not given (no value a user types).
constexpr double kNotGiven = std::numeric_limits<double>::lowest();

struct ModelCliOptions {
  std::vector<std::string> fit;
  std::string ranks = "2,16,256,4096";
  std::string bytes = "100M";
  int batch = 1024;
  double compute_us_per_image = kNotGiven;  // any value given, -5 and nan included, is checked
  std::string model_bytes;
  std::string network;            // batch split: a profile of networks.json, or "fitted"
  std::string intra_network;      // hierarchical: the link within a node, a profile of networks.json
  std::string reducer = "ring";   // batch split: whose cost formula
  double backward_share = 2.0 / 3.0;
  std::string check;
  std::vector<std::string> holdout;
  double tolerance = 0.25;
  std::string eager = "4064";
  std::string fit_max;
  std::string json;
  std::string layers;  // data against model parallelism: the fully connected stack's widths
  int micro_batches = 0;  // the pipeline's M (0: 4 per rank)
  int ranks_per_node = -1;  // hierarchical's nodes in the predictions (-1: the fit's; one node without a fit)
  std::set<std::string> given;  // the options on the command line, by their long name ("--batch")
};

// A `dtbench allreduce --json` file, checked whole (reducers/sweep_document.hpp), with the option that named
// it in front of its messages: "--fit: sweep.json: /rows/3/bytes: expected an integer in [0, ...], got -5".
Json read_sweep_file(const std::string& path, const std::string& option) {
  try {
    Json doc = read_json_file(path, "file");
    try {
      check_sweep_document(doc);
    } catch (const BadInput& e) {
      throw BadInput(path + ": " + e.what());
    }
    return doc;
  } catch (const BadInput& e) {
    throw BadInput(option + ": " + e.what());
  }
}

std::vector<int> parse_int_list(const std::string& text, const std::string& option) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    // Decimal digits only, as every count on the command line (stol took ' 2', +2 and 010 as 10).
    long v = 0;
    const bool digits = !item.empty() && item.find_first_not_of("0123456789") == std::string::npos &&
                        (item.size() == 1 || item[0] != '0') && item.size() <= 9;
    if (digits) v = std::stol(item);
    if (!digits || v < 1 || v > (1 << 24))
      throw BadInput(option + ": '" + item + "' is not a whole number from 1 to 16777216 in decimal digits without a "
                     "leading 0 (in '" + text + "')");
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) throw BadInput(option + ": empty list");
  return out;
}

// The network of the batch split and of the parallelism table: a profile of `profiles`, or "fitted" (the
// parameters `fit` has for --reducer, with its segmenting).
struct Link {
  CostParams params;
  std::optional<CostParams> intra;  // --intra-network's
  ReducerOptions options = BatchSplitInput::unsegmented_options();
  double eager_bytes = kDefaultEagerBytes;
};

Link link_of(const ModelCliOptions& cli, const std::string& network, const std::optional<Profiles>& profiles,
             const FittedModel* fit) {
  Link link;
  if (network == "fitted") {
    const auto it = fit->params.find(cli.reducer);
    if (it == fit->params.end()) throw BadInput("--reducer " + cli.reducer + ": not in the fitted sweeps");
    link.params = it->second;
    link.options = fit->options;
    link.eager_bytes = fit->eager_bytes;
  } else {
    link.params = profiles->network(network).params(profiles->gamma_s_per_byte);
  }
  if (cli.ranks_per_node >= 0) link.options.ranks_per_node = cli.ranks_per_node;
  if (!cli.intra_network.empty()) link.intra = profiles->network(cli.intra_network).params(profiles->gamma_s_per_byte);
  return link;
}

// The batch-split table (reducers/batch_split.hpp) on `network`.
Json print_batch_split(const ModelCliOptions& cli, const std::string& network, double model_bytes,
                       const std::optional<Profiles>& profiles, const FittedModel* fit) {
  BatchSplitInput in;
  in.global_batch = cli.batch;
  in.gradient_bytes = model_bytes;
  in.seconds_per_image = cli.compute_us_per_image * 1e-6;
  in.backward_share = cli.backward_share;
  in.reducer = cli.reducer;
  const Link link = link_of(cli, network, profiles, fit);
  in.link = link.params, in.intra_link = link.intra, in.options = link.options, in.eager_bytes = link.eager_bytes;
  const BatchSplit bs = batch_split(in);
  const bool outside = fit && fit->min_bytes.count(cli.reducer) &&
                       (model_bytes < fit->min_bytes.at(cli.reducer) || model_bytes > fit->max_bytes.at(cli.reducer));
  std::printf("\n# batch %d split over nodes: %.1f us/image compute, %.0f gradient bytes, %s on %s\n", cli.batch,
              cli.compute_us_per_image, model_bytes, cli.reducer.c_str(), network.c_str());
  std::printf("# alpha %.3f us, beta %.5f ns/B (%.3f GB/s), gamma %.5f ns/B; hidden: allreduce <= backward "
              "(%.2f of the compute)\n",
              in.link.alpha * 1e6, in.link.beta * 1e9, 1e-9 / in.link.beta, in.link.gamma * 1e9, in.backward_share);
  if (in.link.cache_bytes > 0 && in.link.beta_mem > 0)  // a fitted profile's memory regime, which the rows price
    std::printf("# buffers above %.0f B pay beta_mem %.5f ns/B more (%.3f GB/s in all)\n", in.link.cache_bytes,
                in.link.beta_mem * 1e9, 1e-9 / (in.link.beta + in.link.beta_mem));
  if (in.intra_link)
    std::printf("# within nodes of %d: %s, alpha %.3f us, beta %.5f ns/B (%.3f GB/s); %s joins the node leaders\n",
                in.options.ranks_per_node, cli.intra_network.c_str(), in.intra_link->alpha * 1e6,
                in.intra_link->beta * 1e9, 1e-9 / in.intra_link->beta, network.c_str());
  // The seeds' "nodes" are the data-parallel workers; within nodes of several ranks (hierarchical) each row counts
  // ranks, and "nodes" under "within nodes of 8" read as 1024 machines (a hunt).
  const bool ranks = in.intra_link.has_value();
  std::printf("# %8s %10s %14s %14s %14s %8s\n", ranks ? "ranks" : "nodes", ranks ? "per rank" : "per node",
              "compute (us)", "backward (us)", "comm (us)", "hidden");
  for (const auto& r : bs.rows)
    std::printf("  %8d %10d %14.1f %14.1f %14.1f %8s\n", r.nodes, r.per_node, r.compute_s * 1e6, r.window_s * 1e6,
                r.comm_s * 1e6, r.hidden ? "yes" : "no");
  if (bs.crossover_per_node > 0)
    std::printf(ranks ? "# crossover: %d images per rank (%d ranks)" : "# crossover: %d images per node (%d nodes)",
                bs.crossover_per_node, cli.batch / bs.crossover_per_node);
  else
    std::printf("# crossover: none (no split hides the allreduce)");
  if (cli.batch == 1024)
    std::printf("; the seeds' cases: 16 x 64 %s, 1024 x 1 %s", bs.row(64).hidden ? "hidden" : "not hidden",
                bs.row(1).hidden ? "hidden" : "not hidden");
  std::printf("\n");
  if (outside)
    std::printf("# extrapolated: %.0f gradient bytes lies outside the sizes %s was fitted on (%.0f..%.0f): its rows do "
                "not pin down every term there\n", model_bytes, cli.reducer.c_str(), fit->min_bytes.at(cli.reducer),
                fit->max_bytes.at(cli.reducer));
  Json j = bs.to_json();
  j["network"] = network;
  if (fit) j["extrapolated"] = outside;
  return j;
}

// Data against tensor model parallelism (reducers/parallelism_choice.hpp) for --layers at --batch over --ranks.
Json print_parallelism(const ModelCliOptions& cli, const std::vector<int64_t>& widths, const std::vector<int>& ranks,
                       const std::string& network, const std::optional<Profiles>& profiles, const FittedModel* fit) {
  ParallelismInput in;
  in.widths = widths;
  in.global_batch = cli.batch;
  in.seconds_per_image = cli.compute_us_per_image * 1e-6;
  in.backward_share = cli.backward_share;
  in.reducer = cli.reducer;
  in.micro_batches = cli.micro_batches;
  const Link link = link_of(cli, network, profiles, fit);
  in.link = link.params, in.intra_link = link.intra, in.options = link.options, in.eager_bytes = link.eager_bytes;
  const ParallelismChoice c = choose_parallelism(in, ranks);
  std::printf("\n# data (DP: K replicas, %s) against tensor model (MP: one group of K) parallelism and pipeline "
              "stages (PP: K stages, M micro-batches): %.0f weights, batch %d, %.1f us/image, on %s\n",
              cli.reducer.c_str(), c.weights, cli.batch, cli.compute_us_per_image, network.c_str());
  std::printf("# %8s %14s %14s %14s %14s %14s %6s %14s %14s %14s %8s\n", "ranks", "compute (us)", "DP comm (us)",
              "DP step (us)", "MP comm (us)", "MP step (us)", "PP M", "PP comm (us)", "PP idle (us)", "PP step (us)",
              "faster");
  auto step = [](bool possible, double s) {
    return possible ? std::to_string(static_cast<int64_t>(std::lround(s * 1e6))) : std::string("-");
  };
  for (const auto& r : c.rows)
    std::printf("  %8d %14.1f %14.1f %14s %14.1f %14s %6d %14.1f %14.1f %14s %8s\n", r.ranks, r.compute_s * 1e6,
                r.dp_comm_s * 1e6, step(r.dp_possible, r.dp_step_s).c_str(), r.mp_comm_s * 1e6,
                step(r.mp_possible, r.mp_step_s).c_str(), r.micro_batches, r.pp_comm_s * 1e6, r.pp_idle_s * 1e6,
                step(r.pp_possible, r.pp_step_s).c_str(), r.faster().c_str());
  Json j = c.to_json();
  j["network"] = network;
  return j;
}

void write_output(const ModelCliOptions& cli, Json out) {
  if (cli.json.empty()) return;
  out["provenance"] = provenance();
  write_json_atomic(cli.json, out, false);
}

void run_model_command(const ModelCliOptions& cli) {
  const bool split = cli.compute_us_per_image != kNotGiven;
  if (!cli.layers.empty() && !split) throw BadInput("--layers needs --compute-us-per-image (and --network or --fit)");
  if (cli.fit.empty() && !split)
    throw BadInput("--fit: give at least one `dtbench allreduce --json` file (or --compute-us-per-image with --network)");
  if (cli.fit.empty() && !cli.check.empty()) throw BadInput("--check needs --fit");
  const std::vector<int> ranks = parse_int_list(cli.ranks, "--ranks");
  if (const int* twice = cli::first_repeated(ranks))  // (it printed the row twice; found by a hunt)
    throw BadInput("--ranks: " + std::to_string(*twice) + " given twice (in '" + cli.ranks + "')");
  const double bytes = static_cast<double>(parse_bytes(cli.bytes, "--bytes"));
  // At least one float32 value (a hunt's --bytes 3 and 0 were priced at 0.0 us).
  if (bytes < 4) throw BadInput("--bytes " + cli.bytes + ": an allreduce moves at least one float32 value, 4 bytes");
  // Read before anything is printed, whether or not a fit uses them (they were ignored unread without --fit).
  const double eager = static_cast<double>(parse_bytes(cli.eager, "--eager-bytes"));
  const double fit_max = cli.fit_max.empty() ? 0.0 : static_cast<double>(parse_bytes(cli.fit_max, "--fit-max-bytes"));
  if (cli.fit.empty() && !cli.fit_max.empty()) throw BadInput("--fit-max-bytes needs --fit");
  if (!cli.fit_max.empty() && fit_max < 4)  // 0 was "no limit", unsaid; 1 to 3 left every row out
    throw BadInput("--fit-max-bytes " + cli.fit_max + ": give a size of at least 4 bytes, or leave the option out to fit "
                   "every row");
  if (cli.fit.empty() && eager != kDefaultEagerBytes)
    throw BadInput("--eager-bytes needs --fit (a published network's messages all pay its one alpha)");
  // --layers: a fully connected stack, whose fp32 gradient is the batch split's default model bytes.
  std::vector<int64_t> widths;
  if (!cli.layers.empty()) {
    for (int w : parse_int_list(cli.layers, "--layers")) widths.push_back(w);
    if (widths.size() < 2) throw BadInput("--layers: give the inputs and at least one layer's outputs, got '" + cli.layers + "'");
    if (!cli.model_bytes.empty()) throw BadInput("--model-bytes: the layers' weights give the gradient bytes; drop one");
    for (int k : ranks)
      if (k < 2) throw BadInput("--ranks: the parallelism table needs rank counts >= 2, got " + std::to_string(k));
  }
  double layer_bytes = 0;
  for (size_t l = 1; l < widths.size(); ++l) layer_bytes += 4.0 * double(widths[l - 1] + 1) * double(widths[l]);
  const double model_bytes = !widths.empty() ? layer_bytes
                             : cli.model_bytes.empty() ? bytes
                                                       : static_cast<double>(parse_bytes(cli.model_bytes, "--model-bytes"));
  // The batch split's network: a published profile, or the one fitted here.
  const std::string network = !cli.network.empty() ? cli.network : cli.fit.empty() ? "" : "fitted";
  std::optional<Profiles> profiles;
  if (split) {
    if (cli.batch < 1 || (cli.batch & (cli.batch - 1)) != 0)
      throw BadInput("--batch must be a power of two, got " + std::to_string(cli.batch));
    if (!(cli.compute_us_per_image * 1e-6 > 0) || std::isinf(cli.compute_us_per_image))  // > 0 in seconds too
      throw BadInput("--compute-us-per-image must be a finite number > 0");
    if (!(model_bytes >= 4))  // (--bytes, when it gives them, is checked above)
      throw BadInput("--model-bytes " + cli.model_bytes + ": the gradient bytes per step are at least one float32 "
                     "value, 4 bytes");
    if (!(cli.backward_share > 0 && cli.backward_share <= 1)) throw BadInput("--backward-share must be in (0, 1]");
    if (network.empty()) throw BadInput("--network: give a profile of networks.json, or --fit for the fitted one");
    if (network == "fitted" && cli.fit.empty()) throw BadInput("--network fitted needs --fit");
    if (network != "fitted" || !cli.intra_network.empty()) {
      profiles = load_profiles(published_dir());
      if (!cli.intra_network.empty()) {
        try {
          profiles->network(cli.intra_network);
        } catch (const BadInput& e) {
          throw BadInput(std::string("--intra-network: ") + e.what());
        }
      }
    }
    if (network != "fitted") {
      try {
        profiles->network(network);
      } catch (const BadInput& e) {
        throw BadInput(std::string("--network: ") + e.what() + ", fitted");
      }
    }
    try {
      cost_terms(cli.reducer, 2, model_bytes, ReducerOptions{});
    } catch (const BadInput& e) {
      throw BadInput(std::string("--reducer: ") + e.what());
    }
    // A published network joins nodes, which shared memory does not span (it was priced there; found by a hunt).
    if (network != "fitted" && cli.reducer == "shared_memory")
      throw BadInput("--reducer shared_memory: it reduces within one node's memory and cannot span the nodes that --network " +
                     network + " joins; give a reducer that sends messages (or --network fitted, this machine's)");
  }
  if (!(cli.tolerance > 0) || std::isinf(cli.tolerance)) throw BadInput("--tolerance must be a finite number > 0");
  if (!cli.intra_network.empty()) {
    if (!split) throw BadInput("--intra-network needs --compute-us-per-image (the batch split or --layers)");
    if (cli.reducer != "hierarchical")
      throw BadInput("--intra-network: only --reducer hierarchical has a phase within the nodes, got --reducer " + cli.reducer);
    if (cli.ranks_per_node < 1) throw BadInput("--intra-network needs --ranks-per-node >= 1 (the ranks of a node)");
  }
  // An option that shapes nothing this command prints would be accepted and ignored, and the JSON would not say so:
  // refused, naming what it needs (found by a hunt), as allreduce refuses its unused options.
  const auto given = [&](const char* o) { return cli.given.count(o) > 0; };
  for (const char* o : {"--batch", "--model-bytes", "--network", "--reducer", "--backward-share"})
    if (given(o) && !split)
      throw BadInput(std::string(o) + " is for the batch split and the parallelism table: it needs "
                     "--compute-us-per-image");
  if (given("--micro-batches") && cli.layers.empty())
    throw BadInput("--micro-batches is for the parallelism table's pipeline: it needs --layers");
  // More micro-batches than images gave a pipeline of empty micro-batches (2^31 - 1 of them: a step of 14.9 hours in
  // the pipeline's transfers alone; found by a hunt).
  if (cli.micro_batches > cli.batch)
    throw BadInput("--micro-batches: " + std::to_string(cli.micro_batches) + " is more than --batch " +
                   std::to_string(cli.batch) + " (a micro-batch holds one image or more)");
  if (given("--tolerance") && cli.check.empty()) throw BadInput("--tolerance is --check's bound: it needs --check");
  // --bytes sizes --fit's predictions and, without --layers or --model-bytes, the split's gradient (it was ignored
  // beside --layers; found by a hunt).
  if (given("--bytes") && cli.fit.empty() && (!cli.layers.empty() || !cli.model_bytes.empty()))
    throw BadInput(std::string("--bytes: without --fit it gives the gradient bytes of the batch split, which ") +
                   (cli.layers.empty() ? "--model-bytes" : "--layers' weights") + " give here; drop one");
  if (!cli.holdout.empty() && cli.fit.empty()) throw BadInput("--holdout needs --fit (the model it judges)");
  if (given("--ranks") && cli.fit.empty() && cli.layers.empty())
    throw BadInput("--ranks: the rank counts of --fit's predictions and of --layers' table; give one of them");
  if (given("--ranks-per-node") && cli.fit.empty() && !(split && cli.reducer == "hierarchical"))
    throw BadInput("--ranks-per-node: hierarchical's nodes; it needs --fit (its predictions) or --reducer "
                   "hierarchical with --compute-us-per-image");
  for (const auto* files : {&cli.fit, &cli.holdout})  // a file given twice would count its rows twice
    for (size_t i = 0; i < files->size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (resolved_path((*files)[i]) == resolved_path((*files)[j]))
          throw BadInput(std::string(files == &cli.fit ? "--fit " : "--holdout ") + (*files)[i] +
                         ": given twice (as " + (*files)[j] + "); its rows would count twice");
  std::vector<Json> docs;
  for (const auto& f : cli.fit) docs.push_back(read_sweep_file(f, "--fit"));
  std::vector<Json> measured;
  if (!cli.check.empty()) measured.push_back(read_sweep_file(cli.check, "--check"));
  std::vector<Json> holdout;
  for (const auto& f : cli.holdout) {
    holdout.push_back(read_sweep_file(f, "--holdout"));
    // A held-out error needs rows the fit did not see: the same sweep (this path or a copy) under --fit would be
    // judged on its own data.
    for (size_t i = 0; i < docs.size(); ++i)
      if (docs[i] == holdout.back())
        throw BadInput("--holdout " + f + ": the same sweep as --fit " + cli.fit[i] +
                       "; a held-out error needs rows the fit did not see");
  }
  if (!cli.json.empty()) {
    check_output_file(cli.json, "--json");
    std::vector<std::pair<std::string, std::filesystem::path>> inputs;
    for (const auto& f : cli.fit) inputs.emplace_back("a --fit file", f);
    for (const auto& f : cli.holdout) inputs.emplace_back("a --holdout file", f);
    if (!cli.check.empty()) inputs.emplace_back("the --check file", cli.check);
    if (profiles) {  // the published profiles read (the networks file was replaced by the prediction; a hunt)
      inputs.emplace_back("the published network profiles", published_dir() / "networks.json");
      inputs.emplace_back("the published compute profiles", published_dir() / "compute.json");
    }
    check_not_an_input(cli.json, "--json", inputs);
  }
  if (cli.fit.empty()) {  // the batch split on a published network needs no fit
    Json out = {{"kind", "dtbench.model"},
                {"batch_split", print_batch_split(cli, network, model_bytes, profiles, nullptr)}};
    if (!widths.empty()) out["parallelism"] = print_parallelism(cli, widths, ranks, network, profiles, nullptr);
    write_output(cli, out);
    return;
  }

  FittedModel m;
  try {
    m = fit_cost_model(docs, eager, fit_max);
  } catch (const BadInput& e) {  // its messages count the files ("fit file 2"): which they are
    std::string files;
    for (const auto& f : cli.fit) files += (files.empty() ? "" : ", ") + f;
    throw BadInput(std::string(e.what()) + " (--fit " + files + ")");
  }
  // The fitted network prices --reducer with that reducer's fit: checked before anything is printed (link_of said it
  // after the fit's table and the predictions; found by a hunt).
  if ((split || !widths.empty()) && network == "fitted" && !m.params.count(cli.reducer))
    throw BadInput("--reducer " + cli.reducer + ": not in the fitted sweeps");
  // Hierarchical's nodes shape its predictions and a hierarchical batch split only: with neither it was recorded in
  // the output and shaped no number (a hunt), as `allreduce` refuses it without the hierarchical reducer.
  if (given("--ranks-per-node") && !m.params.count("hierarchical") && !(split && cli.reducer == "hierarchical"))
    throw BadInput("--ranks-per-node: hierarchical's nodes, and the fitted sweeps have no hierarchical rows to "
                   "predict (nor is there a --reducer hierarchical batch split)");
  const Json fit_json = m.to_json();  // with the fitted sweeps' node size
  if (cli.ranks_per_node >= 0) m.options.ranks_per_node = cli.ranks_per_node;  // predictions only: rows keep theirs
  const std::map<std::string, double> held =
      holdout.empty() ? std::map<std::string, double>{} : holdout_rms_rel_error(m, holdout);
  ReducerOptions check_options;
  std::vector<SweepRow> check_rows;
  std::string check_left_out;
  const std::vector<SweepRow> measured_rows = sweep_rows(measured, "--check file", check_options, 0, &check_left_out);
  // The formulas of a sweep taken with other options are not the fit's (--holdout refused it, --check compared it;
  // found by a hunt).
  if (!measured.empty()) check_options_as_fitted(m, check_options, measured_rows, "--check " + cli.check);
  for (const SweepRow& r : measured_rows)
    if (m.params.count(r.reducer) && r.bytes >= m.min_bytes.at(r.reducer) && r.bytes <= m.max_bytes.at(r.reducer))
      check_rows.push_back(r);
  // Named by why: rows of one rank are left out before the ranges are looked at (it said "inside the fitted
  // ranges" of a 1-rank sweep of the fitted sizes; a hunt).
  if (!measured.empty() && check_rows.empty())
    throw BadInput("--check: no row of '" + cli.check + "' lies inside the fitted ranges" +
                   (check_left_out.empty() ? "" : " (" + check_left_out + ")"));
  Json out = {{"kind", "dtbench.model"}, {"fit_files", cli.fit}, {"fit", fit_json}};
  if (cli.ranks_per_node >= 0) out["prediction_ranks_per_node"] = cli.ranks_per_node;
  char line[256];

  std::printf("# cost model fit from %zu file(s), ranks", cli.fit.size());
  for (int r : m.ranks) std::printf(" %d", r);
  std::printf("; gamma (local reduction) = %.4f ns/B\n", m.gamma * 1e9);
  std::printf("# messages above %.0f bytes pay alpha_rndv (rendezvous); buffers above `cache` bytes pay beta_mem "
              "(memory); ranks above the cores pay alpha_sched per message, and `stretch` of the CPU work stretches "
              "by the time-sharing\n",
              m.eager_bytes);
  std::printf("# %18s %10s %10s %10s %10s %10s %10s %7s %22s %9s %9s\n", "reducer", "alpha(us)", "a_rndv(us)",
              "a_sched(us)", "beta(ns/B)", "b_mem(ns/B)", "cache (B)", "stretch", "fitted sizes (B)", "rms fit",
              "held-out");
  Json held_json = Json::object();
  for (const auto& [name, c] : m.params) {
    const bool has_held = held.count(name) > 0;
    std::snprintf(line, sizeof line, "%8.1f%%", has_held ? 100 * held.at(name) : 0.0);
    std::printf("  %18s %10.3f %10.3f %10.3f %10.5f %10.5f %10.0f %7.1f %10.0f..%-11.0f %8.1f%% %9s\n",
                name.c_str(), c.alpha * 1e6, c.alpha_rndv * 1e6, c.alpha_sched * 1e6, c.beta * 1e9, c.beta_mem * 1e9,
                c.cache_bytes, c.stretch, m.min_bytes.at(name), m.max_bytes.at(name), 100 * m.rms_rel_error.at(name),
                has_held ? line : "-");
    if (has_held) held_json[name] = held.at(name);
  }
  if (!holdout.empty()) out["holdout"] = {{"files", cli.holdout}, {"rms_rel_error", held_json}};
  // The hierarchical reducer priced from its parts' fits, where the sweeps have its rows and its parts.
  if (m.params.count("hierarchical") && m.params.count("parameter_server") && m.params.count(m.options.leader)) {
    ReducerOptions o;
    const double fit_err = rms_rel_error_from_parts(m, sweep_rows(docs, "fit file", o, fit_max));
    const double held_err = holdout.empty() ? -1 : rms_rel_error_from_parts(m, sweep_rows(holdout, "held-out file", o));
    std::snprintf(line, sizeof line, ", %.1f%% on the held-out files' rows", 100 * held_err);
    std::printf("# hierarchical from its parts (parameter_server's fit within the nodes, %s's among the leaders; "
                "never fitted to a hierarchical time): rms %.1f%% on the fitted files' rows%s\n",
                m.options.leader.c_str(), 100 * fit_err, held_err >= 0 ? line : "");
    out["hierarchical_from_parts"] = {{"rms_rel_error_fit_rows", fit_err}};
    if (held_err >= 0) out["hierarchical_from_parts"]["rms_rel_error_holdout_rows"] = held_err;
  }

  // Predictions at the requested rank counts.
  std::printf("\n# predicted allreduce of %.0f bytes\n", bytes);
  std::printf("# %18s %8s %14s %11s %11s\n", "reducer", "ranks", "time (us)", "algbw", "busbw");
  Json preds = Json::array();
  size_t extrapolated = 0;
  for (const auto& entry : m.params)
    for (int p : ranks) {
      const std::string& name = entry.first;
      const double t = m.predict(name, p, p, bytes);
      // Outside the sizes the reducer was fitted on, a coefficient the rows could not pin down (a rendezvous latency
      // fitted to 0 on one row, beta from one size) priced 64 MiB at 1814 GB/s without a word (a hunt): said.
      const bool outside = bytes < m.min_bytes.at(name) || bytes > m.max_bytes.at(name);
      if (outside) ++extrapolated;
      // One rank reduces nothing: no time, and no bandwidth to speak of (it printed 0.000).
      const char* mark = outside ? "  extrapolated" : "";
      if (t <= 0) {
        std::printf("  %18s %8d %14.1f %11s %11s%s\n", name.c_str(), p, t * 1e6, "-", "-", mark);
      } else {
        const double algbw = bytes / t / 1e9;
        std::printf("  %18s %8d %14.1f %11.3f %11.3f%s\n", name.c_str(), p, t * 1e6, algbw,
                    algbw * allreduce_bus_factor(p), mark);
      }
      preds.push_back({{"reducer", name}, {"ranks", p}, {"bytes", bytes}, {"time_us", t * 1e6},
                       {"extrapolated", outside}});
    }
  out["predictions"] = preds;
  if (extrapolated > 0)
    std::printf("# extrapolated: %.0f bytes lies outside the sizes that reducer was fitted on (the fit's \"fitted sizes\"):"
                " its rows do not pin down every term there, so the time is a guess, not a prediction\n", bytes);

  if (split) out["batch_split"] = print_batch_split(cli, network, model_bytes, profiles, &m);
  if (!widths.empty()) out["parallelism"] = print_parallelism(cli, widths, ranks, network, profiles, &m);

  size_t outside = 0;
  if (!measured.empty()) {
    // Predictions against a measured sweep, for sizes inside each reducer's fitted range.
    std::printf("\n# check against %s (%d ranks), tolerance %g%%\n", cli.check.c_str(), check_rows[0].ranks,
                100 * cli.tolerance);
    std::printf("# %12s %18s %14s %14s %9s\n", "size (B)", "reducer", "measured (us)", "model (us)", "error");
    Json checks = Json::array();
    double worst = 0;
    for (const SweepRow& r : check_rows) {
      const double t = r.seconds, pred = m.predict(r);
      const double err = (pred - t) / t;
      const bool ok = std::abs(err) <= cli.tolerance;
      outside += !ok;
      worst = std::max(worst, std::abs(err));
      std::printf("  %12.0f %18s %14.2f %14.2f %8.1f%%%s\n", r.bytes, r.reducer.c_str(), t * 1e6, pred * 1e6,
                  100 * err, ok ? "" : "  OUTSIDE");
      checks.push_back({{"reducer", r.reducer}, {"bytes", r.bytes}, {"measured_us", t * 1e6},
                        {"model_us", pred * 1e6}, {"rel_error", err}});
    }
    std::printf("# %zu of %zu predictions outside %g%% (worst %.1f%%)\n", outside, checks.size(),
                100 * cli.tolerance, 100 * worst);
    out["check"] = {{"file", cli.check}, {"tolerance", cli.tolerance}, {"rows", checks}, {"outside", outside}};
  }
  write_output(cli, std::move(out));
  if (outside > 0)
    throw RunFailed("model: " + std::to_string(outside) + " predictions differ from the measured times by more than " +
                    config::fmt_number(100 * cli.tolerance) + "%");
}

}  // namespace

void add_model_command(CLI::App& app) {
  auto cli = std::make_shared<ModelCliOptions>();
  auto* cmd = app.add_subcommand("model", "Fit the alpha-beta-gamma cost model to an allreduce sweep and predict");
  cmd->add_option("--fit", cli->fit, "`dtbench allreduce --json` file(s) to fit (repeatable)");
  cmd->add_option("--ranks", cli->ranks, "Rank counts to predict, comma-separated")->capture_default_str();
  cmd->add_option("--bytes", cli->bytes, "Allreduce size to predict (K/M/G suffixes)")->capture_default_str();
  cmd->add_option("--compute-us-per-image", cli->compute_us_per_image,
                  "Batch split: compute time per image (us); enables the batch-split table");
  cmd->add_option("--batch", cli->batch, "Batch split: total batch size (a power of two)")->capture_default_str();
  cmd->add_option("--model-bytes", cli->model_bytes, "Batch split: gradient bytes per step (default --bytes)");
  cmd->add_option("--network", cli->network,
                  "Batch split: a profile of results/published/networks.json, or 'fitted' (default with --fit)");
  cmd->add_option("--intra-network", cli->intra_network,
                  "Batch split and --layers, --reducer hierarchical: the link within a node of --ranks-per-node ranks, a "
                  "profile of results/published/networks.json; --network then joins the node leaders");
  cmd->add_option("--reducer", cli->reducer, "Batch split: the reducer whose cost formula times the allreduce")
      ->capture_default_str();
  cmd->add_option("--backward-share", cli->backward_share,
                  "Batch split: the share of a step's compute that can overlap the allreduce (backward)")
      ->capture_default_str();
  cmd->add_option("--layers", cli->layers,
                  "Data against model parallelism: a fully connected stack's widths, inputs first (e.g. 784,8192,10), "
                  "timed at --batch over --ranks with --compute-us-per-image on --network")
      ->check(cli::non_empty_value);
  cmd->add_option("--micro-batches", cli->micro_batches,
                  "Data against model parallelism: the pipeline's micro-batches per step (0: 4 per rank, at most "
                  "--batch)")
      ->capture_default_str()
      ->check(cli::non_negative);  // before any table is printed
  cmd->add_option("--ranks-per-node", cli->ranks_per_node,
                  "hierarchical: ranks per node in the predictions, the batch split and the parallelism table "
                  "(0: one node; default: the fitted sweeps' nodes)")
      ->check(cli::non_negative);  // the default, -1, is not checked
  cmd->add_option("--check", cli->check, "Compare predictions with this measured sweep (sizes inside the fit range)");
  cmd->add_option("--holdout", cli->holdout,
                  "Held-out `dtbench allreduce --json` file(s), not fitted: report the model's rms error on them "
                  "(repeatable)");
  cmd->add_option("--tolerance", cli->tolerance, "--check: largest relative error accepted")->capture_default_str();
  cmd->add_option("--fit-max-bytes", cli->fit_max, "Fit only rows up to this size (default: all)");
  cmd->add_option("--eager-bytes", cli->eager, "Messages up to this size pay alpha, larger ones alpha_rndv")
      ->capture_default_str();
  CLI::Option* json = cmd->add_option("--json", cli->json, "Write the fit, predictions and answers to this JSON file");
  cmd->callback([cli, json, cmd] {
    // An empty name (an unset shell variable) wrote no JSON and said nothing.
    if (json->count() > 0 && cli->json.empty()) throw BadInput("--json: an empty file name");
    for (const CLI::Option* o : cmd->get_options())
      if (o->count() > 0) cli->given.insert(o->get_name());
    run_model_command(*cli);
  });
}

}  // namespace dtbench
