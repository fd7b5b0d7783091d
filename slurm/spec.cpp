#include "slurm/spec.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <regex>
#include <sstream>

#include "core/config.hpp"
#include "core/error.hpp"
#include "slurm/campaign.hpp"
#include "slurm/process.hpp"
#include "slurm/shell.hpp"

namespace dtbench::slurm {
namespace fs = std::filesystem;
namespace {

using config::fail;
using config::pointer_token;
using config::shown;
using config::throw_unknown_key;

// The Slurm section's fields: each has a default and a check that returns the value to keep.
struct Field {
  std::string key;
  Json def;
  std::function<Json(const Json&, const std::string&)> check;
};

Json integer_in(const Json& v, const std::string& ptr, int64_t lo, int64_t hi) {
  if (!v.is_number() || std::floor(v.get<double>()) != v.get<double>() || v.get<double>() < double(lo) ||
      v.get<double>() > double(hi))
    fail(ptr, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + shown(v));
  return Json(static_cast<int64_t>(v.get<double>()));
}

Json one_of(const Json& v, const std::string& ptr, const std::vector<std::string>& choices) {
  if (v.is_string() && std::find(choices.begin(), choices.end(), v.get<std::string>()) != choices.end()) return v;
  std::string s;
  for (const auto& c : choices) s += (s.empty() ? "\"" : ", \"") + c + "\"";
  fail(ptr, "expected one of " + s + ", got " + shown(v));
}

// Partition, account and QoS names: Slurm's own names never need more than these characters.
Json slurm_name(const Json& v, const std::string& ptr) {
  if (!v.is_string() || !word_chars(v.get<std::string>(), "_.+-"))
    fail(ptr, "expected a Slurm name (letters, digits, '_', '.', '+', '-') or \"\", got " + shown(v));
  return v;
}

Json string_list(const Json& v, const std::string& ptr, const std::function<void(const std::string&, const std::string&)>& each) {
  if (!v.is_array()) fail(ptr, "expected a list of strings, got " + shown(v));
  for (size_t i = 0; i < v.size(); ++i) {
    std::string p = ptr + "/" + std::to_string(i);
    if (!v[i].is_string()) fail(p, "expected a string, got " + shown(v[i]));
    each(v[i].get<std::string>(), p);
  }
  return v;
}

void one_line(const std::string& s, const std::string& ptr) {
  if (has_control_chars(s)) fail(ptr, "line breaks and control characters are not allowed, got " + shown(Json(s)));
}

void non_empty_arg(const std::string& s, const std::string& ptr) {
  if (s.empty()) fail(ptr, "expected a non-empty string");
  if (s.find('\0') != std::string::npos) fail(ptr, "NUL is not allowed");
}

// Partitions: sbatch takes one name or a comma-separated list of them, the job starting in the first that can run it.
Json slurm_partitions(const Json& v, const std::string& ptr) {
  const auto name = [](std::string_view part) { return word_chars(part, "_.+-"); };
  if (!v.is_string() || !(v.get<std::string>().empty() || parts(v.get<std::string>(), ',', name)))
    fail(ptr, "expected a Slurm partition name or a comma-separated list of them (letters, digits, '_', '.', '+', "
              "'-') or \"\", got " + shown(v));
  return v;
}

// The count of a gres of the form name[[:type]:count]: Slurm reads a missing count as 1 ("gpu", "gpu:a100").
int64_t gres_count(const std::string& gres) {
  const std::string last = gres.substr(gres.rfind(':') + 1);
  if (gres.find(':') == std::string::npos || last.find_first_not_of("0123456789") != std::string::npos) return 1;
  return last.size() > 4 ? 99999 : std::stoll(last);  // more than 4 digits is beyond any limit checked
}

// What an extra #SBATCH line sets when it is an option the script sets from the spec's own keys or needs as it writes
// it: the option and where to give it instead ("" for any other line). sbatch takes the last of a repeated option, so
// "--nodes=3" after the script's own line ran the job on 3 nodes under configs resolved for another rank count, and
// "--no-requeue" stopped the checkpointed requeue (found by a hunt). A long name is taken as sbatch's getopt_long
// takes it, an unambiguous prefix included ("--tim=5"). (--gres: check_slurm_section, only beside /slurm/gres.)
std::string owned_sbatch_option(const std::string& line) {
  // An option, the spec's key that gives it ("" when the script needs it as it writes it) and, for those no key gives
  // and no script may hold (clusters, wait, test-only, version, usage, help), why the line is refused.
  struct Owned {
    const char* name;
    const char* key;
    const char* why;
  };
  static const Owned kLong[] = {
      {"nodes", "/slurm/nodes", nullptr}, {"ntasks", "/slurm/nodes and /slurm/tasks_per_node", nullptr},
      {"ntasks-per-node", "/slurm/tasks_per_node", nullptr},
      {"tasks-per-node", "/slurm/tasks_per_node", nullptr},  // sbatch's alias
      {"cpus-per-task", "/slurm/cpus_per_task", nullptr},
      {"gpus", "/slurm/gpus_per_node or /slurm/gpus_per_task", nullptr},
      {"gpus-per-node", "/slurm/gpus_per_node", nullptr}, {"gpus-per-task", "/slurm/gpus_per_task", nullptr},
      {"time", "/slurm/time", nullptr}, {"partition", "/slurm/partition", nullptr},
      {"account", "/slurm/account", nullptr}, {"qos", "/slurm/qos", nullptr},
      {"signal", "/slurm/signal_seconds", nullptr}, {"array", "/slurm/array", nullptr},
      {"requeue", "", nullptr}, {"no-requeue", "", nullptr}, {"open-mode", "", nullptr}, {"output", "", nullptr},
      {"error", "", nullptr}, {"job-name", "", nullptr},
      // The campaign follows its jobs in the queue of the clusters the environment names (SBATCH_CLUSTERS): a
      // line's clusters were not asked, and its jobs looked finished at once (found by a review).
      {"clusters", "", "set SBATCH_CLUSTERS in the environment instead, whose clusters the sweep's and pbt's queue "
                       "polls ask"},
      // sbatch blocked until each job ended, one job at a time, and a failed job's id never reached jobs.json (a
      // hunt; SBATCH_WAIT is left out of sbatch's environment for the same reason).
      {"wait", "", "sbatch would wait for each job to end before the next is submitted, and lose a failed job's id; "
                   "use the sweep's or pbt's own --wait"},
      // sbatch then submits nothing: the campaign was written and the submission failed with exit 1 (a hunt).
      {"test-only", "", "sbatch would only check the request and submit nothing (the sweep checks it so before it "
                        "writes anything)"},
      {"version", "", "sbatch would print its version and submit nothing"},
      {"usage", "", "sbatch would print its usage and submit nothing"},
      {"help", "", "sbatch would print its help and submit nothing"}};
  // Every option of the line (sbatch reads them all, and bundled letters: "--exclusive --nodes=2" and "-HN3" gave
  // their later options past this check; a hunt), by its long name; a letter is shown as "-N (--nodes)".
  for (const SbatchLineOption& o : sbatch_line_options(line)) {
    const bool letter = o.written.rfind("--", 0) != 0;
    const std::string given = letter ? o.name : o.written.substr(2);
    for (const Owned& owned : kLong) {
      if (given != owned.name && !(given.size() >= 2 && std::string(owned.name).rfind(given, 0) == 0)) continue;
      const std::string name = letter ? o.written + " (--" + owned.name + ")" : std::string("--") + owned.name;
      if (owned.why != nullptr) return name + ": " + owned.why;
      return name + (*owned.key ? std::string(": give it as ") + owned.key : std::string(", which the script needs as it writes it")) +
             " (sbatch takes the last of a repeated option: the job would not be the one the runs' configs were "
             "resolved for, or would not requeue, or write its output elsewhere)";
    }
  }
  return "";
}

// The keys, defaults and checks of the "slurm" section (slurm/README.md describes each).
const std::vector<Field>& slurm_fields() {
  static const std::vector<Field> fields = {
      {"nodes", 1, [](const Json& v, const std::string& p) { return integer_in(v, p, 1, 100000); }},
      // ranks K = nodes x tasks_per_node
      {"tasks_per_node", 1, [](const Json& v, const std::string& p) { return integer_in(v, p, 1, 100000); }},
      {"cpus_per_task", 1, [](const Json& v, const std::string& p) { return integer_in(v, p, 1, 100000); }},
      // GPU requests: one of these three (check_slurm_section). gpus_per_task: Slurm binds a GPU per task;
      // gpus_per_node and gres: each task sees the node's GPUs and dtbench picks its local rank mod count.
      {"gpus_per_node", 0, [](const Json& v, const std::string& p) { return integer_in(v, p, 0, 1024); }},
      {"gpus_per_task", 0, [](const Json& v, const std::string& p) { return integer_in(v, p, 0, 1024); }},
      {"gres", "",
       [](const Json& v, const std::string& p) {
         // The count is from 1 to 1024, as gpus_per_node (a request of 0 is none: leave the key out).
         // name[:type][:count]: a name starting with a letter, then non-empty parts.
         const auto form = [](const std::string& g) {
           return std::isalpha(static_cast<unsigned char>(g[0])) && static_cast<unsigned char>(g[0]) < 128 &&
                  parts(g, ':', [](std::string_view part) { return word_chars(part, "_.-"); });
         };
         if (!v.is_string() || (!v.get<std::string>().empty() && (!form(v.get<std::string>()) ||
                                                                 gres_count(v.get<std::string>()) < 1 ||
                                                                 gres_count(v.get<std::string>()) > 1024)))
           fail(p, "expected a generic resource such as \"gpu\", \"gpu:4\" or \"gpu:a100:2\" (a count from 1 to "
                   "1024), or \"\", got " + shown(v));
         return v;
       }},
      {"time", "01:00:00",
       [](const Json& v, const std::string& p) {
         if (!v.is_string() || slurm_time_seconds(v.get<std::string>()) <= 0)
           fail(p, "expected a Slurm time limit such as \"30\", \"01:30:00\" or \"1-12:00:00\" (at most "
                   "24855-03:13:08), got " + shown(v));
         return v;
       }},
      {"partition", "", slurm_partitions},
      {"account", "", slurm_name},
      {"qos", "", slurm_name},
      // Extra #SBATCH options, written as given.
      {"sbatch", Json::array(),
       [](const Json& v, const std::string& p) {
         return string_list(v, p, [](const std::string& s, const std::string& q) {
           one_line(s, q);
           if (s.empty() || s[0] != '-')
             fail(q, "expected an sbatch option such as \"--exclusive\" or \"--constraint=skylake\", got " +
                         shown(Json(s)));
           if (const std::string owned = owned_sbatch_option(s); !owned.empty())
             fail(q, shown(Json(s)) + " sets " + owned);
         });
       }},
      // Shell lines run before the launch (module load ...): shell code by definition, run as written.
      {"setup", Json::array(), [](const Json& v, const std::string& p) { return string_list(v, p, one_line); }},
      {"launcher", "srun", [](const Json& v, const std::string& p) { return one_of(v, p, {"srun", "mpirun"}); }},
      // Extra arguments to srun or mpirun, each passed as one word.
      {"launcher_args", Json::array(),
       [](const Json& v, const std::string& p) { return string_list(v, p, non_empty_arg); }},
      {"mpi", "pmix",
       // Slurm's MPI plugin types, and pmix by version (pmix_v3, pmix_v5: what the site built); `--submit` asks
       // srun which it has (srun_lacks_mpi).
       [](const Json& v, const std::string& p) {
         static const std::regex pmix_version("pmix_v[1-9][0-9]?");
         if (v.is_string() && std::regex_match(v.get<std::string>(), pmix_version)) return v;
         const std::vector<std::string> types = {"pmix", "pmi2", "none", "cray_shasta"};
         if (v.is_string() && std::find(types.begin(), types.end(), v.get<std::string>()) != types.end()) return v;
         fail(p, "expected one of \"pmix\", \"pmix_vN\" (a PMIx version: pmix_v4), \"pmi2\", \"none\", "
                 "\"cray_shasta\", got " + shown(v));
       }},
      // --signal=B:USR1@N: checkpoint and requeue N s before the time limit; 0 = off.
      {"signal_seconds", 120, [](const Json& v, const std::string& p) { return integer_in(v, p, 0, 86400); }},
      // One job array per resource set instead of one script per run.
      {"array", false,
       [](const Json& v, const std::string& p) {
         if (!v.is_boolean()) fail(p, "expected true or false, got " + shown(v));
         return v;
       }},
  };
  return fields;
}

std::vector<std::string> keys_of(const std::vector<Field>& fields) {
  std::vector<std::string> k;
  for (const auto& f : fields) k.push_back(f.key);
  return k;
}

const Field* find_field(const std::string& key) {
  for (const auto& f : slurm_fields())
    if (f.key == key) return &f;
  return nullptr;
}

// Axis keys: dot-separated words of letters, digits and '_'.
void check_axis_key(const std::string& key, const std::string& ptr) {
  if (!parts(key, '.', [](std::string_view word) { return word_chars(word, "_"); }))
    fail(ptr, "expected a key path such as \"optimizer.lr\" or \"slurm.nodes\" (words joined by '.')");
  if (key == "seed") fail(ptr, "seeds come from /repeats (base seed, base seed + 1, ...), not from an axis");
  if (key == "name" || key == "output" || key.rfind("output.", 0) == 0)
    fail(ptr, "set by dtbench sweep (each run is named after its point; records go to --out/runs)");
  if (key == "slurm") fail(ptr, "give the Slurm keys one by one (\"slurm.nodes\")");
  if (key.rfind("slurm.", 0) == 0) {
    std::string sub = key.substr(6);
    if (sub == "array") fail(ptr, "/slurm/array applies to the whole sweep and cannot vary");
    if (!find_field(sub)) {
      std::vector<std::string> valid;
      for (const auto& k : keys_of(slurm_fields()))
        if (k != "array") valid.push_back("slurm." + k);
      std::string list;
      for (const auto& k : valid) list += (list.empty() ? "" : ", ") + k;
      std::string best = config::closest_name(key, valid);
      fail(ptr, "unknown Slurm key" + (best.empty() ? std::string() : " (did you mean \"" + best + "\"?)") +
                    "; valid: " + list);
    }
  }
}

std::vector<Json> axis_values(const Json& v, const std::string& key, const std::string& ptr) {
  if (!v.is_array() || v.empty()) fail(ptr, "expected a non-empty list of values, got " + shown(v));
  std::vector<Json> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (key.rfind("slurm.", 0) == 0) out.push_back(check_slurm_value(key.substr(6), v[i], ptr + "/" + std::to_string(i)));
    else out.push_back(v[i]);
  }
  return out;
}

}  // namespace

