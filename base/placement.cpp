// base/placement.cpp -- process binding and NUMA-local memory with hwloc.
#include "base/placement.h"

#include <bspk.h>
#include <hwloc.h>

#include <climits>
#include <cstdlib>
#include <vector>

#include "base/config.h"
#include "base/error.h"

namespace bspk::placement {

namespace {

hwloc_topology_t topo = nullptr;
hwloc_nodeset_t mem_nodes = nullptr;  // where our frames go; null: leave to the kernel

std::string list(hwloc_const_bitmap_t s) {
  char* c = nullptr;
  hwloc_bitmap_list_asprintf(&c, s);
  std::string out = c ? c : "?";
  free(c);
  return out;
}

}  // namespace

Result place(int local_rank, int local_procs, bool launcher_binds) {
  Result r;
  std::string mode = config::get_enum(config::Var::BIND);  // auto, core or none
  if (!topo) {
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
      if (topo) hwloc_topology_destroy(topo);
      topo = nullptr;
      r.how = "not bound: hwloc could not load the topology";
      return r;
    }
  }
  hwloc_bitmap_t cur = hwloc_bitmap_alloc();
  hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(topo);
  r.host_pus = hwloc_bitmap_weight(allowed);
  if (hwloc_get_cpubind(topo, cur, HWLOC_CPUBIND_PROCESS) != 0) hwloc_bitmap_copy(cur, allowed);
  if (launcher_binds) {
    r.bound = !hwloc_bitmap_isequal(cur, allowed);
    r.how = r.bound ? "bound by bspkrun" : "not bound by bspkrun (--bind none, or auto with a core for each)";
  } else if (!hwloc_bitmap_isequal(cur, allowed) && !hwloc_bitmap_iszero(cur)) {
    r.bound = true;
    r.how = "bound by the launcher";
  } else if (mode == "none") {
    r.how = "not bound (BSPK_BIND=none)";
  } else {
    int ncores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, allowed, HWLOC_OBJ_CORE);
    if (ncores <= 0) ncores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, allowed, HWLOC_OBJ_PU);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (local_procs <= ncores) {
      // Each process gets its own core(s): hwloc_distrib spreads local_procs
      // sets over the allowed cores, following the topology (sockets, caches).
      std::vector<hwloc_bitmap_t> sets(static_cast<size_t>(local_procs));
      hwloc_obj_t root = hwloc_get_root_obj(topo);
      hwloc_distrib(topo, &root, 1, sets.data(), static_cast<unsigned>(local_procs), INT32_MAX, 0);
      hwloc_bitmap_and(set, sets[static_cast<size_t>(local_rank)], allowed);
      for (auto s : sets) hwloc_bitmap_free(s);
      r.how = strprintf("bound by bspk: %d process%s on %d core%s here", local_procs, local_procs > 1 ? "es" : "",
                        ncores, ncores > 1 ? "s" : "");
    } else {
      // core, and auto: more processes than cores bound round-robin (left to
      // the kernel they ran in two speeds by where it put them; see
      // bspkrun.cpp core_set).
      hwloc_obj_t core = hwloc_get_obj_inside_cpuset_by_type(topo, allowed, HWLOC_OBJ_CORE, local_rank % ncores);
      if (!core) core = hwloc_get_obj_inside_cpuset_by_type(topo, allowed, HWLOC_OBJ_PU, local_rank % ncores);
      if (core) hwloc_bitmap_and(set, core->cpuset, allowed);
      r.how = strprintf("bound by bspk (BSPK_BIND=%s): %d processes share %d cores here, round-robin", mode.c_str(),
                        local_procs, ncores);
    }
    if (hwloc_bitmap_isequal(set, allowed)) {
      // One process with the whole host (a program started directly): its
      // share is everything, so nothing to bind.
      r.how = strprintf("%d process%s with all %d core%s here: nothing to bind", local_procs, local_procs > 1 ? "es" : "",
                        ncores, ncores > 1 ? "s" : "");
    } else if (!hwloc_bitmap_iszero(set)) {
      if (hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
        r.bound = !hwloc_bitmap_isequal(set, allowed);
        hwloc_bitmap_copy(cur, set);
      } else {
        r.how = "not bound: hwloc_set_cpubind failed";
      }
    }
    hwloc_bitmap_free(set);
  }
  hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
  hwloc_cpuset_to_nodeset(topo, cur, nodes);
  r.cpus = list(cur);
  r.numa = list(nodes);
  if (!mem_nodes && !hwloc_bitmap_iszero(nodes)) mem_nodes = hwloc_bitmap_dup(nodes);
  hwloc_bitmap_free(nodes);
  hwloc_bitmap_free(cur);
  return r;
}

bool bind_memory(void* p, size_t len) {
  if (!topo || !mem_nodes || !p || !len) return false;
  return hwloc_set_area_membind(topo, p, len, mem_nodes, HWLOC_MEMBIND_BIND,
                                HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_MIGRATE) == 0;
}

std::string memory_nodes(void* p, size_t len) {
  if (!topo) return "";
  hwloc_bitmap_t s = hwloc_bitmap_alloc();
  hwloc_membind_policy_t pol;
  std::string out;
  if (hwloc_get_area_membind(topo, p, len, s, &pol, HWLOC_MEMBIND_BYNODESET) == 0) out = list(s);
  hwloc_bitmap_free(s);
  return out;
}

}  // namespace bspk::placement
