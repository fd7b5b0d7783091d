#include "core/commands.hpp"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>

#include "core/provenance.hpp"

namespace dtbench {
namespace {

// Human-readable provenance: one "section.key: value" line per leaf.
void print_flat(const Json& j, const std::string& prefix) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      print_flat(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key());
    return;
  }
  if (j.is_array()) {
    std::string s;
    for (const auto& e : j) s += (s.empty() ? "" : " ") + (e.is_string() ? e.get<std::string>() : e.dump());
    std::cout << prefix << ": " << s << "\n";
    return;
  }
  std::cout << prefix << ": " << (j.is_string() ? j.get<std::string>() : j.is_null() ? "-" : j.dump()) << "\n";
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Print provenance: versions, ISA, MPI, CUDA/NCCL, GPUs, CPU, Slurm job");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print as JSON (the block every record carries)");
  cmd->callback([json] {
    Json p = provenance();
    if (*json) {
      std::cout << p.dump(2) << "\n";
      return;
    }
    if (p["slurm"].is_null()) p["slurm"] = "not under Slurm";
    if (p["cuda"]["device_count"] == 0 && !p["cuda"].contains("status")) p["cuda"]["status"] = "no CUDA device";
    print_flat(p, "");
  });
}

}  // namespace dtbench