Json resolve_slurm(const Json* user, const std::string& ptr) {
  if (user && !user->is_object()) fail(ptr, "expected an object, got " + shown(*user));
  if (user)
    for (auto it = user->begin(); it != user->end(); ++it)
      if (!find_field(it.key())) throw_unknown_key(ptr, pointer_token(it.key()), keys_of(slurm_fields()));
  Json out = Json::object();
  for (const auto& f : slurm_fields())
    out[f.key] = (user && user->contains(f.key)) ? f.check((*user)[f.key], ptr + "/" + f.key) : f.def;
  check_slurm_section(out, ptr);
  return out;
}

Json resolve_local(const Json* user, const std::string& ptr) {
  Json out = {{"mpirun_args", Json::array({"--oversubscribe"})}};
  if (!user) return out;
  if (!user->is_object()) fail(ptr, "expected an object, got " + shown(*user));
  for (auto it = user->begin(); it != user->end(); ++it) {
    if (it.key() == "mpirun_args") {
      out["mpirun_args"] = string_list(it.value(), ptr + "/mpirun_args", non_empty_arg);
    } else if (it.key() == "max_jobs") {
      out["max_jobs"] = integer_in(it.value(), ptr + "/max_jobs", 1, 1024);
    } else {
      throw_unknown_key(ptr, pointer_token(it.key()), {"max_jobs", "mpirun_args"});
    }
  }
  return out;
}

