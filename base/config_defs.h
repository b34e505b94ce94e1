// base/config_defs.h -- every BSPK_* environment variable BSPk reads, one row
// each (an X-macro, as Sandia OpenSHMEM's shmem_env_defs.h). base/config.h
// turns it into config::Var and the typed accessors; `bspkrun --info` prints it
// and `bspkrun --info=markdown` the README's Environment table (the User rows).
// A new setting is one row here, then config::get_*(Var::ID) where it is read.
//
// BSPK_CONFIG_VAR(ID, NAME, TYPE, CATEGORY, DEFAULT, LO, HI, CHOICES, DEFAULT_TEXT, HELP)
//   ID            config::Var::ID
//   NAME          the environment variable
//   TYPE          Int (decimal, within [LO, HI]), Size (bytes; K, M, G suffixes),
//                 Seconds (> 0), SecondsOrOff (> 0, or 0 / off = never),
//                 Bool (1/0, yes/no, true/false, on/off), String, Enum (one of CHOICES)
//   CATEGORY      User: documented in the README; Launcher: set by bspkrun for the
//                 processes it starts; Test: test hooks
//   DEFAULT       the default, typed; kNoDefault when it depends on the job (the
//                 reader passes it: config::get_*(Var, runtime_default))
//   LO, HI        Int rows: the allowed range (0, 0 for other types)
//   CHOICES       Enum rows: "a|b|c" (nullptr otherwise)
//   DEFAULT_TEXT  the default as documented; nullptr: printed from DEFAULT
//   HELP          one line, Markdown (README table and --info)
// The FI_* fallbacks (FI_TCP_IFACE, FI_PROVIDER) are libfabric's variables,
// named only in the help of the BSPK_ variable they stand in for.
//
// No include guard: included once per expansion, with BSPK_CONFIG_VAR defined.
// DEFAULT, LO and HI are expanded only in base/config.cpp (they may name
// version:: constants).

// ---- user settings (README "Environment", in this order) ----
BSPK_CONFIG_VAR(FRAME_SIZE, "BSPK_FRAME_SIZE", Size, User, kNoDefault, 0, 0, nullptr,
                "64K on shm, 256K on tcp/verbs",
                "frame size in bytes (power of two from 64 to 64M; K/M suffixes). Larger frames move large messages "
                "faster; every message occupies at least one frame on its receiver until freed")
BSPK_CONFIG_VAR(SYNC_TIMEOUT, "BSPK_SYNC_TIMEOUT", SecondsOrOff, User, 60.0, 0, 0, nullptr,
                "60; off for BSPlib programs and under bsprun",
                "seconds a sync (or any wait) may go without progress while no process that could end it "
                "computes -- every process still in that superstep or an earlier one waits too -- before it "
                "reports `BSPK_ERR_TIMEOUT` (a too large `bspk_expect`, a message never sent); a slow process "
                "is waited for. Also how long bspkrun lets processes wait for a late one in `bspk_init`. `0` "
                "or `off`: wait for ever (a process that dies still ends the job)")
BSPK_CONFIG_VAR(MAX_AHEAD, "BSPK_MAX_AHEAD", Int, User, 16, 1, version::kMaxAheadLimit, nullptr, nullptr,
                "supersteps a sender may run ahead of a receiver")
BSPK_CONFIG_VAR(STATS, "BSPK_STATS", Bool, User, false, 0, 0, nullptr, nullptr,
                "`1`: one `bspk-stats pid=... supersteps=... msgs_sent=... bytes_sent=... bytes_copied=... "
                "sync_wait_s=...` line per process at finalize (stdout)")
BSPK_CONFIG_VAR(PROFILE, "BSPK_PROFILE", String, User, kNoDefault, 0, 0, nullptr, "off",
                "per-superstep profile: one CSV row per process and superstep (w, bytes and messages in and "
                "out, sync wait, wall time) into this file (`%p` in the name: one file per pid; `1`, `on`, `yes` "
                "or `true`: `bspk-profile.csv`; `0`, `off`, `no` or `false`: no profile); see "
                "\"Profiling and the cost model\"")
