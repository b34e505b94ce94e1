// fabric/select.h -- which libfabric provider a job uses, and how it is tuned.
//
// The caller states the job-layout facts (how many processes, whether they
// share this host, what every message carries in front of its payload);
// select() returns how to open the endpoint and the provider-dependent
// defaults. Rules, in order:
//   1. BSPK_PROVIDER, else FI_PROVIDER if it is one name: any provider string
//      libfabric knows ("udp;ofi_rxd", "net", "tcp;ofi_rxm", "verbs;ofi_rxm",
//      "efa", "cxi", ...; short names: tcp = tcp_provider(), verbs =
//      verbs;ofi_rxm). Whether it can run BSPk is decided by its capabilities
//      (fabric/caps.h) when the endpoint is opened, and a refusal names what
//      is missing. FI_PROVIDER as a list ("tcp,shm") or exclusions ("^psm3",
//      fabric(7)) filters rules 2 and 3 instead (then the listed names, in
//      their order): the first provider the filter allows and the host
//      offers; an exclusion stays in force for libfabric's own loading;
//      BSPK_ERR_ARG if the filter allows none;
//   2. shm when every process is on this host (tcp_provider() if shm is
//      absent, or /dev/shm is absent, read-only or not writable: then with a
//      note, Selection::note);
//   3. across hosts never shm: the first of verbs;ofi_rxm, cxi, efa, opx,
//      psm3 (RDMA-class providers) that this host offers with every
//      capability BSPk needs, else tcp_provider(), never on the loopback
//      interface.
// The deprecated sockets provider is refused (it lost messages in our tests).
// BSPK_IFACE (else FI_TCP_IFACE) picks the network interface; a job whose
// processes are all on this host uses "lo" for network providers.
//
// Tuning is data: providers measured here (net, tcp;ofi_rxm, shm) and verbs;ofi_rxm
// have a row; any other gets defaults from what it offers (Selection).
#pragma once

#include <cstddef>
#include <string>

#include "fabric/fabric.h"

namespace bspk::fabric {

struct JobFacts {
  int nprocs = 1;
  bool all_local = true;     // every process of the job runs on this host
  std::string local_name;    // unique per job and rank: names the endpoint of a provider that
                             // keeps it in a named shared-memory region (its clean-up finds it by it)
  size_t header_bytes = 0;   // bytes every message carries before its payload
};

struct Selection {
  Config config;                  // how to open the Endpoint
  size_t default_frame_size = 0;  // comem frame size when BSPK_FRAME_SIZE is unset
  bool connect_all_pairs = false; // open every connection at start-up, all at once (also done
                                  // wherever the endpoint reports manual control progress)
  std::string reason;             // why this provider (printed with BSPK_VERBOSE=1)
  std::string note;               // for stderr once per job, or "": shm left out (/dev/shm unusable)
};

// Choose and tune the provider for this job. Sets the libfabric environment
// the choice needs before any fi_getinfo (FI_PROVIDER, FI_UNIVERSE_SIZE and,
// for rxm, FI_OFI_RXM_BUFFER_SIZE / FI_OFI_RXM_SAR_LIMIT unless set by the
// user). Throws bspk::Error(BSPK_ERR_ARG) for an unknown or refused provider.
Selection select(const JobFacts& facts);

// libfabric's name for a user-facing one: "tcp" -> tcp_provider(), "verbs" ->
// "verbs;ofi_rxm"; every other name passes through unchanged. Throws
// BSPK_ERR_ARG for an empty name and for the deprecated "sockets".
std::string canonical_provider(const std::string& name);

// What BSPk runs for "tcp": "net", libfabric's native RDM endpoint over TCP
// (in 1.17 a provider of its own; from 1.18 on the tcp provider's RDM
// endpoint), where this libfabric offers it with BSPk's capabilities, else
// "tcp;ofi_rxm" (rxm's RDM emulation over tcp's connected endpoints). Why net
// (README "Providers"): rxm's progress signals a libfabric socketpair on every
// received message (a write and a read more per message, strace); on this machine an
// undeclared superstep of p = 2 took 8.9-9.3 us against 11.9-13.8 on rxm
// (bench/suite.sh, tcp, As Empty counted; Open MPI's barrier 8.4-9.4 us).
const std::string& tcp_provider();

// Which large messages the provider gets split into header and body
// (fabric.h, SplitPolicy): its row's, else PastRxmEagerLimit for any
// ";ofi_rxm" provider, else None. select() puts it in Config::split.
SplitPolicy split_policy(const std::string& canonical_name);

// BSPK_CQ_WAIT=auto: whether the completion queue gets a file-descriptor
// wait object (Config::cq_wait_fd). Only where processes outnumber the CPUs
// of their host (they sleep often, and a sleep then ends at the data instead
// of up to 1 ms after it) and only on the net provider (tcp where libfabric
// offers it without rxm), where the wait object was measured to cost a
// counted empty superstep 0.5-2.8 us at p = 2 (tcp, 4 alternated pairs:
// 7.9-11.7 us without, 9.4-12.9 with) and at p = 4 on 2 cores with 10 ms of
// imbalance saves 70-110 us per counted superstep and 360-450 us per
// declared one (bench/imbalance.sh; README "Benchmarks"). rxm providers pay about 2 us per message for it; shm has
// none.
bool cq_wait_fd_auto(const std::string& canonical_name, bool oversubscribed);

// True if fi_getinfo offers an endpoint of this provider on this host with
// every capability BSPk needs (fabric/caps.h), reaching other hosts if `remote`.
bool provider_available(const std::string& canonical_name, bool remote);


}  // namespace bspk::fabric