int64_t slurm_time_seconds(const std::string& text) {
  // At most 9 digits a field, so that no field and no sum of them overflows (999999999 days fits an int64_t).
  static const std::regex forms("(?:([0-9]{1,9})-)?([0-9]{1,9})(?::([0-9]{1,9}))?(?::([0-9]{1,9}))?");
  std::smatch m;
  if (text.size() > 20 || !std::regex_match(text, m, forms)) return -1;
  auto num = [&](int i) { return m[i].matched ? std::stoll(m[i].str()) : 0LL; };
  int64_t seconds = 0;
  if (m[1].matched) seconds = ((num(1) * 24 + num(2)) * 60 + num(3)) * 60 + num(4);  // D-H, D-H:M, D-H:M:S
  else if (m[4].matched) seconds = (num(2) * 60 + num(3)) * 60 + num(4);             // H:M:S
  else if (m[3].matched) seconds = num(2) * 60 + num(3);                             // M:S
  else seconds = num(2) * 60;                                                        // M
  // Slurm sums the fields as seconds in an int and rounds up to minutes (parse_time.c, time_str2mins): a longer
  // limit wraps there, and "999999999" was queued with another limit than the spec gives.
  return seconds <= kSlurmMaxTimeSeconds ? seconds : -1;
}

Json slurm_defaults() { return resolve_slurm(nullptr, "/slurm"); }

