// Provenance: everything about the build and the machine that a result depends on. `dtbench info`
// prints it and every JSON record (run records, allreduce sweeps) embeds it under "provenance".
#pragma once

#include <string>

#include "core/json.hpp"

namespace dtbench {

// Build (version, git SHA, compiler, flags), libraries (oneDNN and its ISA, MPI, CUDA/cuDNN/NCCL),
// machine (CPU, cores, memory, OS, GPUs) and, under Slurm, the job id, node list and task layout.
// Safe to call before or after MPI_Init.
Json provenance();

// The memory this process may use, in bytes (0 when unknown): this machine's physical memory, or its memory
// cgroup's limit where that is lower (a Slurm job's --mem under cgroup enforcement, a container's limit). What the
// memory checks of configs and options compare with: against the machine's memory alone, a run over its job's
// limit passed them and was OOM-killed (137) with no record (found by a review).
double physical_memory_bytes();
// "" when physical_memory_bytes() is the machine's memory; else " (the limit of this process's memory cgroup, a
// Slurm job's --mem or a container's; the machine has N GB)", for the memory checks' messages to say which it is.
std::string memory_limit_note();

// The memory cgroup limit of the process whose /proc/PID/cgroup is `proc_cgroup`, with the cgroup file systems
// mounted under `root` (/sys/fs/cgroup): cgroup v2's memory.max ("0::/path") or v1's memory.limit_in_bytes
// ("N:memory:/path", under root/memory), the least along the path up to the root, skipping levels this mount
// namespace does not show. 0 when there is none ("max", or a v1 value of 2^60 bytes and more) or it cannot be read.
double cgroup_memory_limit(const std::string& proc_cgroup, const std::string& root);
// "dtbench 0.9.0 (git 1c717682e971)": the build, as a checkpoint's header names the binary that wrote it.
std::string dtbench_build();

// oneDNN's instruction set on this CPU ("avx2", "avx512_core", ...), as provenance's libraries/onednn/cpu_isa.
std::string cpu_isa();
// Whether oneDNN builds bf16 primitives on this CPU: oneDNN 2.6 does on avx512_core and newer (bf16 arithmetic
// emulated below avx512_core_bf16); an AVX2-only CPU has none, and every bf16 model fails to build there.
bool cpu_has_bf16_primitives();

// A size as the memory checks say it: "868 kB", "49.2 GB" (three digits in the unit that keeps them above 1).
std::string bytes_text(double bytes);

}  // namespace dtbench
