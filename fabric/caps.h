// fabric/caps.h -- what BSPk needs of a libfabric provider, and why one is refused.
//
// BSPk runs on any provider that offers the following (asked of fi_getinfo as
// hints; libfabric fi_getinfo(3), fi_endpoint(3), fi_mr(3)). The provider's
// name is never tested: a provider is refused only for what it lacks, and the
// message names the capability.
//   endpoint  FI_EP_RDM: reliable, unconnected; one endpoint per process and
//             one address vector (FI_AV_TABLE) holding every process.
//   caps      FI_MSG | FI_TAGGED | FI_SEND | FI_RECV: every message is a tagged
//             send of two iovecs (header, payload) into a receive posted for
//             its class (the tag); FI_RMA | FI_READ | FI_REMOTE_READ (and
//             FI_WRITE | FI_REMOTE_WRITE, which rxm's rendezvous may use):
//             one-sided reads of registered frames (the registration check at
//             bspk_init).
//   iovecs    at least 2 per send and receive (tx/rx iov_limit).
//   mode      the provider may require FI_CONTEXT or FI_CONTEXT2 (every
//             operation's context starts with 64 bytes it may use); any other
//             mode bit (FI_RX_CQ_DATA, FI_MSG_PREFIX, FI_ASYNC_IOV, ...) is
//             refused.
//   mr_mode   BSPk honours FI_MR_LOCAL, FI_MR_VIRT_ADDR, FI_MR_ALLOCATED,
//             FI_MR_PROV_KEY and FI_MR_ENDPOINT (each memory region bound to
//             the endpoint and enabled); a provider that needs FI_MR_RAW
//             (keys longer than 64 bits), FI_MR_MMU_NOTIFY, FI_MR_RMA_EVENT or
//             FI_MR_COLLECTIVE is refused.
//   ordering  none: BSPk requests no FI_ORDER_* bit. Every message carries its
//             superstep, its number from its sender and its frame index; the
//             receiver counts per superstep and orders at the boundary
//             (mp/mp.h, dsm/DESIGN.md), so messages may arrive in any order.
//   CQ data   none: the header travels in the message, so remote CQ data
//             (4 bytes on verbs, 8 elsewhere) is not used.
//   progress  manual or automatic: BSPk progresses by polling its completion
//             queue in every runtime call that waits; where the provider's
//             control progress is manual, every connection is opened at
//             bspk_init (fabric/select.h).
// What BSPk reads back and adapts to: mr_mode (addressing, keys, descriptors,
// endpoint binding), inject_size (which sends are injected), max_msg_size
// (the largest frame), tx/rx sizes (queue depths; a full queue is retried),
// the CQ's wait object (blocking wait where there is a file descriptor).
#pragma once

#include <rdma/fabric.h>

#include <cstdint>
#include <string>
#include <vector>

namespace bspk::fabric::caps {

constexpr uint64_t kRequiredCaps = FI_TAGGED | FI_MSG | FI_RMA | FI_SEND | FI_RECV | FI_READ | FI_WRITE |
                                   FI_REMOTE_READ | FI_REMOTE_WRITE;
constexpr uint64_t kHonouredModes = FI_CONTEXT | FI_CONTEXT2;
constexpr uint64_t kHonouredMrModes = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
constexpr size_t kMinIov = 2;

// fi_getinfo hints asking for all of the above from provider `prov_name`
// (empty: any provider), plus FI_REMOTE_COMM (processes on other hosts) when
// `remote`. (FI_LOCAL_COMM is not asked for, as shm lists neither bit; an
// entry that lists FI_REMOTE_COMM without it is refused by unmet().) The
// caller frees them with fi_freeinfo. Returns null when out of memory.
fi_info* hints(const std::string& prov_name, bool remote);

// Every requirement of the list above (FI_REMOTE_COMM when `remote`) that
// fi_getinfo entry `e` does not meet, one phrase each naming the capability and what BSPk uses it for
// (e.g. "FI_RMA (one-sided reads of registered memory: ...)"). Empty when
// BSPk can run on it.
std::vector<std::string> unmet(const fi_info* e, bool remote);

// Why `prov_name` cannot run BSPk on this host, for an error message: asks
// fi_getinfo what the provider offers with no requirements and lists what
// its best entry lacks; or says that it offers no FI_EP_RDM endpoint here,
// or no endpoint at all (unknown provider or no device).
std::string why_unusable(const std::string& prov_name, bool remote);

}  // namespace bspk::fabric::caps