Json check_slurm_value(const std::string& key, const Json& value, const std::string& pointer) {
  const Field* f = find_field(key);
  if (!f) throw_unknown_key(pointer, key, keys_of(slurm_fields()));
  return f->check(value, pointer);
}

bool gres_is_gpu(const std::string& gres) { return gres == "gpu" || gres.rfind("gpu:", 0) == 0; }

void check_slurm_section(const Json& s, const std::string& ptr) {
  const int64_t per_node = s["gpus_per_node"].get<int64_t>(), per_task = s["gpus_per_task"].get<int64_t>();
  const std::string gres = s["gres"].get<std::string>();
  // The second request given (in key order) is the one named.
  std::vector<std::string> given;
  if (per_node > 0) given.push_back("gpus_per_node");
  if (per_task > 0) given.push_back("gpus_per_task");
  if (!gres.empty()) given.push_back("gres");
  if (given.size() > 1)
    fail(ptr + "/" + given[1], "give one GPU request: gpus_per_node, gpus_per_task or gres, not several");
  // The script writes --gres only from /slurm/gres; beside it an extra one would replace it, and a GPU one beside any
  // GPU request would be a second request that the one-GPU-per-rank rule never sees (another resource beside
  // gpus_per_node, "--gres=nvme:1", is fine).
  for (size_t i = 0; i < s["sbatch"].size(); ++i) {
    const std::string line = s["sbatch"][i].get<std::string>();
    if (line.rfind("--gres", 0) != 0 || !(line.size() == 6 || line[6] == '=' || line[6] == ' ' || line[6] == '\t'))
      continue;
    const bool gpu = line.find("gpu") != std::string::npos;
    if (!gres.empty() || (gpu && !given.empty()))
      fail(ptr + "/sbatch/" + std::to_string(i), shown(Json(line)) + " sets --gres: give the GPUs as one of " +
           "/slurm/gpus_per_node, gpus_per_task or gres, and the other resources beside them here (sbatch takes the "
           "last of a repeated option)");
  }
  // GPUs per node from gpus_per_node or a gpu gres ("gpu:4", "gpu:a100:4"): each rank needs its own.
  int64_t node_gpus = per_node;
  std::string node_key = "gpus_per_node";
  if (gres_is_gpu(gres)) {
    node_gpus = gres_count(gres);
    node_key = "gres";
  }
  const int64_t tasks = s["tasks_per_node"].get<int64_t>();
  // K = nodes x tasks_per_node is an MPI rank count (an int; the run config and the record take at most 2^31 - 1): a
  // larger product was cut to 32 bits and a campaign written for it that its own table refused (found by a hunt).
  if (const int64_t ranks = s["nodes"].get<int64_t>() * tasks; ranks > std::numeric_limits<int32_t>::max())
    fail(ptr + "/tasks_per_node", std::to_string(ranks) + " ranks (nodes x tasks_per_node): MPI counts ranks in an "
                                  "int, at most " + std::to_string(std::numeric_limits<int32_t>::max()));
  if (node_gpus > 0 && tasks > node_gpus)
    fail(ptr + "/" + node_key, std::to_string(node_gpus) + (node_gpus == 1 ? " GPU for " : " GPUs for ") + std::to_string(tasks) +
                                   " tasks per node: ranks would share a GPU (dtbench runs one rank per GPU)");
  // mpirun under Slurm starts one daemon task per node, so a per-task binding would give all of a node's
  // ranks the daemon's single GPU.
  if (per_task > 0 && s["launcher"] != "srun")
    fail(ptr + "/gpus_per_task", "needs launcher \"srun\" (under mpirun, Slurm binds the GPUs to mpirun's "
                                 "per-node daemon, not to each rank); use gpus_per_node or gres with mpirun");
  int64_t limit = slurm_time_seconds(s["time"].get<std::string>());
  int64_t signal = s["signal_seconds"].get<int64_t>();
  if (signal > 0 && signal >= limit)
    fail(ptr + "/signal_seconds", std::to_string(signal) + " s is not shorter than the time limit " +
                                      s["time"].get<std::string>() + " (" + std::to_string(limit) + " s)");
}