BSPK_CONFIG_VAR(ERRORS, "BSPK_ERRORS", Enum, User, "print", 0, 0, "print|quiet|abort", nullptr,
                "`print` errors to stderr too, `quiet`, or `abort` the job on the first error")
BSPK_CONFIG_VAR(CHECK, "BSPK_CHECK", Bool, User, false, 0, 0, nullptr, nullptr,
                "`1`: report elements written by two processes in one superstep (`BSPK_ERR_CONFLICT`)")
BSPK_CONFIG_VAR(VERBOSE, "BSPK_VERBOSE", Bool, User, false, 0, 0, nullptr, nullptr,
                "`1`: pid 0 prints the provider, its mr_mode and the registration check")
BSPK_CONFIG_VAR(POOL_LIMIT, "BSPK_POOL_LIMIT", Size, User, uint64_t{0}, 0, 0, nullptr, "none",
                "most bytes of slabs per process (frames, and separately 4 KiB buffers); bspk_finalize lifts it")
BSPK_CONFIG_VAR(POOL_RESERVE, "BSPK_POOL_RESERVE", Size, User, uint64_t{0}, 0, 0, nullptr, "0",
                "bytes of frame slabs each process allocates, registers and touches at `bspk_init`, so that "
                "the first supersteps needing new frames pay no page faults (steady timings: benchmarks, the "
                "cost model); counts against `BSPK_POOL_LIMIT`")
BSPK_CONFIG_VAR(SPIN_US, "BSPK_SPIN_US", Int, User, 200, 0, 10'000'000, nullptr, "200 (0 if oversubscribed)",
                "busy-poll time before blocking")
BSPK_CONFIG_VAR(YIELD_MS, "BSPK_YIELD_MS", Int, User, 100, 0, 3'600'000, nullptr, "100 (2 if oversubscribed)",
                "after the spin, how long an idle process keeps polling and yielding its CPU (`sched_yield`) "
                "before it sleeps between polls (50 us, doubling to 1 ms); a wait that reaches the sleeps ends "
                "up to 1 ms after its data, except on one host with the rings, where a peer's send or count-board "
                "join wakes it at once. Measured on 2 cores (bench/imbalance.sh), p = 2, one process "
                "computing 3 / 10 ms per superstep: 2 ms of yielding added 111-137 / 285-302 us per superstep, "
                "100 ms 17-22 / 28-35 us (Open MPI 19-31 us). Oversubscribed, yielders take time from the "
                "processes that compute (radix sort at p = 4 on 2 cores: 2.0-2.5 ms with 2, 2.8-3.1 ms with 100)")
BSPK_CONFIG_VAR(CQ_WAIT, "BSPK_CQ_WAIT", Enum, User, "auto", 0, 0, "auto|none|fd", nullptr,
                "how an idle process waits for its completion queue after spinning and yielding "
                "(`BSPK_SPIN_US`, `BSPK_YIELD_MS`): `none` (no wait object: sleep 50 us to 1 ms between "
                "polls), `fd` (a wait object, where the provider has one: block in the kernel, waking at "
                "once when data arrive, at a cost per completion), `auto`: `fd` on net (tcp) when the "
                "host's processes outnumber its CPUs, else `none`. Measured on tcp, 2 cores: counted empty "
                "superstep at p = 2 7.9-11.7 us with `none`, 9.4-12.9 us with `fd`; with 10 ms of "
                "imbalance per superstep at p = 4, 316-367 / 615-672 us (counted / declared) beyond the "
                "computation with `none`, 202-246 / 151-251 us with `fd` (Open MPI 146-187); tcp;ofi_rxm: a small "
                "message's one-way time 1.11x raw libfabric with `none`, 1.30x with `fd`")
BSPK_CONFIG_VAR(SPLIT_HEADER, "BSPK_SPLIT_HEADER", Enum, User, "on", 0, 0, "on|off", nullptr,
                "over rxm providers (tcp, verbs), a message whose payload is past rxm's eager limit "
                "(FI_OFI_RXM_EAGER_LIMIT, 16 KiB) travels as its header, then its payload as one iovec into a "
                "frame the receiver posts for it (one rendezvous read instead of two); `off`: header and payload "
                "in one message")
