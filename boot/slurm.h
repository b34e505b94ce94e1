// boot/slurm.h -- bootstraps for jobs started by srun (see slurm.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "boot/bootstrap.h"

namespace bspk::boot {

// kind: "pmix" (srun --mpi=pmix), "pmi2" (srun --mpi=pmi2) or "slurm" (plain
// srun: SLURM_PROCID/SLURM_STEP_NUM_TASKS/SLURM_STEP_NODELIST and the job hub
// as rendezvous). Throws BSPK_ERR_BOOT naming what is missing.
std::unique_ptr<Bootstrap> make_slurm_bootstrap(const std::string& kind);

// First host of a Slurm hostlist ("node[01-03,07],gpu5" -> "node01").
std::string first_host(const std::string& hostlist);

// Where a plain-srun job's processes look for its hub (which runs in the
// step's pid 0, on the step's first node): BSPK_HUB_HOST when set; else the
// first node of `hostlist`, replaced by its address when `aliases` (Slurm's
// SLURM_NODE_ALIASES, "name:addr:hostname,..." for nodes whose names are in
// no resolver, e.g. cloud nodes) lists it with an IPv4 address (the hub
// listens on IPv4; a bracketed IPv6 address is passed over).
std::string hub_host(const std::string& hostlist, const std::string& aliases);

// Candidate TCP ports of a plain-srun job's hub: BSPK_HUB_PORT, else 8 ports
// derived from the job and step ids (below the ephemeral range).
std::vector<uint16_t> hub_ports(uint64_t job, uint64_t step);

// The record pid 0 publishes under PMIx/PMI2: "<key hex>;<port>,<addr>,...".
// parse_hub_record is false unless the key is auth::kKeyBytes bytes of hex,
// the port a decimal number in [1, 65535] and every address non-empty.
std::string hub_record(const std::string& key, uint16_t port, const std::vector<std::string>& addrs);
bool parse_hub_record(const std::string& rec, std::string* key, uint16_t* port, std::vector<std::string>* hosts);

}  // namespace bspk::boot