namespace {

void check_launcher_ranks(const Json& args, const std::string& launcher, int64_t ranks, const std::string& ptr) {
  // A rank count among a launcher's arguments other than the point's would start another number of ranks than its
  // config was resolved for (its batch split, its record's rank count): the run would fail or its record be refused.
  // The launchers' rank-count options: mpirun -np/-n/--np/--n/-c/--c N (the count its own word), srun -n N, -nN,
  // --ntasks N, --ntasks=N. The other launcher's spelling, or a count option with no count after it, fails at launch:
  // refused too. (Counts per node, as --npernode or --ntasks-per-node: check_launcher_ranks_per_node.)
  const bool srun = launcher == "srun";
  const std::string spelling = srun ? "-n N or --ntasks=N" : "-np N, the count its own word";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string a = args[i].get<std::string>();
    const std::string at = ptr + "/" + std::to_string(i);
    const bool mpirun_word = a == "-np" || a == "-n" || a == "--np" || a == "--n" || a == "-c" || a == "--c";
    const bool srun_word = a == "-n" || a == "--ntasks";
    const bool srun_attached = a.rfind("--ntasks=", 0) == 0 ||
                               (a.size() > 2 && a.rfind("-n", 0) == 0 && std::isdigit(static_cast<unsigned char>(a[2])));
    // mpirun takes no count glued to its letter either ("-c1", "-N1": it fails at launch, found by a hunt).
    const size_t letters = a.rfind("-np", 0) == 0 ? 3 : 2;  // -np4 as well (a review)
    const bool glued = a.size() > letters &&
                       (a.rfind("-np", 0) == 0 || a.rfind("-c", 0) == 0 || a.rfind("-N", 0) == 0) &&
                       std::isdigit(static_cast<unsigned char>(a[letters]));
    const bool mpirun_attached = a.rfind("-np=", 0) == 0 || a.rfind("--np=", 0) == 0 || a.rfind("-n=", 0) == 0 ||
                                 a.rfind("--n=", 0) == 0 || a.rfind("-c=", 0) == 0 || a.rfind("--c=", 0) == 0 ||
                                 glued;
    std::string value, words;  // the count asked for, and the words that ask it
    if (!srun && glued)
      fail(at, "'" + a + "': mpirun takes the count of " + a.substr(0, letters) + " as a word of its own (\"" +
                   a.substr(0, letters) + "\", \"" + a.substr(letters) + "\"); it fails at launch otherwise");
    if (srun ? srun_word : mpirun_word) {
      if (i + 1 == args.size()) fail(at, "'" + a + "' without a rank count after it");
      value = args[i + 1].get<std::string>();
      words = a + " " + value;
    } else if (srun && srun_attached) {
      value = a.substr(a[1] == '-' ? 9 : 2);
      words = a;
    } else if (srun ? a == "-np" || a == "--np" || a.rfind("-np=", 0) == 0 || a.rfind("--np=", 0) == 0
                    : srun_word || srun_attached || mpirun_attached) {  // (srun's -c is --cpus-per-task)
      fail(at, "'" + a + "' is not how " + launcher + " takes a rank count (" + spelling + ")");
    }
    if (words.empty()) continue;
    int64_t asked = -1;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), asked);
    if (ec != std::errc() || end != value.data() + value.size() || asked < 1)
      fail(at, "'" + words + "': " + launcher + " takes a rank count there, a whole number of at least 1");
    if (asked != ranks)
      fail(at, "'" + words + "' asks " + launcher + " for " + std::to_string(asked) + (asked == 1 ? " rank" : " ranks") +
                   ", where nodes x tasks_per_node is " + std::to_string(ranks) + " (set the rank count with "
                   "/slurm/nodes and /slurm/tasks_per_node, or leave the option out)");
  }
}