BSPK_CONFIG_VAR(BOUNCE, "BSPK_BOUNCE", Enum, User, "on", 0, 0, "on|off", nullptr,
                "messages of up to 4 KiB + header that the provider cannot inject (net injects 128 bytes, "
                "tcp;ofi_rxm 64) are copied into a registered bounce buffer and sent from there, so `bspk_sync` "
                "does not wait for their completion (about one network latency on tcp 1.17); `off`: they are "
                "sent from the region and waited for")
BSPK_CONFIG_VAR(SPLIT_FRAMES, "BSPK_SPLIT_FRAMES", Int, User, 4, 1, 4, nullptr, nullptr,
                "with split messages: up to this many frames of one message travel as one payload message of "
                "that many iovecs (one rendezvous; capped by the provider's iov_limit, 4 on rxm); 1: one per "
                "frame. bench/pingpong tcp p = 2, 256 KiB frames, 1 / 4 / 8 MiB: 0.99-1.08x / 0.91-0.92x / 0.93-0.99x raw "
                "libfabric's time with 4, 1.27-1.29x / 1.26-1.31x / 1.08-1.10x with 1")
BSPK_CONFIG_VAR(COUNT_EXCHANGE, "BSPK_COUNT_EXCHANGE", Enum, User, "auto", 0, 0, "auto|board|messages|direct|halving|tree", nullptr,
                "how counted and `bspk_will_send` supersteps sum the send counts: `board` (shared memory, "
                "every process on one host), `direct` (one round of p-1 messages per process), `halving` "
                "(recursive halving: log2 p rounds of one message per process, two more if p is not a power "
                "of two), `tree` "
                "(2 ceil(log2 p) rounds of one message); `auto`: `board` on one host, else `direct` up to "
                "16 processes when no host has more processes than CPUs, `tree` otherwise; `messages`: what `auto` "
                "picks across hosts, also on one host (no board). `auto` on one host whose `/dev/shm` has no "
                "room for the board, or is read-only or absent, also goes by messages (a note on stderr); "
                "`board` then ends the job at start-up. The collectives' header superstep follows it "
                "(`bspk_sync_exchange()`: rounds where this is `halving` or `tree`)")
BSPK_CONFIG_VAR(SHM_RINGS, "BSPK_SHM_RINGS", Enum, User, "auto", 0, 0, "auto|on|off", nullptr,
                "messages of up to 496 bytes (header included), and injected ones of up to 4 KiB + header over "
                "several cells, through shared-memory rings instead of the provider: `auto`/`on` when every process is on one host (`auto`: up to 16 processes, and only where `/dev/shm` has room for the rings, p^2 x 40 KiB, else a note on stderr; `on` without room ends the job at start-up), `off` never")
BSPK_CONFIG_VAR(SHM_PULL, "BSPK_SHM_PULL", Enum, User, "auto", 0, 0, "auto|on|off", nullptr,
                "with the rings on, every larger message (MP frames, DSM stores) is copied by its receiver "
                "straight from the sender's memory instead of through the provider (one memcpy from the "
                "sender's frame slab or run arena, which are shared memory on one host; process_vm_readv for "
                "other memory): "
                "`auto` with the shm provider, `on` with any, `off` never; where the kernel refuses "
                "cross-memory access the provider carries them")
BSPK_CONFIG_VAR(RX_DEPTH, "BSPK_RX_DEPTH", Int, User, 32, 2, 4096, nullptr, nullptr,
                "most receive frames kept posted; unset: 2 at first, twice as many whenever an arrival takes the "
                "last posted one (a burst), up to 32; set: that many from the start")
BSPK_CONFIG_VAR(COUNT_CARRY, "BSPK_COUNT_CARRY", Enum, User, "auto", 0, 0, "auto|on|off", nullptr,
                "counted supersteps with the `direct` count exchange: a process's count for a peer travels in "
                "the superstep's last message of one frame to it (held back until the next send to that peer or "
                "`bspk_sync`, after a counted superstep), not as a message of its own; `auto`/`on`: so, "
                "`off`: always a count message")
BSPK_CONFIG_VAR(TX_BOUND, "BSPK_TX_BOUND", Enum, User, "auto", 0, 0, "auto|on|off", nullptr,
                "`on`: each process keeps at most max(8, min(tx, rx queue) / (16 P)) sends in flight and injects "
                "none; `auto`: on for net (what tcp runs where offered) and for providers without a tuning row "
                "(any but tcp;ofi_rxm, shm, verbs)")
BSPK_CONFIG_VAR(DMABUF_PROBE, "BSPK_DMABUF_PROBE", Bool, User, false, 0, 0, nullptr, "off",
                "`on`: let libfabric's verbs provider read /proc/kallsyms at its initialization (whether "
                "dma-buf memory can be registered; 70-110 ms per process here, BSPk registers none); `off`: "
                "that open fails during BSPk's fi_getinfo calls (fabric/getinfo.h)")
BSPK_CONFIG_VAR(SMALL_RX_DEPTH, "BSPK_SMALL_RX_DEPTH", Int, User, 64, 2, 4096, nullptr, nullptr,
                "4 KiB receive buffers kept posted (for messages of up to 4 KiB)")
BSPK_CONFIG_VAR(IFACE, "BSPK_IFACE", String, User, kNoDefault, 0, 0, nullptr,
                "`lo` when all local, else the first non-loopback IPv4",
                "network interface (domain) for tcp and other network providers, not shm (when unset: `FI_TCP_IFACE`, if set)")
BSPK_CONFIG_VAR(BOOTSTRAP, "BSPK_BOOTSTRAP", Enum, User, kNoDefault, 0, 0, "bspkrun|pmix|pmi2|slurm|singleton",
                "from the environment", "`pmix`, `pmi2`, `slurm` (plain srun), `bspkrun` or `singleton`")
BSPK_CONFIG_VAR(PROVIDER, "BSPK_PROVIDER", String, User, kNoDefault, 0, 0, nullptr,
                "see \"Running on a cluster\"",
                "libfabric provider, any name `fi_info -l` lists: `tcp` (= `net` where offered, else "
                "`tcp;ofi_rxm`), `tcp;ofi_rxm`, `shm`, `verbs` (= `verbs;ofi_rxm`), `udp;ofi_rxd`, `efa`, ... "
                "(as bspkrun `--provider`; when unset: `FI_PROVIDER`, if set); see \"Providers\"")
BSPK_CONFIG_VAR(FAILURE_TIMEOUT, "BSPK_FAILURE_TIMEOUT", SecondsOrOff, User, 10.0, 0, 0, nullptr, nullptr,
                "seconds within which every process has exited after a host or process went silent (Slurm "
                "jobs); `0` = never declare a silent peer dead")
BSPK_CONFIG_VAR(START_TIMEOUT, "BSPK_START_TIMEOUT", Seconds, User, 60.0, 0, 0, nullptr, nullptr,
                "seconds `bspk_init` may take (bootstrap, exchanges, connections) before it ends the process "
                "naming the stuck phase")
BSPK_CONFIG_VAR(HUB_PORT, "BSPK_HUB_PORT", Int, User, kNoDefault, 1, 65535, nullptr, "derived from the job id",
                "TCP port of the job hub (plain srun: where every process finds it)")
BSPK_CONFIG_VAR(HUB_HOST, "BSPK_HUB_HOST", String, User, kNoDefault, 0, 0, nullptr,
                "the step's first node (its address if SLURM_NODE_ALIASES lists it)",
                "host name or IPv4 address where plain-srun processes find the job hub (the step's first node); "
                "for nodes whose names do not resolve")
BSPK_CONFIG_VAR(JOB_KEY, "BSPK_JOB_KEY", String, User, kNoDefault, 0, 0, nullptr,
                "made per job under PMIx/PMI2; none under plain srun",
                "the job's secret for plain srun (64 hex digits: `export BSPK_JOB_KEY=$(openssl rand -hex 32)` "
                "before srun); processes prove they know it to the job hub (see Security); never printed")
BSPK_CONFIG_VAR(BIND, "BSPK_BIND", Enum, User, "auto", 0, 0, "auto|core|none", nullptr,
                "`auto`, `core` or `none` (see Placement)")