void check_launcher_ranks_per_node(const Json& args, const std::string& launcher, int64_t tasks_per_node,
                                   int64_t ranks, bool one_host, const std::string& ptr) {
  // Options that place a count of ranks on each node: mpirun --npernode N (-npernode, --npernode=N, and -N, its
  // synonym in Open MPI 4.1's mpirun(1)), --map-by ppr:N:node[:...] (--map-by=...) and --ppr N:node (-ppr, the
  // older spelling); srun --ntasks-per-node N (=N). Under Slurm the count is the
  // allocation's tasks per node, and another one starts another number of ranks (or fails at launch); on this host
  // (mpirun -np K, every rank here) fewer than K leaves ranks without a place.
  const bool srun = launcher == "srun";
  auto next = [&](size_t& i) -> std::string {
    if (i + 1 == args.size()) fail(ptr + "/" + std::to_string(i), "'" + args[i].get<std::string>() + "' without a value after it");
    return args[++i].get<std::string>();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string a = args[i].get<std::string>();
    const std::string at = ptr + "/" + std::to_string(i);
    std::string value, words;
    if (srun && a == "--ntasks-per-node") value = next(i), words = a + " " + value;
    else if (srun && a.rfind("--ntasks-per-node=", 0) == 0) value = a.substr(18), words = a;
    else if (!srun && (a == "--npernode" || a == "-npernode" || a == "-N")) value = next(i), words = a + " " + value;
    else if (!srun && a.rfind("--npernode=", 0) == 0) value = a.substr(11), words = a;
    else if (!srun && (a == "--ppr" || a == "-ppr" || a.rfind("--ppr=", 0) == 0)) {
      const std::string m = a.rfind("--ppr=", 0) == 0 ? a.substr(6) : next(i);
      const size_t colon = m.find(':');
      if (colon == std::string::npos || m.compare(colon + 1, 4, "node") != 0) continue;
      value = m.substr(0, colon), words = a.rfind("--ppr=", 0) == 0 ? a : a + " " + m;
    } else if (!srun && (a == "--map-by" || a == "-map-by" || a.rfind("--map-by=", 0) == 0)) {
      const std::string m = a.rfind("--map-by=", 0) == 0 ? a.substr(9) : next(i);
      const size_t colon = m.find(':', 4);
      if (m.rfind("ppr:", 0) != 0 || colon == std::string::npos || m.compare(colon + 1, 4, "node") != 0) continue;
      value = m.substr(4, colon - 4), words = a.rfind("--map-by=", 0) == 0 ? a : a + " " + m;
    } else {
      continue;
    }
    int64_t per_node = -1;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), per_node);
    if (ec != std::errc() || end != value.data() + value.size() || per_node < 1)
      fail(at, "'" + words + "': " + launcher + " takes a count of ranks per node there, a whole number of at least 1");
    const std::string n = std::to_string(per_node) + (per_node == 1 ? " rank" : " ranks");
    if (one_host && per_node < ranks)
      fail(at, "'" + words + "' lets " + launcher + " place " + n + " on this host, where the run has " +
                   std::to_string(ranks) + " (every rank runs here; leave the option out)");
    if (!one_host && per_node != tasks_per_node)
      fail(at, "'" + words + "' asks " + launcher + " for " + n + " per node, where /slurm/tasks_per_node is " +
                   std::to_string(tasks_per_node) + " (set the count there, or leave the option out)");
  }
}

// mpirun's --host/-H list (h1:N1,h2:N2,...; a host without ":N" is one slot, Open MPI 4.1's mpirun(1)) gives the job
// its slots: fewer than the run's ranks, without --oversubscribe, and mpirun refuses at launch ("not enough slots").
void check_launcher_host_slots(const Json& args, const std::string& launcher, int64_t ranks, const std::string& ptr) {
  if (launcher == "srun") return;
  bool oversubscribe = false;
  for (const auto& a : args) oversubscribe = oversubscribe || a.get<std::string>() == "--oversubscribe" ||
                                             a.get<std::string>() == "-oversubscribe";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string a = args[i].get<std::string>();
    const std::string at = ptr + "/" + std::to_string(i);
    std::string list;
    if (a == "--host" || a == "-host" || a == "-H") {
      if (i + 1 == args.size()) fail(at, "'" + a + "' without a value after it");
      list = args[++i].get<std::string>();
    } else if (a.rfind("--host=", 0) == 0) {
      list = a.substr(7);
    } else {
      continue;
    }
    int64_t slots = 0;
    for (size_t start = 0; start <= list.size();) {
      const size_t comma = std::min(list.find(',', start), list.size());
      const std::string entry = list.substr(start, comma - start);
      const size_t colon = entry.rfind(':');
      if (entry.empty() || colon == 0)
        fail(at, "'" + list + "': mpirun's --host takes host[:slots] entries separated by commas");
      int64_t n = 1;
      if (colon != std::string::npos) {
        const std::string count = entry.substr(colon + 1);
        const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
        if (ec != std::errc() || end != count.data() + count.size() || n < 1)
          fail(at, "'" + entry + "': the slots after ':' must be a whole number of at least 1");
      }
      slots = n > INT64_MAX - slots ? INT64_MAX : slots + n;
      start = comma + 1;
    }
    if (!oversubscribe && slots < ranks)
      fail(at, "'" + list + "' gives mpirun " + std::to_string(slots) + (slots == 1 ? " slot" : " slots") +
                   " for " + std::to_string(ranks) + " ranks, and without --oversubscribe it refuses to start them");
  }
}

}  // namespace