BSPK_CONFIG_VAR(REPORT_BINDINGS, "BSPK_REPORT_BINDINGS", Bool, User, false, 0, 0, nullptr, nullptr,
                "`1`: one line per process saying where it is bound: under bspkrun its `--report-bindings` line (`bspkrun: pid 1 bound to cpu 1`), under srun or without a launcher the process's own (its PUs and the NUMA node of its frames)")
BSPK_CONFIG_VAR(HP_ZEROCOPY_MIN, "BSPK_HP_ZEROCOPY_MIN", String, User, kNoDefault, 0, 0, nullptr, "`64K`",
                "BSPlib programs: `bsp_hpput` / `bsp_hpget` of at least this many bytes (K, M, G suffixes) to or "
                "from another process move by one fabric read from program memory into program memory (no copy; "
                "`bsp_hpget` in counted syncs), smaller ones through the batch like `bsp_put` / `bsp_get`; `off`: "
                "never (read by libbspk-bsplib at `bsp_begin`; see \"BSPlib programs\")")
BSPK_CONFIG_VAR(PUT_ZEROCOPY_MIN, "BSPK_PUT_ZEROCOPY_MIN", String, User, kNoDefault, 0, 0, nullptr, "`auto`",
                "BSPlib programs: `bsp_put` of at least this many bytes (K, M, G suffixes) to another process is "
                "copied once, at the call, into a registered staging buffer that the target reads straight into "
                "the destination with one fabric read; smaller ones are copied into the batch and again into the "
                "destination; `auto`: 1M to processes on other hosts, never on this host; `off`: never (read by "
                "libbspk-bsplib at `bsp_begin`; see \"BSPlib programs\")")

BSPK_CONFIG_VAR(BSPLIB_BOARD, "BSPK_BSPLIB_BOARD", String, User, kNoDefault, 0, 0, nullptr, "`on`",
                "BSPlib programs with every process on one host: a counted `bsp_sync` carries its batches of up to "
                "8 KiB through the shared-memory count board in one all-gather superstep instead of as messages "
                "(larger ones follow as messages); `off` (or 0, no, false): always messages; other values than on "
                "and off are refused (read by libbspk-bsplib at `bsp_begin`; "
                "see \"BSPlib programs\")")

// ---- set by bspkrun for the processes it starts (not for users) ----
BSPK_CONFIG_VAR(BOOT_SOCKET, "BSPK_BOOT_SOCKET", String, Launcher, kNoDefault, 0, 0, nullptr, "set by bspkrun",
                "bspkrun's bootstrap socket (its presence selects the bspkrun bootstrap)")
BSPK_CONFIG_VAR(NPROCS, "BSPK_NPROCS", Int, Launcher, kNoDefault, 1, 1 << 20, nullptr, "set by bspkrun",
                "number of processes of the job")
BSPK_CONFIG_VAR(RANK, "BSPK_RANK", Int, Launcher, kNoDefault, 0, (1 << 20) - 1, nullptr, "set by bspkrun",
                "this process's pid in the job (below `BSPK_NPROCS`)")
BSPK_CONFIG_VAR(JOBID, "BSPK_JOBID", String, Launcher, kNoDefault, 0, 0, nullptr,
                "set by bspkrun (else bspkrun-<parent's os pid>)",
                "the job's id (names its shm regions, which bspkrun removes after the job)")
BSPK_CONFIG_VAR(STATUS_FILE, "BSPK_STATUS_FILE", String, Launcher, kNoDefault, 0, 0, nullptr, "set by bspkrun",
                "file where each process records its superstep and state for bspkrun's failure reports")

// ---- test hooks ----
BSPK_CONFIG_VAR(TEST_FIRST_SUPERSTEP, "BSPK_TEST_FIRST_SUPERSTEP", Int, Test, 0, 0, UINT32_MAX, nullptr, nullptr,
                "test hook: number the first superstep this (e.g. 4294967290, to cross the wrap at 2^32 within a "
                "test); the same on every process")
BSPK_CONFIG_VAR(TEST_WIRE_VERSION, "BSPK_TEST_WIRE_VERSION", Int, Test, version::kWireVersion, 0, UINT32_MAX, nullptr,
                nullptr, "test hook: announce another wire version at start-up (to exercise the refusal)")