void check_launcher_args(const Json& args, const std::string& launcher, int64_t ranks, int64_t tasks_per_node,
                         bool one_host, const std::string& pointer) {
  check_launcher_ranks(args, launcher, ranks, pointer);
  check_launcher_ranks_per_node(args, launcher, tasks_per_node, ranks, one_host, pointer);
  check_launcher_host_slots(args, launcher, ranks, pointer);
  // Runs started here get their session folders from dtbench (in_mpi_session); under Slurm it sets none.
  if (one_host) {
    const std::vector<std::string> words = args.get<std::vector<std::string>>();
    if (const int i = sets_session_folder(words); i >= 0)
      fail(pointer + "/" + std::to_string(i),
           "'" + words[static_cast<size_t>(i)] + "' places Open MPI's session files, which dtbench does for each "
           "run it starts here (each sweep runner and population member a folder of its own in /tmp: mpirun jobs "
           "that share one fail at their start, open-mpi/ompi#8510); leave it out");
  }
}

void check_launcher_cpus(const Json& slurm, const std::string& pointer) {
  if (slurm["launcher"] != "srun") return;
  const Json& args = slurm["launcher_args"];
  const int64_t cpus = slurm["cpus_per_task"].get<int64_t>();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string a = args[i].get<std::string>();
    std::string value, words = a;
    // srun takes an unambiguous prefix of a long option: "--cpus-per-t" and longer (--cpus-per-gpu shares the rest).
    const std::string name = a.substr(0, a.find('='));
    const bool long_form = name.size() >= 12 && std::string("--cpus-per-task").rfind(name, 0) == 0;
    if (a == "-c" || (long_form && name == a)) {
      if (i + 1 == args.size()) fail(pointer + "/" + std::to_string(i), "'" + a + "' without a value after it");
      value = args[i + 1].get<std::string>(), words = a + " " + value;
    } else if (long_form) {
      value = a.substr(name.size() + 1);
    } else if (a.size() > 2 && a.rfind("-c", 0) == 0 && a[2] != '-') {
      value = a.substr(2);
    } else {
      continue;
    }
    int64_t given = -1;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), given);
    if (ec != std::errc() || end != value.data() + value.size() || given != cpus)
      fail(pointer + "/" + std::to_string(i), "'" + words + "' gives each rank other CPUs than /slurm/cpus_per_task (" +
                                                   std::to_string(cpus) + "), which the script passes to srun itself; "
                                                   "set the count there and leave the option out");
  }
}

Json load_base(const Json& base, const fs::path& spec_dir) {
  Json out = base;
  if (base.is_string()) {
    fs::path file = fs::path(base.get<std::string>());
    if (file.is_relative()) file = spec_dir / file;
    try {
      out = read_json_file(file.string(), "the base config");
    } catch (const BadInput& e) {
      fail("/base", e.what());
    }
  }
  if (!out.is_object()) fail("/base", "expected a run config object or its file name, got " + shown(base));
  return out;
}

Spec parse_spec(const Json& doc, const fs::path& spec_dir) {
  if (!doc.is_object()) fail("", "a spec must be a JSON object, got " + shown(doc));
  static const std::vector<std::string> top = {"name", "description", "base", "axes", "zip",
                                               "repeats", "slurm", "local", "program"};
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (std::find(top.begin(), top.end(), it.key()) == top.end()) throw_unknown_key("", pointer_token(it.key()), top);

  Spec spec;
  spec.source = doc;
  if (!doc.contains("name")) fail("/name", "missing: give the campaign a name");
  const Json& name = doc["name"];
  if (!name.is_string() || name.get<std::string>().empty()) fail("/name", "expected a non-empty string, got " + shown(name));
  if (has_control_chars(name.get<std::string>()))
    fail("/name", "line breaks and control characters are not allowed, got " + shown(name));
  if (name.get<std::string>().size() > kMaxCampaignNameBytes)
    fail("/name", "at most " + std::to_string(kMaxCampaignNameBytes) + " bytes (Slurm's job names carry it), got " +
                      std::to_string(name.get<std::string>().size()));
  spec.name = name.get<std::string>();
  if (doc.contains("description")) {
    if (!doc["description"].is_string()) fail("/description", "expected a string, got " + shown(doc["description"]));
    spec.description = doc["description"].get<std::string>();
  }

  if (doc.contains("base")) {
    spec.base = load_base(doc["base"], spec_dir);
    if (doc["base"].is_string()) {
      spec.base_file = doc["base"].get<std::string>();
      if (spec.base_file.is_relative()) spec.base_file = spec_dir / spec.base_file;
    }
    spec.source["base"] = spec.base;
  }
  // The sweep names each run and puts its record under --out/runs; the other output keys (save_weights) are the
  // base's to set.
  const char* kSetBySweep =
      "set by dtbench sweep (each run is named after its point; records go to --out/runs); remove it";
  if (spec.base.contains("name")) fail("/base/name", kSetBySweep);
  if (spec.base.contains("output")) {
    if (!spec.base["output"].is_object()) fail("/base/output", "expected an object, got " + shown(spec.base["output"]));
    for (const char* key : {"dir", "record"})
      if (spec.base["output"].contains(key)) fail(std::string("/base/output/") + key, kSetBySweep);
  }

  if (doc.contains("repeats")) spec.repeats = integer_in(doc["repeats"], "/repeats", 1, 1000).get<int64_t>();

  std::vector<std::string> seen;  // every key once across axes and zip groups
  auto claim = [&](const std::string& key, const std::string& ptr) {
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      fail(ptr, "\"" + key + "\" varies on another axis already");
    // A section and a key inside it on two axes: the later one would overwrite the other's value, and runs
    // labelled with different values would be the same run.
    for (const std::string& other : seen)
      if (key.rfind(other + ".", 0) == 0 || other.rfind(key + ".", 0) == 0)
        fail(ptr, "\"" + key + "\" overlaps \"" + other + "\" on another axis (one would overwrite the other); vary "
                      "the section or keys inside it, not both");
    seen.push_back(key);
  };
  if (doc.contains("axes")) {
    const Json& axes = doc["axes"];
    if (!axes.is_object()) fail("/axes", "expected an object of key: [values], got " + shown(axes));
    for (auto it = axes.begin(); it != axes.end(); ++it) {
      std::string ptr = "/axes/" + pointer_token(it.key());
      check_axis_key(it.key(), ptr);
      claim(it.key(), ptr);
      spec.axes.push_back({"/axes", {it.key()}, {axis_values(it.value(), it.key(), ptr)}});
    }
  }
  if (doc.contains("zip")) {
    const Json& zip = doc["zip"];
    if (!zip.is_array()) fail("/zip", "expected a list of groups {key: [values], ...}, got " + shown(zip));
    for (size_t g = 0; g < zip.size(); ++g) {
      std::string gptr = "/zip/" + std::to_string(g);
      const Json& group = zip[g];
      if (!group.is_object() || group.empty())
        fail(gptr, "expected a non-empty object of key: [values], got " + shown(group));
      Axis axis{gptr, {}, {}};
      for (auto it = group.begin(); it != group.end(); ++it) {
        std::string ptr = gptr + "/" + pointer_token(it.key());
        check_axis_key(it.key(), ptr);
        claim(it.key(), ptr);
        axis.keys.push_back(it.key());
        axis.values.push_back(axis_values(it.value(), it.key(), ptr));
        if (axis.values.back().size() != axis.values.front().size())
          fail(ptr, "has " + std::to_string(axis.values.back().size()) + " values but \"" + axis.keys.front() +
                        "\" has " + std::to_string(axis.values.front().size()) + "; zipped lists must be equally long");
      }
      spec.axes.push_back(std::move(axis));
    }
  }
  // Each point once: an axis value given twice (1 and 1.0 included) would run the same config twice under two
  // names, with the same seeds; /repeats is for repeated runs.
  for (const Axis& a : spec.axes)
    for (size_t i = 0; i < a.values.front().size(); ++i)
      for (size_t j = 0; j < i; ++j) {
        bool same = true;
        for (const auto& list : a.values) same = same && list[i] == list[j];
        if (same)
          fail(a.pointer == "/axes" ? "/axes/" + pointer_token(a.keys.front()) : a.pointer,
               "values " + std::to_string(j) + " and " + std::to_string(i) + " are the same point (" +
                   shown(a.values.front()[i]) + "); use /repeats for repeated runs");
      }

  spec.slurm = resolve_slurm(doc.contains("slurm") ? &doc["slurm"] : nullptr, "/slurm");
  spec.local = resolve_local(doc.contains("local") ? &doc["local"] : nullptr, "/local");
  if (doc.contains("program")) {
    const Json& p = doc["program"];
    string_list(p, "/program", non_empty_arg);
    if (p.empty()) fail("/program", "expected at least the program to run, e.g. [\"/usr/local/bin/dtbench\", \"train\"]");
    for (const auto& a : p) spec.program.push_back(a.get<std::string>());
  }
  return spec;
}

Spec load_spec(const fs::path& path) {
  const Json doc = read_json_file(path.string(), "spec file");
  try {
    fs::path dir = path.parent_path();
    return parse_spec(doc, dir.empty() ? fs::path(".") : dir);
  } catch (const BadInput& e) {
    throw BadInput(path.string() + ": " + e.what());
  }
}

}  // namespace dtbench::slurm
