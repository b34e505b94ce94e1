// bsplib/bsplib.cpp -- BSPlib (bsp.h) over the BSPk C API (bspk.h).
//
// Not a second runtime: every BSPlib superstep is carried by BSPk supersteps,
// messages and lazy barriers.
//
// One bsp_sync is two BSPk supersteps:
//   phase 1  each process sends every other process it has business with ONE
//            batch message (a comem region it filled at the calls: puts, get
//            requests, BSMP messages, registration records, END), then
//            bspk_sync -- counted, or the user's bspk_expect (bsp.h header).
//            After it every get source is read (the owners' computation of
//            the superstep is over) into the reply batches.
//   between  zero-copy bsp_hpput / bsp_hpget (at least BSPK_HP_ZEROCOPY_MIN
//            bytes, another process): each process reads, with fabric reads
//            (bspk_mem_read), what was hpput to it from the issuers' memory
//            and what it hpgets from the owners' variables, straight into
//            program memory, and waits for the reads (bspk_mem_wait); and
//            the large bsp_puts to it (BSPK_PUT_ZEROCOPY_MIN) from the
//            issuers' staging buffers, where the source was copied at the
//            call (plan_staged).
//   phase 2  replies travel, and every reader tells the processes whose
//            memory it read that it is done (kAck);
//            bspk_expect(number of processes that answer or acknowledge)
//            so a superstep without gets costs a lazy barrier of nothing.
//            Then get results are written, then puts in ascending source pid
//            and call order, then registrations change, then the BSMP queue
//            of the next superstep is built.
// Operations on the process itself go through a local batch, never the wire.
//
// On one host (bspk_sync_allgather_shared(); BSPK_BSPLIB_BOARD not off),
// phase 1 sends no messages (a program's declaration is taken back with
// bspk_withdraw and checked against the batches, check_declaration): the batches of up to kBoardBatchMax
// bytes ride in ONE bspk_sync_allgatherv superstep through the shared-memory
// board (each process's block: a BoardHead, an entry per batch, the small
// batches; every process copies out the batches addressed to it), and the
// block heads say to all whether some batch was too large for the board
// (then one more superstep carries those as messages, with exact
// bspk_expect counts known from the entries) and whether phase 2 runs. A
// superstep of small batches then costs one shared-memory barrier. Phase 2,
// when it runs, goes through the board the same way (every process knows
// from the heads that it runs, the processes beyond P included), instead of
// messages under bspk_expect (phase2).
//
// Batch layout: records, each a 32-byte header and its data (padded to 16),
// or for the common small operations a 16-byte header: SmallPut (a put and
// its data, padded to 8), SmallGet (a get request), SendRun (BSMP messages
// of one shape), SmallSend (one message), and the 24-byte GetRun (gets at a
// constant stride); a record that continues the last one's run (consecutive
// puts, gets, messages, strided gets) extends it in place (the batch's open
// record). Get replies are the requests' bytes back to back in
// kReply records. A header never straddles a frame boundary, and a record
// that fits in one frame starts a fresh frame rather than straddle one, so
// the receiver reads records and hpmove payloads in place; only records
// larger than a frame are assembled in heap memory.
#include "base/copy.h"
#include "bsplib/bsp.h"

#include <bspk.h>
#include <sched.h>
#include <strings.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bsplib/affinity.h"

#if __has_include("bsplib/spawn.h")
#include "bsplib/spawn.h"
#else
static int bsplib_spawn_self(int, std::string* error) {
  *error = "this build cannot start processes without a launcher: use bsprun -n P";
  return -1;
}
#endif

namespace {

// ---------------------------------------------------------------- records

enum Kind : uint32_t {
  kPad = 0, kPut = 1, kGet = 2, kSend = 3, kOps = 4, kEnd = 5,
  kReply = 6,     // phase 2: n bytes of get replies (the requester's gets' bytes back to back, see reply_append)
  kHead = 7,      // first record of every batch; aux: kHeadGets if the sender has remote gets
  kSmallPut = 8,  // a SmallPut record (puts of < 16 MiB to registrations with 32-bit ids)
  kPad8 = 9,      // 8 bytes of padding (16-byte alignment of the record after it)
  kSmallSend = 10,  // a SmallSend record (BSMP messages with tags of < 16 MiB)
  kZcPut = 11,    // a zero-copy put: a (regid), b (offset), n (bytes); data: ZcKey of the source
  kZcGet = 12,    // a zero-copy get announced to the owner: a, b, n as kGet; no data
  kAck = 13,      // phase 2: this process's reads of the receiver's memory are done
  kZcBuf = 14,    // a large bsp_put whose data waits in the issuer's staging buffer: a, b, n as kPut; data: ZcKey
  kSendRun = 15,  // a SendRun record (consecutive small BSMP messages of one shape to one destination)
  kSmallGet = 16, // a SmallGet record (gets of < 16 MiB from registrations with 32-bit ids)
  kGetRun = 17,   // a GetRun record (gets of one size at a constant stride; visited as a kGetRun header, see GetRun)
};
constexpr uint32_t kLastKind = kGetRun;
constexpr uint32_t kHeadGets = 1;
constexpr uint32_t kZcMaybe = 1;  // kZcGet aux: under a declaration (see announce_zc)

struct Header {
  uint32_t kind;
  uint32_t aux;  // kSend: tag bytes
  uint64_t a;    // kPut/kGet: registration id
  uint64_t b;    // kPut/kGet: byte offset
  uint64_t n;    // data bytes (kOps: number of ops)
};
static_assert(sizeof(Header) == 32);

// The board superstep's block (see the top of the file): a BoardHead, nent
// BoardEntry, then the batches carried inline, each at a 16-byte boundary,
// without their kHead record (its only content, kHeadGets, is the head's
// kBoardGets here), so that a superstep of a few small puts to one process
// fits the board's one-line block of 48 bytes: 8 of head, 8 of entry, a
// 16-byte SmallPut and two words (it took 96 bytes, two lines, before:
// bench/bsplib h = p). A batch sheds its head only when it ends at least
// kMinRoom bytes before its frame's end, so that it holds no frame padding
// and the reader's frame rule sees the same records at the shifted offsets.
constexpr uint16_t kBoardMagic = 0x4253;  // "BS"
constexpr uint16_t kBoardGets = 1;        // flags: this process has remote gets (phase 2 runs)
constexpr uint16_t kBoardBig = 2;         // flags: some batch of this process comes as a message
constexpr uint16_t kBoardOps = 4;         // flags: this process's batches carry collective calls (kOps) or kEnd
struct BoardHead {
  uint16_t magic;
  uint16_t flags;
  uint32_t nent;
};
struct BoardEntry {
  uint32_t dest_big;  // destination pid << 1 | 1 if the batch comes as a message in the next BSPk superstep
  uint16_t off;       // inline: where in the block (< BSPK_SYNC_BLOCK_MAX)
  uint16_t len;       // inline: bytes of the batch (<= kBoardBatchMax)
};
constexpr BoardEntry kNoEntry{0, 0, 0};  // zeros: the head's padding to 16 bytes
static_assert(sizeof(BoardHead) == 8 && sizeof(BoardEntry) == 8);
// A batch rides inline if it has at most this many bytes (and lies in one
// frame) and the block stays within BSPK_SYNC_BLOCK_MAX; larger ones, whose
// copy through the board costs more than a message's way, travel as messages.
// Measured (shm, one word per bsp_put to consecutive offsets, 4 KiB and the
// candidate limit alternated in one process, medians of 15 blocks of 1,000
// supersteps): batches of 4-8 KiB are 2-8% faster inline than as a message
// and its extra superstep (p = 2: 512 words 6.67 -> 6.16 us, 15.0 -> 8.2 in
// a run where the message path was in its slow mode; p = 4 on 2 cores,
// 512-640 words per destination 14-16%), 8 KiB breaks even and 12-15 KiB
// are 10% slower (the board copies the batch twice, a pulled message once).
constexpr size_t kBoardBatchMax = 8192;
// A batch sent as a message has its lines taken back (Outbox::reclaim) up to
// this many bytes: about what stays in a core's cache (L2) from one
// superstep to the next; beyond it the lines were evicted anyway.
constexpr size_t kReclaimMax = size_t{1} << 20;
static_assert(BSPK_SYNC_BLOCK_MAX <= UINT16_MAX && kBoardBatchMax <= UINT16_MAX, "BoardEntry's 16-bit fields");

// A put in 16 bytes plus its data padded to 8 (a single-word put: 24 bytes
// on the wire instead of 48): most puts of BSPlib programs are small.
struct SmallPut {
  uint32_t kind_len;  // kSmallPut | nbytes << 8
  uint32_t regid;
  uint64_t offset;
};
static_assert(sizeof(SmallPut) == 16);
constexpr uint64_t kSmallPutMax = (1u << 24) - 1;

// A get request in 16 bytes (no data), the same fields as a SmallPut's.
// Consecutive gets from one registration, each reading on where the last
// ended into memory where the last one's destination ended (a word-by-word
// loop), are one request (get combining, get_common).
struct SmallGet {
  uint32_t kind_len;  // kSmallGet | nbytes << 8
  uint32_t regid;
  uint64_t offset;
};
static_assert(sizeof(SmallGet) == 16);

// `count` gets of `nbytes` each from one registration, the k-th at byte
// offset + k * stride of the owner's variable, into memory of the requester
// at a constant stride of its own (a loop that reads a column of a
// row-major matrix into a vector, or gathers the words of a cyclic
// distribution, whose owner's words are consecutive there and every p-th
// here): one request instead of `count`, and on the owner one gather into
// the reply instead of `count` reply appends (callgrind, shm p = 4, 512
// single-word gets per superstep at a stride of 3 words: ~500 instructions
// per get on the two sides before). The requester's two such gets in a row
// make a SmallGet a GetRun (get_common); the replies are the words back to
// back in request order, as for gets one by one, and the requester writes
// them as one PendingGet (consecutive destinations) or one of `count`
// pieces. Visited (for_records) as Header{kGetRun, aux = stride, a = regid,
// b = offset, n = count * nbytes}; Inbound::Rec::data holds nbytes.
struct GetRun {
  uint32_t kind_len;  // kGetRun | nbytes << 8
  uint32_t regid;
  uint64_t offset;    // of the first get
  uint32_t count;     // gets in the run (>= 2)
  uint32_t stride;    // bytes from one get's offset to the next's (> 0)
};
static_assert(sizeof(GetRun) == 24);

// A BSMP message in 16 bytes of header, then its tag and its payload, each
// padded to 16 (the payload stays 16-byte aligned for bsp_hpmove).
struct SmallSend {
  uint32_t kind_tag;  // kSmallSend | tag bytes << 8
  uint32_t unused;
  uint64_t nbytes;
};
static_assert(sizeof(SmallSend) == 16);

// Consecutive BSMP messages to one destination with the same tag size and
// payload size (the common BSMP pattern: a loop of single-word bsp_sends) in
// one record: 16 bytes of header, then `count` messages of `stride` bytes,
// each its tag then its payload, each padded to the message's unit: 8 bytes
// when both are at most 8 bytes, else 16. So every tag and payload is aligned
// to 16, or, when at most 8 bytes long, to 8 -- as much as any type that fits
// in it needs (bsp_hpmove) -- and a single-word message costs 8 bytes on the
// wire instead of 32. A run never straddles a frame.
struct SendRun {
  uint32_t kind_tag;  // kSendRun | tag bytes << 8
  uint32_t count;     // messages in the run
  uint64_t nbytes;    // payload bytes of each
};
static_assert(sizeof(SendRun) == 16);
constexpr size_t kSendRunMax = 256;  // tags and payloads up to this go into runs
inline size_t send_unit(size_t tag, size_t n) { return tag > 8 || n > 8 ? 16 : 8; }
inline size_t pad_to(size_t n, size_t unit) { return (n + unit - 1) & ~(unit - 1); }
// Bytes of one message of a run (tag and payload, each padded to the unit).
inline size_t send_stride(size_t tag, size_t n) {
  const size_t u = send_unit(tag, n);
  return pad_to(tag, u) + pad_to(n, u);
}
inline size_t pad8(size_t n) { return (n + 7) & ~size_t(7); }
// No record starts closer than this to a frame boundary (the reader skips there).
constexpr size_t kMinRoom = 32;
constexpr size_t kAlign = 16;
inline size_t pad16(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }

// A collective registration operation, exchanged so every process can check
// that all made the same ones (and learn the sizes of the others' pushes).
enum OpKind : uint64_t { kPush = 1, kPop = 2, kTagsize = 3 };
constexpr uint64_t kWildcard = ~0ull;  // bsp_pop_reg(NULL): matches the others' pop
struct Op {
  uint64_t kind;
  uint64_t regid;  // push: the new id; pop: the popped id (or kWildcard)
  int64_t value;   // push: size, or -1 for NULL (size 0); tagsize: requested size
  uint64_t addr = 0;  // push: the variable's fabric registration (bspk_memkey addr; 0: none)
  uint64_t key = 0;   //       and its key: peers read it directly (zero-copy bsp_hpget)
};
static_assert(sizeof(Op) == 40);

// Where the source of a zero-copy put lies on its issuer (a kZcPut record's data).
struct ZcKey {
  uint64_t addr;
  uint64_t key;
};
static_assert(sizeof(ZcKey) == 16);

// ---------------------------------------------------------------- state

enum class Phase { Before, Spmd, Ended };

struct Reg {
  const void* addr = nullptr;
  std::vector<int64_t> size;  // registered size per pid
  std::vector<uint8_t> null;  // per pid: registered as NULL (for bsp_pop_reg(NULL) everywhere)
  bspk_memreg mr{};                // this process's fabric registration of it (id 0: none)
  std::vector<bspk_memkey> keys;   // per pid: what reads it there (len 0: not registered there)
};

// A bsp_hpput or bsp_hpget that moves by a fabric read (zero copy), noted at
// the call and carried out in the sync. local: the source (put) or the
// destination (get) on this process.
struct ZcOp {
  void* local;
  size_t n;
  uint64_t regid;
  uint64_t offset;  // in the registration on the other process
};

// A staging buffer: the one copy of a large bsp_put's source (on the issuer),
// or the landing place of a large put whose bytes overlap another write of
// the sync (on the target). Registered with the fabric once and reused; a
// buffer no bsp_sync used is freed at the end of the next (stage_trim).
struct Staged {
  char* p = nullptr;
  size_t cap = 0;
  bspk_memreg mr{};
  bool used = false;
};

// A get (or a run of combined gets) this process waits for the replies to:
// n bytes at dst, or with count > 1 (a strided GetRun) count pieces of n
// bytes, the k-th at dst + k * stride.
struct PendingGet {
  void* dst;
  int64_t n;
  int64_t stride = 0;
  uint32_t count = 1;
  size_t span() const { return static_cast<size_t>((count - 1) * stride + n); }  // bytes from dst to the end
};

// Messages of the BSMP queue: one record's (a SendRun's `count`, else 1),
// message k's tag at base + k * stride and its payload tagpad bytes after it.
// The queue takes a run's messages last first (last sent first).
struct MessageRun {
  const char* base;
  size_t stride;
  size_t tagpad;
  int64_t nbytes;  // payload bytes of each message
  int tagsize;
  uint32_t count;
};

// Where a batch's bytes live: a comem region (spans of its frames) or a local buffer.
struct Span {
  char* base;
  size_t len;
};

// Reads a received batch by logical offset across its spans.
class Reader {
 public:
  Reader() = default;
  explicit Reader(bspk_ptr region) { assign(region); }
  // Read `region` (its frames), or one buffer; keeps the vectors' capacity,
  // so a Reader kept from sync to sync allocates nothing.
  void assign(bspk_ptr region) {
    reset();
    void* base = nullptr;
    for (bspk_ptr p = region; size_t n = bspk_span(p, &base); p = bspk_incr(p, static_cast<ptrdiff_t>(n))) {
      spans_.push_back({static_cast<char*>(base), n});
      total_ += n;
    }
  }
  void assign(char* buf, size_t n) {
    reset();
    spans_.push_back({buf, n});
    total_ = n;
  }
  size_t total() const { return total_; }
  size_t nspans() const { return spans_.size(); }
  const Span& span(size_t i) const { return spans_[i]; }
  // Pointer to [off, off + n) if it lies within one span, else nullptr.
  const char* at(size_t off, size_t n) const {
    size_t i = find(off);
    if (i == spans_.size()) return n == 0 ? "" : nullptr;
    size_t in = off - start_[i];
    return in + n <= spans_[i].len ? spans_[i].base + in : nullptr;
  }
  void copy(size_t off, void* dst, size_t n) const {
    char* d = static_cast<char*>(dst);
    for (size_t i = find(off); n > 0 && i < spans_.size(); ++i) {
      size_t in = off - start_[i];
      size_t k = std::min(n, spans_[i].len - in);
      bspk::copy_bytes(d, spans_[i].base + in, k);
      d += k;
      off += k;
      n -= k;
    }
  }

 private:
  // The span holding byte off (records are read in order: start at the last one).
  size_t find(size_t off) const {
    if (start_.empty()) {
      size_t o = 0;
      for (auto& s : spans_) {
        start_.push_back(o);
        o += s.len;
      }
    }
    size_t i = last_ < spans_.size() && start_[last_] <= off ? last_ : 0;
    while (i < spans_.size() && off >= start_[i] + spans_[i].len) ++i;
    last_ = i;
    return i;
  }
  void reset() {
    spans_.clear();
    start_.clear();
    last_ = 0;
    total_ = 0;
  }
  std::vector<Span> spans_;
  mutable std::vector<size_t> start_;
  mutable size_t last_ = 0;
  size_t total_ = 0;
};

// A batch under construction for one destination. Remote destinations: a
// comem region (sent with bspk_send, zero copy), kept from superstep to
// superstep and grown when full. The process itself: heap memory.
class Outbox {
 public:
  size_t used = 0;
  bool remote = false;
  // The last record written when a later call may extend it in place
  // (combining): its kind (kSmallPut, kSmallGet, kSendRun, kReply), where
  // its header is, and the batch's end just after it. Valid while used ==
  // open_end (nothing written since: the batch's memory has not moved
  // either, it moves only when a record is written); 0: none.
  size_t open_end = 0;
  char* open_hdr = nullptr;
  uint32_t open_kind = 0;
  // What extending it must match. kSmallPut, kSmallGet: the registration,
  // the bytes so far, the next offset (and for a get the next destination);
  // kSendRun: the tag and payload sizes (open_tag, open_n); kReply: the
  // bytes so far (open_n).
  uint32_t open_regid = 0;
  size_t open_n = 0, open_tag = 0;
  uint64_t open_next = 0;
  char* open_dst = nullptr;
  uint32_t open_count = 0, open_stride = 0;  // kGetRun: gets so far, their stride (open_n: bytes of each)
  size_t open_dstride = 0;                    // kGetRun: bytes from one get's destination to the next's

  void reset() { used = open_end = 0; }
  // The batch's byte at offset off (within what was written).
  char* at(size_t off);
  bool is_open(uint32_t kind) const { return open_end != 0 && used == open_end && open_kind == kind; }
  // The record of `kind` whose header is at hdr, just written, may be extended.
  void note_open(uint32_t kind, char* hdr) {
    open_kind = kind;
    open_hdr = hdr;
    open_end = used;
  }
  // The same for a SmallPut or SmallGet of n bytes at offset of regid.
  void note_small(uint32_t kind, char* hdr, uint32_t regid, uint64_t offset, size_t n) {
    note_open(kind, hdr);
    open_regid = regid;
    open_n = n;
    open_next = offset + n;
  }
  // Room for a record of `total` bytes (header + padded data); pads so that a
  // header never straddles a frame and a record of at most a frame does not
  // straddle one.
  void begin_record(size_t total);
  void write(const void* src, size_t n);  // at `used`, advances
  // Room for `more` bytes past `used` (grown once, not by doubling as records
  // come). Growing moves the batch: no record stays open then.
  void reserve(size_t more) {
    if (remote ? !bspk_is_null(region_) && used + more <= cap_ : used + more <= heap_.size()) return;
    ensure(used + more);
    open_end = 0;
  }
  // Padding is written as zeros: nothing stale from an earlier batch goes on the wire.
  void zeros(size_t n) {
    static const char z[64] = {};
    while (n > 0) {
      size_t k = n < sizeof z ? n : sizeof z;
      write(z, k);
      n -= k;
    }
  }
  void pad_to16() { zeros(pad16(used) - used); }
  bspk_ptr region() const { return region_; }
  // The batch went out as a message (bspk_send of region()): remember how
  // much of it a peer may have read from these frames (see reclaim()).
  void sent() { pulled_ = std::min(used, kReclaimMax); }
  // Before the first record of a batch whose frames a peer read last time:
  // one store per cache line over what it read. On one host a message is
  // pulled -- its receiver copies it from these frames -- which leaves the
  // lines shared with the receiver's cache, and every line this batch then
  // writes first costs an ownership request to the other core. Taken one by
  // one between puts those stalls made a loop of single-word puts up to
  // twice as slow (shm p = 2, 1,024 puts to the other process per superstep,
  // 4 alternated runs: 33.5-35.2 us per superstep without this, 19.4-21.8
  // with it; 2,048 puts: 36-66 without, 34-37 with); taken back to back
  // here they overlap. The bytes are dead: the batch was consumed at the
  // last sync, and what this one does not overwrite lies past its `used`,
  // never sent.
  // (Nothing to do, and no loop entered, when the last batch was not sent.)
  void reclaim() {
    size_t n = pulled_;
    pulled_ = 0;
    for (size_t k = 0; n > 0 && k < frames_.size(); ++k) {
      const size_t c = std::min(n, frames_[k].len);
      for (size_t i = 0; i < c; i += 64) static_cast<volatile char*>(frames_[k].base)[i] = 0;
      n -= c;
    }
  }
  // The batch's bytes when they lie in one piece (used <= one frame).
  const char* first() const { return remote ? frames_[0].base : heap_.data(); }
  void drop();
  // Where a record of `total` bytes goes when it fits in the current frame
  // (no padding, no growth needed); `used` is advanced. Else nullptr.
  char* room_for(size_t total);
  // Where a record of `total` bytes (at most a frame: SendRun records, which
  // send_common keeps that small, and SmallGets) goes, in one piece: in
  // the current frame, else at the start of the next one (begin_record);
  // `used` is advanced. The caller writes every byte, padding included.
  char* record(size_t total) {
    if (char* p = room_for(total)) return p;
    begin_record(total);
    char* p = at(used);
    used += total;
    return p;
  }
  // Set flags in the head record (the batch's first record).
  void set_head_flag(uint32_t f) {
    char* head = remote ? frames_[0].base : heap_.data();
    uint32_t aux;
    std::memcpy(&aux, head + 4, 4);
    aux |= f;
    std::memcpy(head + 4, &aux, 4);
  }
  // Local batch: swap its buffer with `into` (the old inbox becomes the next
  // buffer) and return the bytes written.
  size_t take_heap(std::vector<char>& into) {
    size_t n = used;
    heap_.swap(into);
    used = open_end = 0;
    return n;
  }

 private:
  void ensure(size_t need);
  void map_spans();
  bspk_ptr region_ = BSPK_NULL;
  std::vector<Span> frames_;  // spans of the whole region
  size_t cap_ = 0;            // bytes in frames_
  std::vector<char> heap_;    // local batch
  size_t pulled_ = 0;         // bytes of the last batch sent as a message (reclaim())
};

// What one board superstep (board_superstep) brought this process: the
// batches addressed to it, by source pid, and the flags of every process's
// block (this one's included).
struct BoardInbox {
  std::vector<std::vector<char>> bufs;  // per source: its batch to this process, copied from the board
  std::vector<Reader>* readers = nullptr;  // per source: set to read its batch (in bufs, or the message)
  std::vector<bspk_ptr>* held = nullptr;   // where batches that came as messages go (freed by the owner)
  std::vector<char> got;                // per source: a batch came
  std::vector<char> big_from;           // per source: its batch comes as a message
  bool gets = false;                    // some process has remote gets: phase 2 runs
  bool big = false;                     // some process sends a batch as a message
  bool ops = false;                     // some process made collective calls or is ending (kBoardOps)
  std::string err;                      // a malformed block (reported after the superstep)
  void size(int nprocs) {
    bufs.resize(static_cast<size_t>(nprocs));
    got.assign(static_cast<size_t>(nprocs), 0);
    big_from.assign(static_cast<size_t>(nprocs), 0);
  }
};

// Everything one phase-1 batch brought, by record.
struct Inbound {
  bool present = false;  // a batch came from this process
  struct Rec {
    Header h;
    size_t data;  // offset of the record's data in the batch (kGetRun: the bytes of each get)
  };
  std::vector<Rec> puts, gets, zc_puts, zc_gets;
  std::vector<Op> ops;
  bool end = false;
  bool has_ops = false;
  bool gets_flag = false;  // the sender has gets to answer in phase 2
  void clear() {
    present = end = has_ops = gets_flag = false;
    puts.clear();
    gets.clear();
    zc_puts.clear();
    zc_gets.clear();
    ops.clear();
  }
};

struct State {
  Phase phase = Phase::Before;
  int nprocs_all = 1;  // processes of the BSPk job
  int P = 1;           // processes of the SPMD section
  int pid = 0;
  bool started = false;  // the runtime is up (start_runtime): pid is this process's
  bool forked = false;  // a fork of pid 0 made by bsp_begin (started without a launcher): ends at bsp_end
  bool no_launcher = false;  // started without a launcher: bsp_begin made the job
  uint64_t step = 0;  // BSPlib superstep
  double t0 = 0;
  size_t frame = 65536;  // BSPK_FRAME_SIZE: a power of two
  unsigned frame_shift = 16;

  // registrations
  uint64_t next_regid = 1;
  std::unordered_map<uint64_t, Reg> regs;                            // live (usable) registrations
  std::unordered_map<const void*, std::vector<uint64_t>> by_addr;    // live ids per address, oldest first
  const void* cache_addr = nullptr;  // lookup_reg's last answer
  uint64_t cache_id = 0;
  const Reg* cache_reg = nullptr;
  std::vector<Op> ops;                                               // this superstep's collective ops
  struct Pushed {
    const void* addr;
    int64_t size;
    bspk_memreg mr;  // its fabric registration, made at the call (id 0: none)
  };
  std::vector<Pushed> pushed;                                        // this superstep's pushes, by ops order
  std::unordered_map<const void*, std::vector<uint64_t>> pending;    // pushed this superstep, per address
  std::unordered_set<uint64_t> popped;                               // live ids popped this superstep

  // tag sizes: in force for sends now, requested for the next superstep
  int tag_now = 0, tag_next = 0;

  // outgoing
  std::vector<Outbox> out;  // per destination pid (out[pid] is the local batch)
  std::vector<std::vector<PendingGet>> gets;  // per owner, in call order
  std::vector<int> touched;                   // destinations with a batch this superstep

  // zero copy (bsp_hpput / bsp_hpget of at least zc_min bytes to or from
  // another process): the fabric reads the data from program memory into
  // program memory between the two BSPk supersteps of the sync (bspk.h,
  // "Program memory"); see the top of the file.
  size_t zc_min = SIZE_MAX;                   // BSPK_HP_ZEROCOPY_MIN; SIZE_MAX: off
  size_t put_zc_min = SIZE_MAX;               // BSPK_PUT_ZEROCOPY_MIN (bsp_put's staged path); SIZE_MAX: off
  std::vector<char> put_staged_to;            // per pid: large puts to it may be staged (auto: other hosts only)
  std::vector<std::vector<ZcOp>> zc_puts;     // per destination, in call order (runs merged)
  std::vector<std::vector<ZcOp>> zc_gets;     // per owner, in call order
  bool zc_any = false;                        // some zc_puts / zc_gets this superstep
  std::vector<bspk_memreg> zc_mrs;            // this sync's registrations of hpput sources (released after phase 2)
  std::vector<std::pair<const void*, size_t>> zc_sources;  // and their ranges (read by the targets between the phases)
  std::vector<bspk_memreg> zc_tmp;            // this sync's registrations of read destinations outside variables
  std::vector<char> read_from;                // per pid: this process read its memory in this sync (acks it)
  std::vector<char> read_by;                  // per pid: it reads this process's memory (its ack is awaited)
  bool zc_gets_maybe = false;                 // this sync's zero-copy hpgets are conditional (declared sync)
  std::vector<char> sent_to;                  // per pid: this process sent it a phase-1 batch in this sync
  // bsp_direct_get: each process's count of completed bsp_syncs (`step`,
  // published after the sync's last write), readable by a fabric read; the
  // others' keys (exchanged at bsp_begin; len 0: not readable), the largest
  // count seen per pid, and a registered word to read it into.
  alignas(64) std::atomic<uint64_t> applied{0};
  uint64_t peek = 0;
  bspk_memreg applied_mr{}, peek_mr{};
  std::vector<bspk_memkey> applied_keys;
  std::vector<uint64_t> applied_seen;
  std::vector<Staged> stage;                  // staging buffers of large bsp_puts (put_staged)
  uint64_t read_by_bytes = 0;                 // bytes peers read from this process in this sync (profile)
  bool staged_in = false;                     // this sync brought kZcBuf records (plan_staged)
  uint64_t copied = 0;                        // bytes this layer copied, not yet added to bytes_copied

  // incoming of the previous sync (BSMP queue storage)
  std::vector<bspk_ptr> held;                  // received regions, freed at the next sync
  std::vector<std::unique_ptr<char[]>> assembled;  // records larger than a frame
  std::vector<char> local_in;                  // the local batch of the last sync
  std::vector<MessageRun> queue;  // in queue order (built in reverse while the batches are read)
  size_t qrun = 0;                // the run holding the first message
  uint32_t qtaken = 0;            // messages already taken from it
  int64_t qmsgs = 0, qbytes = 0;  // messages left and their payload bytes

  // the board superstep (every sync on one host; see the top of the file)
  bool board = false;                       // in use in this job (the same on every process)
  BoardInbox board1;                        // what phase 1's board superstep brought this process
  BoardInbox board2;                        // ... and phase 2's (get replies, read acknowledgements)
  std::vector<int> big_to;                  // destinations of this process's batches sent as messages
  std::vector<int> decl_v;                  // a withdrawn bspk_will_send's vector (per pid)
  std::vector<char> board_block;            // this process's head and entries
  std::vector<iovec> board_iov;

  // per-sync scratch, kept to avoid allocating in every bsp_sync
  std::vector<Inbound> in;       // per source pid
  std::vector<Reader> readers;   // per source pid
  std::vector<Reader> replies;   // per source pid: its phase-2 batch through the board
  std::vector<bspk_ptr> replies_held;  // phase-2 batches through the board that came as messages
  std::vector<char> self_replies;
};

State S;

inline char* Outbox::at(size_t off) {
  return remote ? frames_[off >> S.frame_shift].base + (off & (S.frame - 1)) : heap_.data() + off;
}

__attribute__((always_inline)) inline char* Outbox::room_for(size_t total) {
  size_t in = used & (S.frame - 1);
  if (in + total > S.frame || S.frame - in < kMinRoom) return nullptr;
  char* p;
  if (!remote) {
    if (used + total > heap_.size()) return nullptr;
    p = heap_.data() + used;
  } else {
    if (used + total > cap_) return nullptr;
    p = frames_[used >> S.frame_shift].base + in;
  }
  used += total;
  return p;
}

// ---------------------------------------------------------------- errors

std::string vfmt(const char* fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap2);
  va_end(ap2);
  std::string s(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(s.data(), s.size() + 1, fmt, ap);
  return s;
}

std::string where(const char* fn) {
  if (S.phase == Phase::Spmd)
    return std::string(fn) + " (pid " + std::to_string(S.pid) + ", superstep " + std::to_string(S.step) + ")";
  if (!S.started) return fn;
  if (S.phase == Phase::Before) return std::string(fn) + " (pid " + std::to_string(S.pid) + ", starting)";
  return std::string(fn) + " (pid " + std::to_string(S.pid) + ")";  // after bsp_end
}

[[noreturn]] void fatal(const char* fn, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
[[noreturn]] void fatal(const char* fn, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = "bsplib: error: " + where(fn) + ": " + vfmt(fmt, ap);
  va_end(ap);
  std::fflush(stdout);
  bspk_abort_text(msg.c_str());
}

// An error every process detects alike (collective mismatches): `reporter`
// ends the job with the message; the others wait to be ended with it, so it
// is printed once.
[[noreturn]] void fatal_collective(int reporter, const char* fn, const std::string& msg) {
  if (S.pid == reporter) fatal(fn, "%s", msg.c_str());
  std::fflush(stdout);
  sleep(10);  // the reporter's abort ends this process long before
  _exit(1);
}

void need_spmd(const char* fn) {
  if (S.phase == Phase::Before) fatal(fn, "called outside the SPMD section (before bsp_begin)");
  if (S.phase == Phase::Ended) fatal(fn, "called outside the SPMD section (after bsp_end)");
}

// A BSPk call the layer makes; any error ends the job naming the BSPlib call.
void check(const char* fn, int rc) {
  if (rc != BSPK_OK) fatal(fn, "%s", bspk_error_string());
}

// ---------------------------------------------------------------- outbox

void Outbox::map_spans() {
  frames_.clear();
  bspk_ptr p = region_;
  void* base = nullptr;
  cap_ = 0;
  while (size_t n = bspk_span(p, &base)) {
    if (n != S.frame) fatal("bsp_sync", "internal: a batch frame of %zu bytes, not %zu", n, S.frame);
    frames_.push_back({static_cast<char*>(base), n});
    cap_ += n;
    p = bspk_incr(p, static_cast<ptrdiff_t>(n));
  }
}

void Outbox::ensure(size_t need) {
  if (!remote) {
    if (heap_.size() < need) heap_.resize(std::max(need, heap_.size() * 2 + 256));
    return;
  }
  size_t cap = cap_;
  if (!bspk_is_null(region_) && need <= cap) return;
  size_t ncap = std::max(need, std::max(cap * 2, S.frame));
  ncap = (ncap + S.frame - 1) / S.frame * S.frame;
  bspk_ptr r = bspk_malloc("", 0, ncap, 1);
  if (bspk_is_null(r)) fatal("bsp_sync", "no memory for a batch of %zu bytes: %s", ncap, bspk_error_string());
  std::vector<Span> old = std::move(frames_);  // frame k of the old region -> frame k of the new one
  bspk_ptr old_region = region_;
  region_ = r;
  map_spans();
  for (size_t k = 0, left = used; left > 0; ++k) {
    size_t c = std::min(left, old[k].len);
    bspk::copy_bytes(frames_[k].base, old[k].base, c);
    left -= c;
  }
  S.copied += used;  // the batch so far, moved into the larger region
  if (!bspk_is_null(old_region)) bspk_free(old_region);
}

void Outbox::begin_record(size_t total) {
  // The same rule for the local batch: the reader applies it to every batch.
  size_t room = S.frame - used % S.frame;
  if (room < kMinRoom || (total > room && total <= S.frame)) {
    // Pad to the next frame: a pad record where a header fits, else the
    // reader skips the < 32 bytes by the same rule.
    if (room >= kMinRoom) {
      ensure(used + room);
      Header h{kPad, 0, 0, 0, room - sizeof(Header)};
      write(&h, sizeof h);
    }
    ensure(used + room - (room >= kMinRoom ? sizeof(Header) : 0));
    zeros(room - (room >= kMinRoom ? sizeof(Header) : 0));
  }
  ensure(used + total);
}

void Outbox::write(const void* src, size_t n) {
  const char* s = static_cast<const char*>(src);
  if (!remote) {
    if (heap_.size() < used + n) ensure(used + n);
    if (n) bspk::copy_bytes(heap_.data() + used, s, n);
    used += n;
    return;
  }
  // Frames of a region from bspk_malloc are all S.frame bytes: frame k holds
  // bytes [k F, (k + 1) F).
  while (n > 0) {
    size_t k = used / S.frame, in = used % S.frame;
    size_t c = std::min(n, frames_[k].len - in);
    bspk::copy_bytes(frames_[k].base + in, s, c);
    s += c;
    used += c;
    n -= c;
  }
}

void Outbox::drop() {
  if (!bspk_is_null(region_)) bspk_free(region_);
  region_ = BSPK_NULL;
  frames_.clear();
  cap_ = 0;
  heap_.clear();
  used = open_end = 0;
}

// n bytes of src at dst, then zeros up to the next multiple of 16; words
// and short tags inline (a call to memcpy costs as much as the rest).
inline void copy_padded(char* dst, const void* src, size_t n) {
  switch (n) {
    case 0: return;
    case 4: std::memcpy(dst, src, 4); std::memset(dst + 4, 0, 12); return;
    case 8: std::memcpy(dst, src, 8); std::memset(dst + 8, 0, 8); return;
    case 16: std::memcpy(dst, src, 16); return;
    default:
      bspk::copy_bytes(dst, src, n);
      if (n & 15) std::memset(dst + n, 0, 16 - (n & 15));
  }
}

// A record of header `hdr` (hsz bytes, a multiple of 16) and up to two data
// parts, each padded to 16, starting 16-byte aligned.
// After a SmallPut or a SendRun of 8-byte messages: back to 16-byte alignment.
inline void align16(Outbox& o) {
  if (o.used & 8) {
    size_t room = S.frame - o.used % S.frame;
    if (room >= kMinRoom) {  // (else the record starts in the next frame anyway)
      uint64_t pad = kPad8;
      o.begin_record(8);
      o.write(&pad, 8);
    }
  }
}

void put_record_bytes(Outbox& o, const void* hdr, size_t hsz, const void* d1, size_t n1, const void* d2, size_t n2) {
  size_t total = hsz + pad16(n1) + pad16(n2);
  align16(o);
  if (char* p = o.room_for(total)) {  // the common case: room in the current frame
    std::memcpy(p, hdr, hsz);
    copy_padded(p + hsz, d1, n1);
    copy_padded(p + hsz + pad16(n1), d2, n2);
    return;
  }
  o.begin_record(total);
  o.write(hdr, hsz);
  o.write(d1, n1);
  o.pad_to16();
  if (d2 || n2) {
    o.write(d2, n2);
    o.pad_to16();
  }
}

void put_record(Outbox& o, const Header& h, const void* d1, size_t n1, const void* d2 = nullptr, size_t n2 = 0) {
  put_record_bytes(o, &h, sizeof h, d1, n1, d2, n2);
}

// Start the (empty) batch o for dest with its head record: once per
// superstep and destination, so out of line.
void start_batch(Outbox& o, int dest) {
  S.touched.push_back(dest);
  o.reclaim();
  static constexpr Header kHeadRecord{kHead, 0, 0, 0, 0};
  if (char* p = o.room_for(sizeof kHeadRecord))  // (the batch's memory is there but for its first sync)
    std::memcpy(p, &kHeadRecord, sizeof kHeadRecord);
  else
    put_record(o, kHeadRecord, nullptr, 0, nullptr, 0);
}

// The batch for dest, started with its head record if new.
inline Outbox& outbox(int dest) {
  Outbox& o = S.out[static_cast<size_t>(dest)];
  if (o.used == 0) start_batch(o, dest);
  return o;
}

// n bytes of src at d, then `zeros` zero bytes (a word: one inline copy).
__attribute__((always_inline)) inline void copy_zero(char* d, const void* src, size_t n, size_t zeros) {
  if (n == 8 && zeros == 0) {
    std::memcpy(d, src, 8);
  } else {
    if (n) bspk::copy_bytes(d, src, n);  // (src may be null for 0 bytes: a 0-byte message)
    std::memset(d + n, 0, zeros);
  }
}

// A new SmallPut record at p (room for it in o, just taken), open for combining.
inline void new_small_put(Outbox& o, char* p, uint64_t regid, uint64_t offset, const void* src, size_t n) {
  const SmallPut h{static_cast<uint32_t>(kSmallPut | n << 8), static_cast<uint32_t>(regid), offset};
  std::memcpy(p, &h, sizeof h);
  copy_zero(p + sizeof h, src, n, pad8(n) - n);
  o.note_small(kSmallPut, p, static_cast<uint32_t>(regid), offset, n);
}

// A SmallPut record when it fits in the current frame (else false, nothing
// written): the common case of every put, words copied inline.
__attribute__((always_inline)) inline bool small_put_here(Outbox& o, uint64_t regid, uint64_t offset, const void* src, size_t n) {
  // Combining: a put that continues the previous one (the batch's last
  // record, a SmallPut to the same registration ending where this one
  // starts) extends that record in place when the current frame has room,
  // so a run of word-by-word puts travels and is applied as one copy. No
  // record lies between them, and the bytes do not overlap, so the result
  // is that of applying them one by one in call order.
  if (o.is_open(kSmallPut) && offset == o.open_next && regid == o.open_regid && o.open_n + n <= kSmallPutMax) {
    const size_t pn = o.open_n;
    const size_t extra = pad8(pn + n) - pad8(pn);  // bytes past the record's current end
    // (the record ends inside a frame, so room_for's bytes follow it there:
    // a record never straddles a frame)
    if (extra == 0 || ((o.used & (S.frame - 1)) != 0 && o.room_for(extra))) {
      copy_zero(o.open_hdr + sizeof(SmallPut) + pn, src, n, pad8(pn + n) - (pn + n));
      const uint32_t kind_len = static_cast<uint32_t>(kSmallPut | (pn + n) << 8);
      std::memcpy(o.open_hdr, &kind_len, sizeof kind_len);
      o.open_n = pn + n;
      o.open_next = offset + n;
      o.open_end = o.used;
      return true;
    }
  }
  char* p = o.room_for(sizeof(SmallPut) + pad8(n));
  if (!p) return false;
  new_small_put(o, p, regid, offset, src, n);
  return true;
}

// A BSMP message of at most kSendRunMax bytes of tag and of payload, into a
// SendRun: appended to the batch's last record when that is a run of the same
// shape and the current frame has room for one more message (nothing was
// written since, so the queue order -- last sent first -- is that of
// separate records), else as a new run of one.
void send_run(Outbox& o, const void* tag, size_t t, const void* payload, size_t n) {
  const size_t u = send_unit(t, n), tp = pad_to(t, u), np = pad_to(n, u), stride = tp + np;
  if (o.is_open(kSendRun) && t == o.open_tag && n == o.open_n) {
    uint32_t count;
    std::memcpy(&count, o.open_hdr + 4, sizeof count);
    char* p = nullptr;
    // (the run ends inside a frame, so room_for's bytes follow it there)
    if (count < UINT32_MAX && (stride == 0 || ((o.used & (S.frame - 1)) != 0 && (p = o.room_for(stride))))) {
      if (stride) {
        if (t) copy_zero(p, tag, t, tp - t);
        copy_zero(p + tp, payload, n, np - n);
      }
      ++count;
      std::memcpy(o.open_hdr + 4, &count, sizeof count);
      o.open_end = o.used;
      return;
    }
  }
  align16(o);
  const SendRun h{static_cast<uint32_t>(kSendRun | t << 8), 1, n};
  char* p = o.record(sizeof h + stride);
  std::memcpy(p, &h, sizeof h);
  if (t) copy_zero(p + sizeof h, tag, t, tp - t);
  copy_zero(p + sizeof h + tp, payload, n, np - n);
  o.note_open(kSendRun, p);
  o.open_tag = t;
  o.open_n = n;
}

// Room for the replies of n more bytes: per record at most a header, 15
// bytes of padding, 8 of realignment and the < kMinRoom bytes left at a
// frame's end.
inline void reply_reserve(Outbox& o, size_t n) {
  o.reserve(n + (n / (S.frame - kMinRoom - sizeof(Header)) + 2) * 96);
}

// Bytes the open kReply record can still take in its frame: its padding to
// 16 and the rest of the frame (none when the record ends at the frame's
// end, where the next byte is another frame's, or less than kMinRoom before
// it); 0 when no kReply record is open.
inline size_t reply_fits(const Outbox& o) {
  if (!o.is_open(kReply)) return 0;
  const size_t in = o.used & (S.frame - 1);
  const size_t room = in == 0 || S.frame - in < kMinRoom ? 0 : S.frame - in;
  return pad16(o.open_n) - o.open_n + room;
}

// The open kReply record grown by `add` bytes (at most reply_fits(o)): where
// they go -- the caller writes them --, with the record's length, header
// and zero padding after them updated; nullptr when the batch has no room.
inline char* reply_grow(Outbox& o, size_t add) {
  const size_t end = o.open_n + add, extra = pad16(end) - pad16(o.open_n);
  if (extra != 0 && !o.room_for(extra)) return nullptr;
  char* d = o.open_hdr + sizeof(Header) + o.open_n;
  std::memset(d + add, 0, pad16(end) - end);
  o.open_n = end;
  const uint64_t total = end;
  std::memcpy(o.open_hdr + offsetof(Header, n), &total, sizeof total);
  o.open_end = o.used;
  return d;
}

// Get replies to one requester: the bytes its gets read, back to back in
// request order, in kReply records of at most a frame (each padded to 16);
// a reply may continue in the next record. The requester walks its own
// gets along them (phase2), so no reply carries a header of its own: a
// single-word get costs 8 bytes of batch, not 48.
void reply_append(Outbox& o, const char* src, size_t n) {
  // The common reply, a word or two into the open record's frame: inline.
  if (n <= 16 && reply_fits(o) >= n) {
    if (char* d = reply_grow(o, n)) {
      if (n == 8)
        std::memcpy(d, src, 8);
      else
        bspk::copy_bytes(d, src, n);
      return;
    }
  }
  reply_reserve(o, n);
  while (n > 0) {
    if (const size_t k = std::min(n, reply_fits(o))) {  // fill the open record up to its frame's end
      if (char* d = reply_grow(o, k)) {
        bspk::copy_bytes(d, src, k);
        src += k;
        n -= k;
        continue;
      }
    }
    align16(o);
    const size_t in = o.used & (S.frame - 1), room = S.frame - in;
    size_t k = std::min(n, (room >= kMinRoom + sizeof(Header) ? room : S.frame) - sizeof(Header));
    const Header h{kReply, 0, 0, 0, k};
    o.begin_record(sizeof h + pad16(k));
    const size_t at = o.used;
    o.write(&h, sizeof h);
    o.write(src, k);
    o.zeros(pad16(k) - k);
    o.note_open(kReply, o.at(at));
    o.open_n = k;
    src += k;
    n -= k;
  }
}

// The replies of a GetRun (serve_run): `count` gets of n bytes, the k-th at
// src + k * stride, appended back to back exactly as reply_append would
// append them one by one, but gathered straight into the open kReply record
// as many at a time as its frame holds (one header update per frame); a get
// that does not fit whole goes through reply_append, which splits it.
void reply_strided(Outbox& o, const char* src, size_t n, size_t count, size_t stride) {
  reply_reserve(o, n * count);
  for (size_t k = 0; k < count;) {
    if (const size_t fit = std::min(count - k, reply_fits(o) / n)) {
      if (char* d = reply_grow(o, fit * n)) {
        const char* s = src + k * stride;
        if (n == 8)
          for (size_t i = 0; i < fit; ++i, d += 8, s += stride) std::memcpy(d, s, 8);
        else
          for (size_t i = 0; i < fit; ++i, d += n, s += stride) std::memcpy(d, s, n);
        k += fit;
        continue;
      }
    }
    reply_append(o, src + k * stride, n);
    ++k;
  }
}

// A put: a SmallPut record when it fits one, else a Header record.
void put_put(Outbox& o, uint64_t regid, uint64_t offset, const void* src, size_t n) {
  S.copied += n;
  if (n > kSmallPutMax || regid > UINT32_MAX) {
    put_record(o, Header{kPut, 0, regid, offset, n}, src, n);
  } else if (!small_put_here(o, regid, offset, src, n)) {
    // (written piecewise: a SmallPut may be larger than a frame and straddle frames)
    SmallPut h{static_cast<uint32_t>(kSmallPut | n << 8), static_cast<uint32_t>(regid), offset};
    o.begin_record(sizeof h + pad8(n));
    const size_t at = o.used;
    o.write(&h, sizeof h);
    o.write(src, n);
    o.zeros(pad8(n) - n);
    // Open for combining only when the record lies in one frame: a later put
    // extends it at open_hdr + its length, which is the batch's next byte
    // only within one frame. A record larger than a frame straddles frames
    // that need not be adjacent in memory (frames recycled from superstep to
    // superstep); extending it there wrote the next put's bytes past its
    // first frame, into whatever memory followed (a put lost, another
    // frame's bytes overwritten).
    if (at / S.frame == (o.used - 1) / S.frame || !o.remote)
      o.note_small(kSmallPut, o.at(at), static_cast<uint32_t>(regid), offset, n);
    else
      o.open_end = 0;
  }
}

// ---------------------------------------------------------------- registrations

// The live registration `addr` names on this process (newest), for fn.
// One-entry cache: registrations change only at a bsp_sync (apply_ops).
uint64_t lookup_reg(const char* fn, const void* addr) {
  if (addr == S.cache_addr && S.cache_id) return S.cache_id;
  auto it = S.by_addr.find(addr);
  if (it != S.by_addr.end() && !it->second.empty()) {
    S.cache_addr = addr;
    S.cache_id = it->second.back();
    S.cache_reg = &S.regs.at(S.cache_id);
    return S.cache_id;
  }
  if (S.pending.count(addr))
    fatal(fn, "address %p was registered with bsp_push_reg in this superstep; a registration takes effect at the "
              "next bsp_sync",
          addr);
  if (!addr) fatal(fn, "address NULL is not registered on this process (bsp_push_reg(NULL, 0) names NULL)");
  fatal(fn, "address %p is not registered (bsp_push_reg)", addr);
}

void check_range(const char* fn, int pid, uint64_t regid, bsp_size_t offset, bsp_size_t nbytes, const char* verb) {
  const Reg& r = regid == S.cache_id ? *S.cache_reg : S.regs.at(regid);
  int64_t size = r.size[static_cast<size_t>(pid)];
  int64_t end = static_cast<int64_t>(offset) + nbytes;
  if (end > size) {
    if (size == 0)
      fatal(fn, "%s %d bytes at offset %d of a variable that pid %d registered with size 0 (NULL or empty)", verb,
            nbytes, offset, pid);
    fatal(fn, "%s %lld bytes past the end of the registration on pid %d (offset %d + %d bytes > its registered size %lld)",
          verb, (long long)(end - size), pid, offset, nbytes, (long long)size);
  }
}

void check_drma(const char* fn, bsp_pid_t pid, bsp_size_t offset, bsp_size_t nbytes,
                const void* local, const char* local_name) {
  if (pid < 0 || pid >= S.P) fatal(fn, "pid %d is out of range [0, %d)", pid, S.P);
  if (offset < 0) fatal(fn, "negative offset %d", offset);
  if (nbytes < 0) fatal(fn, "negative size %d", nbytes);
  if (!local) fatal(fn, "%s is NULL", local_name);
}

// Every check of a put or get at its call (pid, offset and size, the local
// buffer, the registration and the range on pid); returns the registration.
uint64_t drma_reg(const char* fn, bsp_pid_t pid, bsp_size_t offset, bsp_size_t nbytes, const void* local,
                  const char* local_name, const void* reg_addr, const char* verb) {
  check_drma(fn, pid, offset, nbytes, local, local_name);
  const uint64_t id = lookup_reg(fn, reg_addr);
  check_range(fn, pid, id, offset, nbytes, verb);
  return id;
}

// ---------------------------------------------------------------- the sync

// Bytes a record takes in its batch (0 if its sizes are absurd).
size_t record_len(const Header& h) {
  if (h.n > (1ull << 40) || h.aux > (1u << 30)) return 0;
  switch (h.kind) {
    case kPad: return sizeof(Header) + h.n;
    case kPut:
    case kReply: return sizeof(Header) + pad16(h.n);
    case kGet:
    case kZcGet:
    case kAck:
    case kEnd:
    case kHead: return sizeof(Header);
    case kZcPut:
    case kZcBuf: return sizeof(Header) + sizeof(ZcKey);
    case kSend: return sizeof(Header) + pad16(h.aux) + pad16(h.n);
    case kOps: return sizeof(Header) + pad16(h.n * sizeof(Op));
    default: return 0;
  }
}

// Visit the records of a batch.
// Visit the records of a batch: f(header, offset of its data, its address
// when the whole record lies in one span, else nullptr). SmallPut, SmallGet
// and SmallSend records are handed over as kPut, kGet and kSend headers, a
// SendRun as a kSendRun header (aux: tag bytes, a: messages, n: payload
// bytes of each), a GetRun as a kGetRun header (aux: stride, a, b as kGet,
// n: bytes of all its gets) with the bytes of each get in place of the
// data offset (a run has no data). Headers never straddle a span
// (frames; a 4 KiB buffer; the local batch), so they are read in place.
template <class F>
void for_records(const Reader& rd, const char* fn, int src, F&& f) {
  const size_t total = rd.total();
  size_t off = 0;
  size_t si = 0, s0 = 0;  // the span holding `off` and its start offset
  while (off < total) {
    while (si < rd.nspans() && off >= s0 + rd.span(si).len) s0 += rd.span(si++).len;
    if (si == rd.nspans()) break;
    const Span& sp = rd.span(si);
    size_t room = S.frame - (off & (S.frame - 1));
    if (room < kMinRoom) {
      off += room;
      continue;
    }
    const char* p = sp.base + (off - s0);
    size_t in_span = s0 + sp.len - off;
    uint32_t k;
    std::memcpy(&k, p, sizeof k);
    if (k == kPad8) {
      off += 8;
      continue;
    }
    if ((k & 0xff) == kSmallPut) {
      SmallPut h;
      if (in_span < sizeof h) fatal(fn, "malformed batch from pid %d (a put header across a frame)", src);
      std::memcpy(&h, p, sizeof h);
      size_t n = h.kind_len >> 8;
      if (off + sizeof h + n > total)
        fatal(fn, "malformed batch from pid %d (a put of %zu bytes at byte %zu of %zu)", src, n, off, total);
      f(Header{kPut, 0, h.regid, h.offset, n}, off + sizeof h, in_span >= sizeof h + n ? p + sizeof h : nullptr);
      off += sizeof h + pad8(n);
      continue;
    }
    if ((k & 0xff) == kSmallGet) {
      SmallGet h;
      if (in_span < sizeof h) fatal(fn, "malformed batch from pid %d (a get header across a frame)", src);
      std::memcpy(&h, p, sizeof h);
      f(Header{kGet, 0, h.regid, h.offset, h.kind_len >> 8}, off + sizeof h, p + sizeof h);
      off += sizeof h;
      continue;
    }
    if ((k & 0xff) == kGetRun) {
      GetRun h;
      if (in_span < sizeof h) fatal(fn, "malformed batch from pid %d (a get run header across a frame)", src);
      std::memcpy(&h, p, sizeof h);
      const size_t n = h.kind_len >> 8;
      if (n == 0 || h.count < 2 || h.stride == 0 || h.offset > (1ull << 48))
        fatal(fn, "malformed batch from pid %d (a run of %u gets of %zu bytes at a stride of %u bytes)", src, h.count,
              n, h.stride);
      f(Header{kGetRun, h.stride, h.regid, h.offset, uint64_t{h.count} * n}, n, p + sizeof h);
      off += sizeof h;
      continue;
    }
    if ((k & 0xff) == kSendRun) {
      SendRun h;
      if (in_span < sizeof h) fatal(fn, "malformed batch from pid %d (a message run header across a frame)", src);
      std::memcpy(&h, p, sizeof h);
      const size_t tag = h.kind_tag >> 8;
      size_t len = 0;
      if (tag <= kSendRunMax && h.nbytes <= kSendRunMax && h.count > 0) len = sizeof h + send_stride(tag, h.nbytes) * h.count;
      if (len == 0 || len > in_span)  // (a run never straddles a frame)
        fatal(fn, "malformed batch from pid %d (a run of %u messages at byte %zu of %zu)", src, h.count, off, total);
      f(Header{kSendRun, static_cast<uint32_t>(tag), h.count, 0, h.nbytes}, off + sizeof h, p + sizeof h);
      off += len;
      continue;
    }
    if ((k & 0xff) == kSmallSend) {
      SmallSend h;
      if (in_span < sizeof h) fatal(fn, "malformed batch from pid %d (a message header across a frame)", src);
      std::memcpy(&h, p, sizeof h);
      size_t tag = h.kind_tag >> 8, len = sizeof h + pad16(tag) + pad16(h.nbytes);
      if (h.nbytes > (1ull << 40) || off + len > total)
        fatal(fn, "malformed batch from pid %d (a message of %llu bytes at byte %zu of %zu)", src,
              (unsigned long long)h.nbytes, off, total);
      f(Header{kSend, static_cast<uint32_t>(tag), 0, 0, h.nbytes}, off + sizeof h,
        in_span >= len ? p + sizeof h : nullptr);
      off += len;
      continue;
    }
    Header h;
    if (in_span < sizeof h) fatal(fn, "malformed batch from pid %d (a header across a frame)", src);
    std::memcpy(&h, p, sizeof h);
    size_t len = record_len(h);
    if (h.kind > kLastKind || len == 0 || off + len > total)  // (record_len is 0 for kinds 8..10 here)
      fatal(fn, "malformed batch from pid %d (record kind %u at byte %zu of %zu)", src, h.kind, off, total);
    f(h, off + sizeof(Header), in_span >= len ? p + sizeof(Header) : nullptr);
    off += len;
  }
}

const Reg& reg_for(const char* fn, const char* what, int src, const Header& h);

// Write one put from batch rd into this process's registration.
// `d`: the data's address when contiguous (else it is read from rd at `data`).
inline void apply_put(const Reader& rd, const Header& h, size_t data, const char* d, int src, uint64_t& last_id,
                      const Reg*& r) {
  if (h.a != last_id || static_cast<int64_t>(h.b + h.n) > r->size[static_cast<size_t>(S.pid)]) {
    r = &reg_for("bsp_sync", "bsp_put", src, h);
    last_id = h.a;
  }
  char* dst = static_cast<char*>(const_cast<void*>(r->addr)) + h.b;
  S.copied += h.n;
  if (d || (d = rd.at(data, h.n))) {
    if (h.n == 8)
      std::memcpy(dst, d, 8);
    else
      bspk::copy_bytes(dst, d, h.n);
  } else {
    rd.copy(data, dst, h.n);
  }
}

// The messages of a kSend or kSendRun record into the BSMP queue of the next
// superstep, in reading order (the queue is reversed once every batch is
// read: highest source pid first, last sent first). `tag`: the record's data
// when it lies in one span (a run always does).
void queue_messages(const Reader& rd, const Header& h, size_t off, const char* tag) {
  MessageRun m{};
  m.tagsize = static_cast<int>(h.aux);
  m.nbytes = static_cast<int64_t>(h.n);
  if (h.kind == kSendRun) {
    const size_t u = send_unit(h.aux, h.n);
    m.tagpad = pad_to(h.aux, u);
    m.stride = send_stride(h.aux, h.n);
    m.count = static_cast<uint32_t>(h.a);
  } else {
    m.tagpad = pad16(h.aux);
    m.count = 1;
    if (!tag) {  // larger than a frame: assemble it once
      const size_t total = pad16(h.aux) + pad16(h.n);
      S.assembled.emplace_back(new char[total]);
      rd.copy(off, S.assembled.back().get(), total);
      S.copied += total;
      tag = S.assembled.back().get();
    }
  }
  m.base = tag;
  S.queue.push_back(m);
  S.qmsgs += m.count;
  S.qbytes += static_cast<int64_t>(m.count) * m.nbytes;
}

// Sort a batch's records. direct: write its puts now (no get reads this
// superstep, and batches are parsed in ascending source pid).
void parse(const Reader& rd, int src, Inbound& in, bool direct) {
  uint64_t last_id = 0;
  const Reg* r = nullptr;
  for_records(rd, "bsp_sync", src, [&](const Header& h, size_t off, const char* data) {
    switch (h.kind) {
      case kPut:
        if (direct)
          apply_put(rd, h, off, data, src, last_id, r);
        else
          in.puts.push_back({h, off});
        break;
      case kGet:
      case kGetRun: in.gets.push_back({h, off}); break;  // (kGetRun: off is the bytes of each get)
      case kZcPut: in.zc_puts.push_back({h, off}); break;
      case kZcBuf:  // (its issuer flagged the sync two-phase: never direct)
        if (direct)
          fatal("bsp_sync", "malformed batch from pid %d (a staged bsp_put in a sync it did not flag as two-phase)",
                src);
        in.puts.push_back({h, off});
        S.staged_in = true;
        break;
      case kZcGet: in.zc_gets.push_back({h, off}); break;
      case kSend:
      case kSendRun:
        if (src < S.P) queue_messages(rd, h, off, data);
        break;
      case kEnd: in.end = true; break;
      case kHead: in.gets_flag |= (h.aux & kHeadGets) != 0; break;
      case kOps:
        in.has_ops = true;
        in.ops.resize(h.n);
        rd.copy(off, in.ops.data(), h.n * sizeof(Op));
        break;
      default: break;
    }
  });
}

std::string describe(const Op& o) {
  switch (o.kind) {
    case kPush: return "bsp_push_reg";
    case kPop: return "bsp_pop_reg";
    default: return "bsp_set_tagsize(" + std::to_string(o.value) + ")";
  }
}

std::string count_of(const std::vector<Op>& ops, uint64_t kind) {
  size_t n = 0;
  for (auto& o : ops) n += o.kind == kind;
  return std::to_string(n);
}

// The collective ops of every process must agree (compared with pid 0); pops
// of NULL take the id the others pop. Returns nothing; ends the job if not.
void check_ops(std::vector<std::vector<Op>>& all) {
  const std::vector<Op>& ref = all[0];
  for (int j = 1; j < S.P; ++j) {
    const std::vector<Op>& o = all[static_cast<size_t>(j)];
    size_t n = std::min(ref.size(), o.size());
    for (size_t i = 0; i < n; ++i) {
      // (Which registration a pop names is compared below, NULL being a wildcard.)
      bool same = ref[i].kind == o[i].kind && (ref[i].kind != kTagsize || ref[i].value == o[i].value);
      if (!same)
        fatal_collective(0, "bsp_sync",
                         "processes 0 and " + std::to_string(j) + " differ in their collective calls of superstep " +
                             std::to_string(S.step) + ": call " + std::to_string(i + 1) + " was " +
                             describe(ref[i]) + " on pid 0 but " + describe(o[i]) + " on pid " + std::to_string(j));
    }
    if (ref.size() != o.size()) {
      std::string m = "processes 0 and " + std::to_string(j) + " differ in their collective calls of superstep " +
                      std::to_string(S.step) + ": pid 0 called bsp_push_reg " + count_of(ref, kPush) +
                      ", bsp_pop_reg " + count_of(ref, kPop) + " and bsp_set_tagsize " + count_of(ref, kTagsize) +
                      " times, pid " + std::to_string(j) + " " + count_of(o, kPush) + ", " + count_of(o, kPop) +
                      " and " + count_of(o, kTagsize) + " times";
      fatal_collective(0, "bsp_sync", m);
    }
  }
  // Pops: every process that named an address (not NULL, the wildcard)
  // popped the same registration (compared with the first such process, not
  // only with pid 0, which may have popped NULL).
  for (size_t i = 0; i < ref.size(); ++i) {
    if (ref[i].kind != kPop) continue;
    int first = -1;
    for (int j = 0; j < S.P; ++j) {
      const uint64_t id = all[static_cast<size_t>(j)][i].regid;
      if (id == kWildcard) continue;
      if (first < 0) {
        first = j;
      } else if (id != all[static_cast<size_t>(first)][i].regid) {
        fatal_collective(0, "bsp_sync",
                         "bsp_pop_reg: processes " + std::to_string(first) + " and " + std::to_string(j) +
                             " popped different registrations in superstep " + std::to_string(S.step) + " (call " +
                             std::to_string(i + 1) + "; the k-th bsp_push_reg on every process is one variable)");
      }
    }
  }
}

// The registration every process's bsp_pop_reg(NULL) pops when no process
// named an address (as BSPonMPI): the oldest live one that is NULL on every
// process. Ends the job when there is none.
uint64_t pop_everywhere_null() {
  auto it = S.by_addr.find(nullptr);
  if (it == S.by_addr.end())
    fatal_collective(0, "bsp_sync",
                     "bsp_pop_reg: every process popped NULL in superstep " + std::to_string(S.step) +
                         ", but no registration of NULL is live");
  for (uint64_t id : it->second) {  // oldest first
    const Reg& r = S.regs.at(id);
    bool all_null = true;
    for (int j = 0; j < S.P && all_null; ++j) all_null = r.null[static_cast<size_t>(j)] != 0;
    if (all_null) return id;
  }
  fatal_collective(0, "bsp_sync",
                   "bsp_pop_reg: every process popped NULL in superstep " + std::to_string(S.step) +
                       ", but no live registration is NULL on every process (pop the address instead where it "
                       "is not NULL)");
}

// Apply the registration ops of this superstep (after the puts).
void apply_ops(const std::vector<std::vector<Op>>& all) {
  S.cache_addr = nullptr;
  S.cache_id = 0;
  S.cache_reg = nullptr;
  const std::vector<Op>& mine = S.ops;
  size_t push_k = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    const Op& o = mine[i];
    if (o.kind == kPush) {
      const auto& pr = S.pushed[push_k++];
      Reg r;
      r.addr = pr.addr;
      r.mr = pr.mr;
      r.size.resize(static_cast<size_t>(S.nprocs_all), 0);
      r.null.resize(static_cast<size_t>(S.nprocs_all), 0);
      r.keys.resize(static_cast<size_t>(S.nprocs_all), bspk_memkey{0, 0, 0});
      for (int j = 0; j < S.P; ++j) {
        const Op& oj = all[static_cast<size_t>(j)][i];
        const int64_t v = oj.value;
        r.size[static_cast<size_t>(j)] = v < 0 ? 0 : v;
        r.null[static_cast<size_t>(j)] = v < 0;
        if (oj.addr && v > 0) r.keys[static_cast<size_t>(j)] = bspk_memkey{oj.addr, oj.key, static_cast<uint64_t>(v)};
      }
      S.regs[o.regid] = std::move(r);
      S.by_addr[pr.addr].push_back(o.regid);
    } else if (o.kind == kPop) {
      uint64_t id = o.regid;
      if (id == kWildcard)  // take the id a process popping a real address popped
        for (int j = 0; j < S.P && id == kWildcard; ++j) id = all[static_cast<size_t>(j)][i].regid;
      if (id == kWildcard) id = pop_everywhere_null();
      auto rit = S.regs.find(id);
      if (rit == S.regs.end())
        fatal_collective(0, "bsp_sync", "bsp_pop_reg: processes popped a registration that does not exist on pid " +
                                            std::to_string(S.pid));
      auto& ids = S.by_addr[rit->second.addr];
      ids.erase(std::find(ids.begin(), ids.end(), id));
      if (ids.empty()) S.by_addr.erase(rit->second.addr);
      // No read of it is in flight: every reader acknowledged in phase 2.
      if (rit->second.mr.id) check("bsp_sync", bspk_mem_deregister(&rit->second.mr));
      S.regs.erase(rit);
    } else {
      S.tag_now = static_cast<int>(o.value);
    }
  }
  S.ops.clear();
  S.pushed.clear();
  S.pending.clear();
  S.popped.clear();
  S.tag_next = S.tag_now;
}

// The first message of the BSMP queue (S.qmsgs > 0): its run, and its tag at *tag.
inline const MessageRun& queue_front(const char** tag) {
  const MessageRun& r = S.queue[S.qrun];
  *tag = r.base + static_cast<size_t>(r.count - 1 - S.qtaken) * r.stride;
  return r;
}

// Remove the first message of the BSMP queue.
inline void queue_pop() {
  const MessageRun& r = S.queue[S.qrun];
  --S.qmsgs;
  S.qbytes -= r.nbytes;
  if (++S.qtaken == r.count) {
    ++S.qrun;
    S.qtaken = 0;
  }
}

void release_previous() {
  for (bspk_ptr r : S.held) bspk_free(r);
  S.held.clear();
  S.assembled.clear();
  S.queue.clear();
  S.qrun = 0;
  S.qtaken = 0;
  S.qmsgs = S.qbytes = 0;
}

// What every batch of phase 1 ends with: the op records (to every process
// when this process made collective calls) and END markers.
void close_batches(bool ending) {
  if (!S.ops.empty() || ending) {
    for (int j = 0; j < S.nprocs_all; ++j) {
      if (j == S.pid) continue;
      if (!S.ops.empty() && j < S.P) {
        Header h{kOps, 0, 0, 0, S.ops.size()};
        put_record(outbox(j), h, S.ops.data(), S.ops.size() * sizeof(Op));
      }
      if (ending) {
        Header h{kEnd, 0, 0, 0, 0};
        put_record(outbox(j), h, nullptr, 0);
      }
    }
  }
  std::fill(S.sent_to.begin(), S.sent_to.end(), 0);
}

// The batch for pid j as a message (zero copy: its frames go out).
void send_batch(const char* fn, int j) {
  Outbox& o = S.out[static_cast<size_t>(j)];
  check(fn, bspk_send(j, o.region(), o.used));
  o.sent();
}

// Phase 1 out, as messages: the batches (closed).
void send_batches(const char* fn, bool ending) {
  close_batches(ending);
  for (int j : S.touched) {
    if (j == S.pid) continue;
    Outbox& o = S.out[static_cast<size_t>(j)];
    if (o.used) {
      send_batch(fn, j);
      S.sent_to[static_cast<size_t>(j)] = 1;
    }
  }
}

// bspk_sync_allgatherv's reader of a board superstep: process j's block;
// takes the batch it carries for this process into the BoardInbox `arg`
// (copied: the board's memory is the next gather's) and notes one coming as
// a message. Calls no BSPk (a malformed block is reported after the
// superstep).
void board_read(int j, const void* block, size_t n, void* arg) {
  BoardInbox& in = *static_cast<BoardInbox*>(arg);
  if (j == S.pid || !in.err.empty()) return;
  const char* b = static_cast<const char*>(block);
  BoardHead h;
  if (n < sizeof h || (std::memcpy(&h, b, sizeof h), h.magic != kBoardMagic) ||
      n < sizeof h + size_t{h.nent} * sizeof(BoardEntry)) {
    in.err = "malformed board block from pid " + std::to_string(j) + " (" + std::to_string(n) + " bytes)";
    return;
  }
  in.gets |= (h.flags & kBoardGets) != 0;
  in.big |= (h.flags & kBoardBig) != 0;
  in.ops |= (h.flags & kBoardOps) != 0;
  for (uint32_t k = 0; k < h.nent; ++k) {
    BoardEntry e;
    std::memcpy(&e, b + sizeof h + k * sizeof e, sizeof e);
    if (static_cast<int64_t>(e.dest_big >> 1) != S.pid) continue;
    const size_t src = static_cast<size_t>(j);
    if (e.dest_big & 1) {
      in.big_from[src] = 1;
      continue;
    }
    if (size_t{e.off} + e.len > n || e.off % kAlign != 0 || in.got[src]) {
      in.err = "malformed board block from pid " + std::to_string(j) + " (its batch for this process)";
      return;
    }
    std::vector<char>& buf = in.bufs[src];
    if (buf.size() < e.len) buf.resize(std::max<size_t>(e.len, 256));
    bspk::copy_bytes(buf.data(), b + e.off, e.len);
    (*in.readers)[src].assign(buf.data(), e.len);
    in.got[src] = 1;
  }
}

// A board superstep (on one host; see the top of the file): the batches
// this process has written (S.touched, closed) of up to kBoardBatchMax bytes
// inline in its block, one bspk_sync_allgatherv, and when some process has a
// larger batch one more BSPk superstep carrying those as messages (every
// process knows from the heads; each expects exactly its own). `flags`: this
// process's block flags (kBoardGets, kBoardOps). Fills `in` (got, readers,
// held); `sent`: marks the destinations in S.sent_to (phase 1).
void board_superstep(const char* fn, uint16_t flags, BoardInbox& in, bool sent) {
  const int me = S.pid;
  size_t nent = 0;
  for (int j : S.touched) nent += j != me && S.out[static_cast<size_t>(j)].used != 0;
  // (the head and entries, padded with zeros so that the first batch starts 16-aligned)
  const size_t head_bytes = sizeof(BoardHead) + nent * sizeof(BoardEntry);
  S.board_block.resize(pad16(head_bytes));
  static_assert(kAlign - sizeof(BoardHead) == sizeof(BoardEntry), "the padding is at most one entry");
  if (head_bytes % kAlign) std::memcpy(S.board_block.data() + head_bytes, &kNoEntry, sizeof kNoEntry);
  S.board_iov.assign(1, iovec{S.board_block.data(), S.board_block.size()});
  static const char zeros[kAlign] = {};
  size_t at = S.board_block.size(), k = 0;
  S.big_to.clear();
  for (int j : S.touched) {
    Outbox& o = S.out[static_cast<size_t>(j)];
    if (j == me || o.used == 0) continue;
    BoardEntry e{static_cast<uint32_t>(j) << 1, 0, 0};
    // Its records after the kHead record (see BoardHead).
    const size_t skip = o.used + kMinRoom <= S.frame ? sizeof(Header) : 0, len = o.used - skip;
    if (skip && len <= kBoardBatchMax && at + pad16(len) <= BSPK_SYNC_BLOCK_MAX) {
      e.off = static_cast<uint16_t>(at);
      e.len = static_cast<uint16_t>(len);
      if (len) S.board_iov.push_back(iovec{const_cast<char*>(o.first()) + skip, len});
      if (len % kAlign) S.board_iov.push_back(iovec{const_cast<char*>(zeros), kAlign - len % kAlign});
      at += pad16(len);
    } else {
      e.dest_big |= 1;
      flags |= kBoardBig;
      S.big_to.push_back(j);
    }
    std::memcpy(S.board_block.data() + sizeof(BoardHead) + k++ * sizeof e, &e, sizeof e);
    if (sent) S.sent_to[static_cast<size_t>(j)] = 1;
  }
  const BoardHead h{kBoardMagic, flags, static_cast<uint32_t>(nent)};
  std::memcpy(S.board_block.data(), &h, sizeof h);
  in.gets = (flags & kBoardGets) != 0;
  in.big = (flags & kBoardBig) != 0;
  in.ops = (flags & kBoardOps) != 0;
  std::fill(in.got.begin(), in.got.end(), 0);
  std::fill(in.big_from.begin(), in.big_from.end(), 0);
  in.err.clear();
  check(fn, bspk_sync_allgatherv(S.board_iov.data(), static_cast<int>(S.board_iov.size()), board_read, &in));
  if (!in.err.empty()) fatal(fn, "%s", in.err.c_str());
  if (!in.big) return;
  for (int j : S.big_to) send_batch(fn, j);
  check(fn, bspk_expect(static_cast<int>(std::count(in.big_from.begin(), in.big_from.end(), 1))));
  check(fn, bspk_sync());
  for (bspk_ptr region; !bspk_is_null(region = bspk_recv());) {
    const int src = bspk_sender_id(region);
    if (src < 0 || src >= S.nprocs_all || !in.big_from[static_cast<size_t>(src)] || in.got[static_cast<size_t>(src)])
      fatal(fn, "unexpected batch from pid %d", src);
    in.held->push_back(region);
    (*in.readers)[static_cast<size_t>(src)].assign(region);
    in.got[static_cast<size_t>(src)] = 1;
  }
}

// Phase 1 through the board (a counted sync on one host; see the top of the
// file): the closed batches in one board superstep. `gets`: this process
// has remote gets (phase 2). Fills S.in / S.readers / S.held.
void board_exchange(const char* fn, bool ending, bool gets) {
  close_batches(ending);
  const uint16_t flags =
      static_cast<uint16_t>((gets ? kBoardGets : 0) | (!S.ops.empty() || ending ? kBoardOps : 0));
  board_superstep(fn, flags, S.board1, true);
  for (int j = 0; j < S.nprocs_all; ++j)
    if (S.board1.got[static_cast<size_t>(j)]) S.in[static_cast<size_t>(j)].present = true;
}

// After board_exchange, the program's declaration taken back (bspk_withdraw:
// `kind` 1 bspk_expect(m), 2 bspk_will_send(S.decl_v)) against what it
// declares in BSPlib terms (bsp.h): the other processes that sent this one a
// batch, the batches this one sent. A wrong declaration is an error, as on
// the message path (where it is found by the count, or by the time-out).
void check_declaration(const char* fn, int kind, int64_t m) {
  const int me = S.pid;
  if (kind == 1) {
    int64_t got = 0;
    for (int j = 0; j < S.nprocs_all; ++j) got += j != me && S.in[static_cast<size_t>(j)].present;
    if (got != m)
      fatal(fn, "bspk_expect(%lld) declared %lld batch(es) for this process, but %lld process(es) sent it one "
                "(one per other process that put, hpput, sent to it or got from it in this superstep)",
            (long long)m, (long long)m, (long long)got);
    return;
  }
  for (int j = 0; j < S.nprocs_all; ++j) {
    if (j == me) continue;
    const int sent = S.sent_to[static_cast<size_t>(j)] ? 1 : 0;
    if (S.decl_v[static_cast<size_t>(j)] != sent)
      fatal(fn, "bspk_will_send declared %d message(s) to pid %d, but this process sent it %d batch(es) in this "
                "superstep (one if it put, hpput, sent to it or got from it)",
            S.decl_v[static_cast<size_t>(j)], j, sent);
  }
}

// A zero-copy hpget of this process's memory by pid j that j reads itself:
// in a counted sync always; in a declared one only if this process sent j a
// phase-1 batch (announce_zc). Otherwise this process answers it as a bsp_get.
bool zc_get_read_by(int j, const Header& h) { return !(h.aux & kZcMaybe) || S.sent_to[static_cast<size_t>(j)]; }

// The registration a put or get from another process names, checked
// against this process's size (the issuer checked it at the call).
const Reg& reg_for(const char* fn, const char* what, int src, const Header& h) {
  auto it = S.regs.find(h.a);
  if (it == S.regs.end() || static_cast<int64_t>(h.b + h.n) > it->second.size[static_cast<size_t>(S.pid)])
    fatal(fn, "%s from pid %d: registration %llu does not cover bytes [%llu, %llu) here", what, src,
          (unsigned long long)h.a, (unsigned long long)h.b, (unsigned long long)(h.b + h.n));
  return it->second;
}

void write_self_gets(const std::vector<char>& self_replies);

// Phase 2's batch from pid src (read by rd): the replies to this process's
// gets from src written into their destinations, in request order, and
// src's acknowledgement of its reads of this process checked. This
// process's gets of itself go in before the first batch from a higher pid.
void take_replies(const char* fn, int src, const Reader& rd, const std::vector<char>& self_replies,
                  bool& self_written) {
  const int me = S.pid;
  if (src < 0 || src >= S.P || (S.gets[static_cast<size_t>(src)].empty() && !S.read_by[static_cast<size_t>(src)]))
    fatal(fn, "unexpected phase-2 batch (get replies, read acknowledgement) from pid %d", src);
  if (src > me && !self_written) {
    write_self_gets(self_replies);
    self_written = true;
  }
  size_t k = 0, done = 0;  // want[k]'s current piece's bytes written so far
  uint32_t piece = 0;      // ... and which piece (a strided run's)
  bool acked = false;
  auto& want = S.gets[static_cast<size_t>(src)];
  for_records(rd, fn, src, [&](const Header& h, size_t off, const char* data) {
    acked |= h.kind == kAck;
    if (h.kind != kReply) return;
    for (size_t at = 0; at < h.n;) {  // the replies' bytes, in request order (reply_append)
      if (k >= want.size())
        fatal(fn, "get replies from pid %d do not match the requests (%llu bytes more than asked)", src,
              (unsigned long long)(h.n - at));
      const PendingGet& w = want[k];
      char* dst = static_cast<char*>(w.dst) + piece * w.stride + done;
      const size_t c = std::min<size_t>(h.n - at, static_cast<size_t>(w.n) - done);
      if (data && c == 8)
        std::memcpy(dst, data + at, 8);
      else if (data)
        bspk::copy_bytes(dst, data + at, c);
      else
        rd.copy(off + at, dst, c);
      S.copied += c;
      at += c;
      done += c;
      if (done == static_cast<size_t>(w.n)) {
        done = 0;
        if (++piece == w.count) {
          ++k;
          piece = 0;
        }
      }
    }
  });
  if (k != want.size()) fatal(fn, "pid %d answered %zu of %zu gets", src, k, want.size());
  if (S.read_by[static_cast<size_t>(src)] && !acked)
    fatal(fn, "pid %d sent its phase-2 batch without saying its reads of this process are done", src);
  want.clear();
}

// Phase 2: answer the get requests read in phase 1 and collect the answers
// to this process's own gets from other processes. Get results are written
// in ascending source pid, call order within a source (as BSPonMPI; its
// test get_4 overlaps gets from every pid, this one's own included): the
// replies are taken by sender pid, and this process's gets of itself
// (self_replies, read in phase 1) go in at its own place.
// Zero-copy reads in the same batches: every process that read this one's
// memory (its hpputs' sources, its variables for hpgets) says so (kAck)
// once its reads are done, and this process leaves only then.
// On one host (the board) the batches go through a board superstep, as in
// phase 1 -- every process takes part, as every process knows from phase
// 1's heads that phase 2 runs -- instead of messages under bspk_expect
// (shm p = 2, one single-word bsp_get per superstep: 1.2 -> 0.6 us); across
// hosts as messages, each process expecting one from every owner it asked.
void phase2(const char* fn, const std::vector<char>& self_replies) {
  const int me = S.pid;
  // The owners this process must hear from: those it asked for data or that read its memory.
  auto owner = [&](int j) {
    return j != me && (!S.gets[static_cast<size_t>(j)].empty() || S.read_by[static_cast<size_t>(j)]);
  };
  for (int j = 0; j < S.P; ++j)
    if (S.read_from[static_cast<size_t>(j)]) put_record(outbox(j), Header{kAck, 0, 0, 0, 0}, nullptr, 0);
  if (S.read_by_bytes) bspk_note_read_by(S.read_by_bytes);  // (the profile's fetched_out of this superstep)
  S.read_by_bytes = 0;
  bool self_written = false;
  if (S.board) {
    board_superstep(fn, 0, S.board2, false);
    for (int src = 0; src < S.nprocs_all; ++src) {
      if (!S.board2.got[static_cast<size_t>(src)]) continue;
      take_replies(fn, src, S.replies[static_cast<size_t>(src)], self_replies, self_written);
    }
    for (bspk_ptr r : S.replies_held) bspk_free(r);
    S.replies_held.clear();
    for (int j = 0; j < S.P; ++j)  // (every owner sent its batch: else its replies or acknowledgement are missing)
      if (!S.board2.got[static_cast<size_t>(j)] && owner(j))
        fatal(fn, "no phase-2 batch (get replies, read acknowledgement) from pid %d", j);
  } else {
    int owners = 0;
    for (int j = 0; j < S.P; ++j) owners += owner(j);
    for (int j : S.touched)
      if (j != me) send_batch(fn, j);
    check(fn, bspk_expect(owners));
    check(fn, bspk_sync());
    for (bspk_ptr region; !bspk_is_null(region = bspk_recv());) {
      Reader rd(region);
      take_replies(fn, bspk_sender_id(region), rd, self_replies, self_written);
      bspk_free(region);
    }
  }
  if (!self_written) write_self_gets(self_replies);
}

// A GetRun from pid j (h as for_records gives it, n: the bytes of each
// get): checked as one get of the bytes from its first get's offset to its
// last get's end, then its sources into the reply to j (reply_strided) or,
// for this process's own gets, into self_replies.
void serve_run(const char* fn, int j, const Header& h, size_t n) {
  const uint64_t count = h.n / n;
  const unsigned __int128 span = static_cast<unsigned __int128>(count - 1) * h.aux + n;
  const Header whole{kGet, 0, h.a, h.b, span > (uint64_t{1} << 50) ? uint64_t{1} << 50 : static_cast<uint64_t>(span)};
  const Reg& r = reg_for(fn, "bsp_get", j, whole);
  const char* src = static_cast<const char*>(r.addr) + h.b;
  S.copied += h.n;
  if (j != S.pid) {
    reply_strided(outbox(j), src, n, count, h.aux);
    return;
  }
  const size_t at = S.self_replies.size();
  S.self_replies.resize(at + h.n);
  for (uint64_t k = 0; k < count; ++k) bspk::copy_bytes(S.self_replies.data() + at + k * n, src + k * h.aux, n);
}

// This process's gets of itself, read with the others' sources.
void write_self_gets(const std::vector<char>& self_replies) {
  auto& mine = S.gets[static_cast<size_t>(S.pid)];
  size_t at = 0;
  for (auto& g : mine) {
    for (uint32_t k = 0; k < g.count; ++k) {
      bspk::copy_bytes(static_cast<char*>(g.dst) + k * g.stride, self_replies.data() + at, static_cast<size_t>(g.n));
      at += static_cast<size_t>(g.n);
      S.copied += static_cast<uint64_t>(g.n);
    }
  }
  mine.clear();
}

// ---------------------------------------------------------------- staging

// A staging buffer of at least n bytes for this sync (the smallest free one
// that fits, else a new one registered with the fabric); its index in
// S.stage, or -1 when the fabric refuses to register it.
long stage_take(size_t n) {
  long best = -1;
  for (size_t i = 0; i < S.stage.size(); ++i) {
    const Staged& b = S.stage[i];
    if (!b.used && b.cap >= n && (best < 0 || b.cap < S.stage[static_cast<size_t>(best)].cap))
      best = static_cast<long>(i);
  }
  if (best < 0) {
    Staged b;
    b.cap = (n + 4095) & ~size_t(4095);
    b.p = static_cast<char*>(std::aligned_alloc(4096, b.cap));
    if (!b.p) fatal("bsp_put", "out of memory for a %zu-byte staging buffer", b.cap);
    if (bspk_mem_register(b.p, b.cap, &b.mr) != BSPK_OK) {
      std::free(b.p);
      return -1;
    }
    S.stage.push_back(b);
    best = static_cast<long>(S.stage.size() - 1);
  }
  S.stage[static_cast<size_t>(best)].used = true;
  return best;
}

// After a sync: buffers it used become free; buffers it did not use are
// released (all of them when `all`: bsp_end, before the runtime finalizes).
void stage_trim(bool all) {
  size_t k = 0;
  for (Staged& b : S.stage) {
    if (b.used && !all) {
      b.used = false;
      S.stage[k++] = b;
    } else {
      check("bsp_sync", bspk_mem_deregister(&b.mr));
      std::free(b.p);
    }
  }
  S.stage.resize(k);
}

// A bsp_put of at least put_zc_min bytes to another process: its source is
// copied once, at the call, into a staging buffer (the copy the standard
// requires), and the target reads it from there with a fabric read between
// the phases of the sync, straight into the destination (plan_staged), then
// acknowledges it (kAck: this process keeps the buffer until then). The
// kZcBuf record keeps the put's place in the batch, so the target applies it
// in call order. False (nothing done) when no buffer can be registered.
bool put_staged(bsp_pid_t pid, const void* src, void* dst, bsp_size_t offset, bsp_size_t nbytes) {
  const uint64_t id = drma_reg("bsp_put", pid, offset, nbytes, src, "the source", dst, "writes");
  const size_t n = static_cast<size_t>(nbytes);
  const long i = stage_take(n);
  if (i < 0) return false;
  const Staged& b = S.stage[static_cast<size_t>(i)];
  bspk::copy_bytes(b.p, src, n);
  S.copied += n;
  S.read_by_bytes += n;
  const ZcKey k{b.mr.remote.addr, b.mr.remote.key};
  put_record(outbox(pid), Header{kZcBuf, 0, id, static_cast<uint64_t>(offset), n}, &k, sizeof k);
  S.read_by[static_cast<size_t>(pid)] = 1;
  S.zc_any = true;  // (two phases: the reads, then the acknowledgements)
  return true;
}

// Start the read of what a kZcPut / kZcBuf record from pid j announces (its
// ZcKey: the issuer's registered bytes) into dst, inside registration `into`;
// into.id 0 (a variable the fabric would not register): dst is registered
// for this sync. j is then owed an acknowledgement (kAck, phase 2).
void read_announced(const char* fn, int j, const Inbound::Rec& rec, char* dst, bspk_memreg into) {
  ZcKey k;
  S.readers[static_cast<size_t>(j)].copy(rec.data, &k, sizeof k);
  if (!into.id) {
    check(fn, bspk_mem_register(dst, rec.h.n, &into));
    S.zc_tmp.push_back(into);
  }
  const bspk_memkey from{k.addr, k.key, rec.h.n};
  check(fn, bspk_mem_read(j, &from, 0, &into, dst, rec.h.n));
  S.read_from[static_cast<size_t>(j)] = 1;
}

// Marks a kZcBuf record read straight into its destination.
constexpr size_t kReadDirect = SIZE_MAX;

// Between the phases: start the reads of the large bsp_puts to this process
// (kZcBuf records). A put whose destination bytes meet no other write of
// this sync here (another put, an hpput, a get result) is read straight
// into its destination: as no other write touches them, the order of
// writes cannot matter (nor can another process's zero-copy read of them in
// this phase -- an hpget of them, or the read of this process's hpput
// source --, which must see the old bytes: counted as a write here). The
// others are read into a staging buffer of this process and written in
// their place among the puts (ascending source pid, call order), a second
// copy (counted). Overlap is decided per cluster of intersecting ranges: a
// put in a cluster with any other range is staged. Returns whether a read
// was started.
bool plan_staged(const char* fn) {
  if (!S.staged_in) return false;
  S.staged_in = false;
  struct W {
    uintptr_t lo, hi;
    int j;     // source pid of a kZcBuf record, else -1
    size_t k;  // its index in S.in[j].puts
  };
  std::vector<W> w;
  auto add = [&](const void* p, size_t n, int j, size_t k) {
    if (n) w.push_back({reinterpret_cast<uintptr_t>(p), reinterpret_cast<uintptr_t>(p) + n, j, k});
  };
  for (int j = 0; j < S.P; ++j) {
    const Inbound& b = S.in[static_cast<size_t>(j)];
    for (size_t k = 0; k < b.puts.size(); ++k) {
      const Header& h = b.puts[k].h;
      const char* dst = static_cast<const char*>(reg_for(fn, "bsp_put", j, h).addr) + h.b;
      add(dst, h.n, h.kind == kZcBuf ? j : -1, k);
    }
    for (const auto& rec : b.zc_puts)
      add(static_cast<const char*>(reg_for(fn, "bsp_hpput", j, rec.h).addr) + rec.h.b, rec.h.n, -1, 0);
    for (const auto& rec : b.zc_gets)  // (read by j during this phase: they must see the old bytes)
      if (zc_get_read_by(j, rec.h))
        add(static_cast<const char*>(reg_for(fn, "bsp_hpget", j, rec.h).addr) + rec.h.b, rec.h.n, -1, 0);
    for (const PendingGet& g : S.gets[static_cast<size_t>(j)]) add(g.dst, g.span(), -1, 0);
    for (const ZcOp& g : S.zc_gets[static_cast<size_t>(j)]) add(g.local, g.n, -1, 0);
  }
  for (const auto& src : S.zc_sources) add(src.first, src.second, -1, 0);  // (this process's hpput sources)
  std::sort(w.begin(), w.end(), [](const W& x, const W& y) { return x.lo < y.lo; });
  bool any = false;
  for (size_t c = 0; c < w.size();) {
    size_t e = c + 1;
    uintptr_t hi = w[c].hi;
    while (e < w.size() && w[e].lo < hi) hi = std::max(hi, w[e++].hi);
    const bool alone = e == c + 1;
    for (size_t i = c; i < e; ++i) {
      if (w[i].j < 0) continue;
      const int j = w[i].j;
      Inbound::Rec& rec = S.in[static_cast<size_t>(j)].puts[w[i].k];
      const Header& h = rec.h;
      if (alone) {
        const Reg& r = reg_for(fn, "bsp_put", j, h);
        read_announced(fn, j, rec, static_cast<char*>(const_cast<void*>(r.addr)) + h.b, r.mr);
        rec.data = kReadDirect;
      } else {
        const long s = stage_take(h.n);
        if (s < 0)
          fatal(fn, "cannot register a %llu-byte staging buffer for a bsp_put from pid %d", (unsigned long long)h.n,
                j);
        read_announced(fn, j, rec, S.stage[static_cast<size_t>(s)].p, S.stage[static_cast<size_t>(s)].mr);
        rec.data = static_cast<size_t>(s);
      }
      any = true;
    }
    c = e;
  }
  return any;
}

// A large bsp_put in its place among the puts: nothing when it was read
// into its destination, else a copy out of the staging buffer it was read into.
void apply_staged(const Inbound::Rec& rec, int src) {
  if (rec.data == kReadDirect) return;
  const Header& h = rec.h;
  char* dst = static_cast<char*>(const_cast<void*>(reg_for("bsp_sync", "bsp_put", src, h).addr)) + h.b;
  bspk::copy_bytes(dst, S.stage[rec.data].p, h.n);
  S.copied += h.n;
}

// Before phase 1 is sent: every run of zero-copy hpputs is registered with
// the fabric and announced to its destination (kZcPut: where to read it);
// a run the fabric refuses to register goes into the batch as a bsp_put.
// The registrations live until phase 2 is over (the readers' kAck).
// Zero-copy hpgets are announced to their owners (kZcGet). The reader may
// read only once the owner's superstep (its computation, and the puts of the
// sync before) is over. In a counted sync phase 1 is a barrier, which proves
// it. Under a declaration (bspk_expect) only a phase-1 batch from the owner
// proves it (the owner sent it on entering the sync): the record says
// "maybe" (kZcMaybe), and both sides decide alike after phase 1 -- the
// reader reads if the owner's batch came, and the owner, who knows whether
// it sent one, waits for the reader's acknowledgement or else answers the
// hpget as a bsp_get (reply batch: copied).
void announce_zc(bool declared) {
  S.zc_gets_maybe = declared;
  for (int j = 0; j < S.P; ++j)
    for (const ZcOp& g : S.zc_gets[static_cast<size_t>(j)])
      put_record(outbox(j), Header{kZcGet, declared ? kZcMaybe : 0, g.regid, g.offset, g.n}, nullptr, 0);
  for (int j = 0; j < S.P; ++j) {
    auto& runs = S.zc_puts[static_cast<size_t>(j)];
    for (const ZcOp& z : runs) {
      bspk_memreg mr{};
      if (bspk_mem_register(z.local, z.n, &mr) != BSPK_OK) {
        put_put(outbox(j), z.regid, z.offset, z.local, z.n);
        continue;
      }
      S.zc_mrs.push_back(mr);
      S.zc_sources.push_back({z.local, z.n});
      S.read_by_bytes += z.n;
      ZcKey k{mr.remote.addr, mr.remote.key};
      put_record(outbox(j), Header{kZcPut, 0, z.regid, z.offset, z.n}, &k, sizeof k);
      S.read_by[static_cast<size_t>(j)] = 1;
    }
    runs.clear();
  }
}

// Between the phases, after every get source was read into the replies and
// before any put is written: this process reads what was hpput to it from
// the issuers' memory into its variables, and its own zero-copy hpgets from
// the owners' variables, all with fabric reads at once, then waits for them.
// A read into memory outside a registered variable (an hpget's destination,
// a variable the fabric would not register) registers it for this sync.
void zc_reads(const char* fn) {
  bool any = plan_staged(fn);
  for (int j = 0; j < S.P; ++j) {
    const Inbound& b = S.in[static_cast<size_t>(j)];
    for (const auto& rec : b.zc_puts) {
      const Reg& r = reg_for(fn, "bsp_hpput", j, rec.h);
      read_announced(fn, j, rec, static_cast<char*>(const_cast<void*>(r.addr)) + rec.h.b, r.mr);
      any = true;
    }
    for (const auto& rec : b.zc_gets) {
      reg_for(fn, "bsp_hpget", j, rec.h);  // (the reader checked it against this size at its call)
      if (zc_get_read_by(j, rec.h)) {  // (else answered as a get)
        S.read_by[static_cast<size_t>(j)] = 1;
        S.read_by_bytes += rec.h.n;
      }
    }
  }
  for (int j = 0; j < S.P; ++j) {
    auto& gets = S.zc_gets[static_cast<size_t>(j)];
    if (S.zc_gets_maybe && !gets.empty() && !S.in[static_cast<size_t>(j)].present) {
      // Declared sync, no batch from the owner: it answers them as bsp_gets
      // (after its own, in record order, as this process expects them).
      for (const ZcOp& g : gets) S.gets[static_cast<size_t>(j)].push_back({g.local, static_cast<int64_t>(g.n)});
      gets.clear();
      continue;
    }
    for (const ZcOp& g : gets) {
      const Reg& r = S.regs.at(g.regid);  // registrations change only after this sync's reads
      bspk_memreg into{};
      check(fn, bspk_mem_register(g.local, g.n, &into));
      S.zc_tmp.push_back(into);
      check(fn, bspk_mem_read(j, &r.keys[static_cast<size_t>(j)], g.offset, &into, g.local, g.n));
      S.read_from[static_cast<size_t>(j)] = 1;
      any = true;
    }
    gets.clear();
  }
  if (any) check(fn, bspk_mem_wait());
  for (bspk_memreg& m : S.zc_tmp) check(fn, bspk_mem_deregister(&m));
  S.zc_tmp.clear();
}

// After phase 2: every reader of this process's memory is done.
void zc_release(const char* fn) {
  for (bspk_memreg& m : S.zc_mrs) check(fn, bspk_mem_deregister(&m));
  S.zc_mrs.clear();
  S.zc_sources.clear();
  std::fill(S.read_from.begin(), S.read_from.end(), 0);
  std::fill(S.read_by.begin(), S.read_by.end(), 0);
  S.zc_any = false;
}

void note_copied() {
  if (S.copied) bspk_note_copied(S.copied);
  S.copied = 0;
}

// The end of every bsp_sync (once its puts and registration changes are
// applied): the tag size requested takes effect; the BSMP queue of the next
// superstep is put in reading order -- highest source pid first, and within
// one source the last sent first (as BSPonMPI): its records were queued in
// ascending source pid and sending order (queue_messages), and a run's
// messages are taken last first; the bytes copied are counted; staging
// buffers no sync used go.
void finish_superstep() {
  S.tag_now = S.tag_next;
  std::reverse(S.queue.begin(), S.queue.end());
  note_copied();
  if (!S.stage.empty()) stage_trim(false);
  ++S.step;
  S.applied.store(S.step, std::memory_order_release);  // every write of the sync is in (bsp_direct_get)
  if (S.step < 0xFFFFFFFFu) bspk_set_layer_superstep("BSPlib", S.step);  // (reports; past 2^32 - 2 they keep the last)
}

// The BSPlib superstep boundary (see the top of the file). `ending`: bsp_end's.
void superstep(const char* fn, bool ending) {
  release_previous();
  note_copied();
  const int me = S.pid;
  if (ending && S.zc_any) {  // communication issued before bsp_end is not delivered
    for (auto& v : S.zc_puts) v.clear();
    for (auto& v : S.zc_gets) v.clear();
    std::fill(S.read_by.begin(), S.read_by.end(), 0);  // (large bsp_puts: their buffers go at bsp_end)
    S.read_by_bytes = 0;
    S.zc_any = false;
  }
  // Phase 2 runs when some process has gets to have answered: under a
  // declaration (bspk_expect, message path) always, as no process knows the
  // others' gets; counted, when a process with remote gets said so to every
  // process (kGetsFlag; on the board, its block's head), so supersteps
  // without gets cost one BSPk superstep.
  bool declared = bspk_declared() != 0;
  // On one host phase 1 goes through the board (see the top of the file),
  // whose superstep needs no counts: a declaration is taken back and checked
  // against the batches instead (check_declaration).
  int withdrawn = 0;
  int64_t declared_m = 0;
  if (declared && S.board) {
    withdrawn = bspk_withdraw(&declared_m, S.decl_v.data());
    declared = false;
  }
  // Idle processes (pid >= P) count every superstep: a declaration would be
  // a mixed-kinds error deep in the engine. Say what the program did.
  if (declared && S.nprocs_all > S.P)
    fatal("bsp_sync",
          "bspk_expect / bspk_will_send was called, but bsp_begin(%d) left %d of the job's %d processes idle, and "
          "idle processes make every bsp_sync counted without the shared-memory board (BSPK_BSPLIB_BOARD, one "
          "host only): drop the declaration, or start the job with %d processes",
          S.P, S.nprocs_all - S.P, S.nprocs_all, S.P);
  const bool board = S.board;
  bool remote_gets = S.zc_any;  // (zero-copy ops: their reads and acknowledgements need phase 2 too)
  // (a get from pid j started j's batch: j is in S.touched)
  for (int j : S.touched) remote_gets |= j != me && !S.gets[static_cast<size_t>(j)].empty();
  if (remote_gets && !declared && !ending && !board)  // (on the board, its block's head says so)
    for (int j = 0; j < S.nprocs_all; ++j)
      if (j != me) outbox(j).set_head_flag(kHeadGets);
  if (S.zc_any) announce_zc(declared);

  // ---- phase 1: every batch (the local one too), by source pid
  for (auto& b : S.in)
    if (b.present) b.clear();  // (only a batch that came fills its Inbound)
  if (board) {
    board_exchange(fn, ending, remote_gets && !ending);
    if (withdrawn) check_declaration(fn, withdrawn, declared_m);
  } else {
    send_batches(fn, ending);
    check(fn, bspk_sync());
    for (bspk_ptr region; !bspk_is_null(region = bspk_recv());) {
      int src = bspk_sender_id(region);
      if (src < 0 || src >= S.nprocs_all || S.in[static_cast<size_t>(src)].present)
        fatal(fn, "unexpected batch from pid %d", src);
      S.held.push_back(region);
      S.readers[static_cast<size_t>(src)].assign(region);
      S.in[static_cast<size_t>(src)].present = true;
    }
  }
  // The local batch: its heap buffer becomes this superstep's local inbox (no copy).
  if (size_t nself = S.out[static_cast<size_t>(me)].take_heap(S.local_in)) {
    S.readers[static_cast<size_t>(me)].assign(S.local_in.data(), nself);
    S.in[static_cast<size_t>(me)].present = true;
  }
  // The common superstep on one host: the block heads say that no process
  // has gets to answer (so no phase 2), made collective calls or is ending.
  // Then the batches (inline or, when too large for the board, as messages)
  // hold puts and BSMP messages only: parse them in ascending source pid,
  // writing puts while parsing, and skip the checks and loops below, which
  // would find nothing (callgrind: ~300 instructions per superstep at p = 2).
  // A superstep in which nothing happened (a program's pure barrier) ends
  // here too.
  if (board && !ending && !remote_gets && !S.board1.gets && !S.board1.ops && S.ops.empty() &&
      S.gets[static_cast<size_t>(me)].empty()) {
    for (int j = 0; j < S.nprocs_all; ++j) {
      Inbound& b = S.in[static_cast<size_t>(j)];
      if (!b.present) continue;
      parse(S.readers[static_cast<size_t>(j)], j, b, true);
      if (b.end || b.has_ops || !b.gets.empty() || !b.zc_puts.empty() || !b.zc_gets.empty() || !b.puts.empty())
        fatal(fn, "malformed batch from pid %d (records its block head did not announce)", j);
    }
    for (int j : S.touched) S.out[static_cast<size_t>(j)].reset();
    S.touched.clear();
    finish_superstep();
    return;
  }
  // On the message path, a counted superstep in which nothing happened (a
  // program's pure barrier): no batch came, so no process ended, made
  // collective calls, put, sent or asked this one for data, and this process
  // has nothing of its own to apply. What follows would loop over every
  // process and find nothing.
  if (!board && !declared && !ending && !remote_gets && S.held.empty() && !S.in[static_cast<size_t>(me)].present &&
      S.ops.empty() && S.gets[static_cast<size_t>(me)].empty() && S.touched.empty()) {
    finish_superstep();
    return;
  }
  // Does some process have gets to be answered (the heads say)? If not, and
  // nothing can read this process's memory, puts are written while parsing.
  bool two_phase = declared || remote_gets || (board && S.board1.gets);
  for (int j = 0; j < S.nprocs_all && !two_phase; ++j) {
    if (!S.in[static_cast<size_t>(j)].present) continue;
    Header h{};
    S.readers[static_cast<size_t>(j)].copy(0, &h, sizeof h);
    two_phase |= h.kind == kHead && (h.aux & kHeadGets);
  }
  const bool direct = !two_phase && !ending && S.gets[static_cast<size_t>(me)].empty();
  for (int j = 0; j < S.nprocs_all; ++j)
    if (S.in[static_cast<size_t>(j)].present)
      parse(S.readers[static_cast<size_t>(j)], j, S.in[static_cast<size_t>(j)], direct);

  // ---- Err_SYNC: some processes in bsp_end, others in bsp_sync
  {
    int first_end = -1, first_sync = -1;
    for (int j = 0; j < S.P; ++j) {
      bool e = j == me ? ending : S.in[static_cast<size_t>(j)].end;
      if (e && first_end < 0) first_end = j;
      if (!e && first_sync < 0) first_sync = j;
    }
    if (first_end >= 0 && first_sync >= 0)
      fatal_collective(first_sync, ending ? "bsp_end" : "bsp_sync",
                       "pid " + std::to_string(first_end) + " called bsp_end while pid " + std::to_string(first_sync) +
                           " called bsp_sync (Err_SYNC: every process must end the SPMD section together)");
  }
  if (ending) return;

  // ---- collective calls agree?
  bool any_ops = !S.ops.empty();
  for (int j = 0; j < S.P; ++j) any_ops |= S.in[static_cast<size_t>(j)].has_ops;
  std::vector<std::vector<Op>> all_ops;
  if (any_ops) {
    all_ops.resize(static_cast<size_t>(S.P));
    for (int j = 0; j < S.P; ++j) all_ops[static_cast<size_t>(j)] = j == me ? S.ops : S.in[static_cast<size_t>(j)].ops;
    check_ops(all_ops);
  }

  // ---- serve gets: read every source now, before any write of this sync
  for (int j : S.touched) S.out[static_cast<size_t>(j)].reset();
  S.touched.clear();
  S.self_replies.clear();
  for (int j = 0; j < S.P; ++j) {
    const Inbound& b = S.in[static_cast<size_t>(j)];
    if (b.gets.empty() && b.zc_gets.empty()) continue;
    uint64_t last_id = 0;
    const Reg* r = nullptr;
    for (size_t k = 0; k < b.gets.size() + b.zc_gets.size(); ++k) {
      // Its gets, then the zero-copy hpgets it cannot read itself (zc_get_read_by).
      const bool zc = k >= b.gets.size();
      const Header& h = zc ? b.zc_gets[k - b.gets.size()].h : b.gets[k].h;
      if (zc && zc_get_read_by(j, h)) continue;
      if (!zc && h.kind == kGetRun) {
        serve_run(fn, j, h, b.gets[k].data);
        continue;
      }
      if (!r || h.a != last_id || static_cast<int64_t>(h.b + h.n) > r->size[static_cast<size_t>(me)]) {
        r = &reg_for(fn, "bsp_get", j, h);
        last_id = h.a;
      }
      const char* src = static_cast<const char*>(r->addr) + h.b;
      S.copied += h.n;
      if (j != me)
        reply_append(outbox(j), src, h.n);
      else
        S.self_replies.insert(S.self_replies.end(), src, src + h.n);
    }
  }
  if (two_phase) {
    zc_reads(fn);
    phase2(fn, S.self_replies);
    zc_release(fn);
  } else {
    write_self_gets(S.self_replies);
  }
  for (int j : S.touched) S.out[static_cast<size_t>(j)].reset();
  S.touched.clear();

  // ---- puts, ascending source pid, call order within a source (unless
  // written while parsing)
  for (int j = 0; j < S.P; ++j) {
    const Inbound& b = S.in[static_cast<size_t>(j)];
    uint64_t last_id = 0;
    const Reg* r = nullptr;
    for (const auto& rec : b.puts) {
      if (rec.h.kind == kZcBuf)
        apply_staged(rec, j);
      else
        apply_put(S.readers[static_cast<size_t>(j)], rec.h, rec.data, nullptr, j, last_id, r);
    }
  }

  // ---- registrations and tag size change
  if (any_ops) apply_ops(all_ops);
  finish_superstep();
}

// A process with pid >= P: take part in the BSPk supersteps (sending
// nothing) until pid 0 ends the section, then leave with status 0.
[[noreturn]] void park() {
  for (;;) {
    bool end = false, gets = false;
    if (S.board) {  // the active processes' syncs go through the board
      for (auto& b : S.in) b.clear();
      board_exchange("bsp_begin", false, false);
      for (int j = 0; j < S.nprocs_all; ++j)
        if (S.in[static_cast<size_t>(j)].present)
          for_records(S.readers[static_cast<size_t>(j)], "bsp_begin", j,
                      [&](const Header& h, size_t, const char*) { end |= h.kind == kEnd; });
      gets = S.board1.gets;
      release_previous();  // (batches that came as messages)
    } else {
      check("bsp_begin", bspk_sync());
      for (;;) {
        bspk_ptr m = bspk_recv();
        if (bspk_is_null(m)) break;
        Reader rd(m);
        for_records(rd, "bsp_begin", bspk_sender_id(m), [&](const Header& h, size_t, const char*) {
          end |= h.kind == kEnd;
          gets |= h.kind == kHead && (h.aux & kHeadGets);
        });
        bspk_free(m);
      }
    }
    if (end) break;
    if (gets && S.board) {  // the active processes run phase 2 of this bsp_sync: its board superstep
      board_superstep("bsp_begin", 0, S.board2, false);
      for (bspk_ptr r : S.replies_held) bspk_free(r);  // (none is addressed to this process)
      S.replies_held.clear();
    } else if (gets) {  // ... or its superstep of messages
      check("bsp_begin", bspk_expect(0));
      check("bsp_begin", bspk_sync());
    }
  }
  std::fflush(stdout);
  int rc = bspk_finalize();
  std::exit(rc == BSPK_OK ? 0 : 1);
}

// BSPK_HP_ZEROCOPY_MIN: bytes from which bsp_hpput / bsp_hpget to or from
// another process move by a fabric read instead of through the batch
// (K/M/G suffixes; "off": never). Default kZeroCopyMin: where the read
// overtook the copy here (README, "BSPlib programs": on one host from 64 KiB,
// from 256 KiB over tcp's net, which reads by a request and a reply).
// BSPK_PUT_ZEROCOPY_MIN: the same for bsp_put's staged path (put_staged).
// Default ("auto", or unset): kPutZeroCopyMin bytes, to processes on other
// hosts only. A staged put pays the copy at the call AND the read, against
// two copies through the batch; here the read cost about as much as the
// second copy from 1 MiB over tcp, 1.2-1.7x more on one host at every size
// (libfabric shm's cross-memory read pins the pages each time), and far more
// below 256 KiB (README, "Large bsp_put: one copy").
constexpr size_t kZeroCopyMin = size_t{64} << 10;
constexpr size_t kPutZeroCopyMin = size_t{1} << 20;
size_t zerocopy_min(const char* var, size_t dflt) {
  const char* v = std::getenv(var);
  if (!v || !*v) return dflt;
  if (!std::strcmp(v, "off") || !std::strcmp(v, "never")) return SIZE_MAX;
  char* end = nullptr;
  errno = 0;
  unsigned long long x = std::strtoull(v, &end, 10);
  unsigned shift = 0;
  if (end && *end) {
    switch (*end) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      default: shift = 64;
    }
    if (shift < 64 && end[1]) shift = 64;
  }
  if (errno || end == v || *v == '-' || shift == 64 || (x << shift >> shift) != x)
    fatal("bsp_begin", "%s='%s' is not a size in bytes (e.g. 4096, 64K) or off", var, v);
  return x == 0 ? 1 : static_cast<size_t>(x << shift);
}

void start_runtime(const char* fn, int* argc, char*** argv) {
  int dummy_argc = 0;
  if (!argc) argc = &dummy_argc;
  // The layer reports BSPk's errors itself, naming the BSPlib call.
  setenv("BSPK_ERRORS", "quiet", 0);
  // No sync time-out unless the user sets one: pid 0 may read stdin for as
  // long as the user takes while the others wait (BSPedupack asks for n
  // inside the SPMD section), as BSPonMPI and MulticoreBSP allow. Dead
  // processes still end the job within seconds; Err_SYNC is found at once.
  setenv("BSPK_SYNC_TIMEOUT", "off", 0);
  if (bspk_init(argc, argv) != BSPK_OK) fatal(fn, "cannot start the runtime: %s", bspk_error_string());
  S.pid = bspk_pid();
  S.started = true;
  S.nprocs_all = bspk_nprocs();
  bspk_stats st{};
  if (bspk_get_stats(&st) == BSPK_OK && st.frame_size) S.frame = st.frame_size;
  if (S.frame & (S.frame - 1)) fatal(fn, "internal: frame size %zu is not a power of two", S.frame);
  S.frame_shift = static_cast<unsigned>(__builtin_ctzll(S.frame));
  // BSPk's reports (bspkrun's, the job hub's) name BSPlib's superstep first
  check(fn, bspk_set_layer_superstep("BSPlib", S.step));
}

bool runtime_started = false;

}  // namespace

// ================================================================ the API

extern "C" {

void bsp_init(void (*spmd)(void), int argc, char** argv) {
  // (Started directly, no runtime starts here: init_called tells a second call.)
  static bool init_called = false;
  if (runtime_started || init_called || S.phase != Phase::Before)
    fatal("bsp_init", "called twice or after bsp_begin (one SPMD section per program)");
  init_called = true;
  if (!spmd) fatal("bsp_init", "the SPMD function is NULL");
  if (bspk_launched() == 0) return;  // started directly: this is pid 0; bsp_begin starts the others
  start_runtime("bsp_init", &argc, &argv);
  runtime_started = true;
  if (S.pid != 0) {
    spmd();
    if (S.phase == Phase::Before) fatal("bsp_init", "the SPMD function returned without calling bsp_begin");
    if (S.phase != Phase::Ended) fatal("bsp_init", "the SPMD function returned without calling bsp_end");
    std::fflush(stdout);
    std::exit(0);
  }
}

void bsp_begin(bsp_pid_t maxprocs) {
  if (S.phase != Phase::Before) fatal("bsp_begin", "called twice (one SPMD section per program)");
  if (!runtime_started) {
    int launched = bspk_launched();
    if (launched == 0) {
      if (maxprocs <= 0) fatal("bsp_begin", "the number of processes must be at least 1, not %d", maxprocs);
      S.no_launcher = true;
      // MulticoreBSP's affinity settings (mcbsp-affinity.h), checked here,
      // applied by each process before the runtime starts its threads.
      std::vector<size_t> cpus;
      std::string err = bspk_bsplib::affinity_plan(maxprocs, &cpus);
      if (!err.empty()) fatal("bsp_begin", "%s", err.c_str());
      int pid = 0;
      if (maxprocs > 1) {
        // Pids 1..P-1 are forks of this process, made here: they return
        // from it (with their pid) and go on from this bsp_begin.
        pid = bsplib_spawn_self(maxprocs, &err);
        if (pid < 0) fatal("bsp_begin", "cannot start %d processes: %s", maxprocs, err.c_str());
        S.forked = pid > 0;
      }
      if (!cpus.empty() && !(err = bspk_bsplib::affinity_pin(cpus[static_cast<size_t>(pid)])).empty())
        fatal("bsp_begin", "process %d: %s", pid, err.c_str());
    }
    start_runtime("bsp_begin", nullptr, nullptr);
    runtime_started = true;
  }
  // BSPK_BSPLIB_BOARD: on / off (1, yes, true / 0, no, false); anything else
  // is refused, as every other setting (until 2026-12-07 "maybe" or "false"
  // meant on). The same on every process (below).
  bool board_off = false;
  {
    const char* v = std::getenv("BSPK_BSPLIB_BOARD");
    auto is = [v](std::initializer_list<const char*> words) {
      for (const char* w : words)
        if (!strcasecmp(v, w)) return true;
      return false;
    };
    board_off = v && *v && is({"off", "0", "no", "false"});
    if (v && *v && !board_off && !is({"on", "1", "yes", "true"}))
      fatal("bsp_begin", "BSPK_BSPLIB_BOARD='%s' is not on or off", v);
  }
  // P comes from pid 0 only, with pid 0's board choice: a process that
  // chose otherwise would sync by messages while the others use the board
  // (until 2026-12-08 that ended in a confusing "more messages than
  // declared" in the first bsp_sync).
  int P = maxprocs;
  if (S.pid == 0) {
    if (P <= 0) fatal("bsp_begin", "the number of processes must be at least 1, not %d", P);
    const int what[2] = {P, board_off ? 0 : 1};
    for (int j = 1; j < S.nprocs_all; ++j) check("bsp_begin", bspk_send_buf(j, what, sizeof what));
  }
  check("bsp_begin", bspk_expect(S.pid == 0 ? 0 : 1));
  check("bsp_begin", bspk_sync());
  if (S.pid != 0) {
    int what[2];
    bspk_ptr m = bspk_recv();
    if (bspk_is_null(m) || bspk_nelems(m) != sizeof what)
      fatal("bsp_begin", "did not receive the number of processes from pid 0");
    std::memcpy(what, bspk_elemP(m), sizeof what);
    bspk_free(m);
    P = what[0];
    if ((what[1] == 0) != board_off)
      fatal("bsp_begin", "BSPK_BSPLIB_BOARD is %s on this process but %s on pid 0: it must be the same on every "
            "process of a job (set the same environment for all of them)", board_off ? "off" : "on",
            board_off ? "on" : "off");
  }
  S.P = std::min(P, S.nprocs_all);
  S.out.resize(static_cast<size_t>(S.nprocs_all));
  for (int j = 0; j < S.nprocs_all; ++j) S.out[static_cast<size_t>(j)].remote = j != S.pid;
  S.gets.assign(static_cast<size_t>(S.nprocs_all), {});
  S.zc_puts.assign(static_cast<size_t>(S.nprocs_all), {});
  S.zc_gets.assign(static_cast<size_t>(S.nprocs_all), {});
  S.read_from.assign(static_cast<size_t>(S.nprocs_all), 0);
  S.read_by.assign(static_cast<size_t>(S.nprocs_all), 0);
  S.sent_to.assign(static_cast<size_t>(S.nprocs_all), 0);
  S.zc_min = zerocopy_min("BSPK_HP_ZEROCOPY_MIN", kZeroCopyMin);
  {
    const char* v = std::getenv("BSPK_PUT_ZEROCOPY_MIN");
    const bool automatic = !v || !*v || !std::strcmp(v, "auto");
    S.put_zc_min = automatic ? kPutZeroCopyMin : zerocopy_min("BSPK_PUT_ZEROCOPY_MIN", kPutZeroCopyMin);
    S.put_staged_to.assign(static_cast<size_t>(S.nprocs_all), 1);
    if (automatic)
      for (int j = 0; j < S.nprocs_all; ++j) S.put_staged_to[static_cast<size_t>(j)] = bspk_same_host(j) == 0;
  }
  S.in.resize(static_cast<size_t>(S.nprocs_all));
  S.readers.resize(static_cast<size_t>(S.nprocs_all));
  S.replies.resize(static_cast<size_t>(S.nprocs_all));
  {
    S.board = !board_off && S.nprocs_all > 1 && bspk_sync_allgather_shared() == 1;
    S.board1.size(S.nprocs_all);
    S.board1.readers = &S.readers;
    S.board1.held = &S.held;
    S.board2.size(S.nprocs_all);
    S.board2.readers = &S.replies;
    S.board2.held = &S.replies_held;
    S.decl_v.assign(static_cast<size_t>(S.nprocs_all), 0);
  }
  // bsp_direct_get reads another process's memory at once, but only after
  // that process has written what the last bsp_sync delivered to it: each
  // process publishes its count of completed syncs in a registered word
  // (finish_superstep), whose keys every process learns here, in one
  // all-gather superstep (idle processes take part, then park).
  {
    bspk_memkey mine{0, 0, 0};
    const bool zc_on = S.zc_min != SIZE_MAX || S.put_zc_min != SIZE_MAX;
    if (zc_on && bspk_mem_register(&S.applied, sizeof S.applied, &S.applied_mr) == BSPK_OK) {
      if (bspk_mem_register(&S.peek, sizeof S.peek, &S.peek_mr) == BSPK_OK)
        mine = S.applied_mr.remote;
      else
        check("bsp_begin", bspk_mem_deregister(&S.applied_mr));
    }
    S.applied_keys.assign(static_cast<size_t>(S.nprocs_all), bspk_memkey{0, 0, 0});
    S.applied_seen.assign(static_cast<size_t>(S.nprocs_all), 0);
    check("bsp_begin", bspk_sync_allgather(&mine, sizeof mine, S.applied_keys.data(), nullptr));
  }
  if (S.pid >= S.P) park();
  S.phase = Phase::Spmd;
  S.t0 = bspk_time();
}

void bsp_end(void) {
  need_spmd("bsp_end");
  superstep("bsp_end", true);
  for (auto& o : S.out) o.drop();
  release_previous();
  stage_trim(true);
  std::fflush(stdout);
  int rc = bspk_finalize();
  if (rc != BSPK_OK) fatal("bsp_end", "%s", bspk_error_string());
  S.phase = Phase::Ended;
  // A fork made by bsp_begin ends here, as MulticoreBSP's threads do: only
  // pid 0 goes on with main (which its forks never started).
  if (S.forked) std::exit(0);
}

bsp_nprocs_t bsp_nprocs(void) {
  if (S.phase == Phase::Spmd) return S.P;
  // After bsp_end, as before bsp_begin: the processes available (the job's
  // under a launcher; without one, the CPUs, as MulticoreBSP says).
  if (S.phase == Phase::Ended) return S.no_launcher ? bspk_bsplib::affinity_nprocs() : S.nprocs_all;
  if (runtime_started) return S.nprocs_all;
  int n = bspk_launched();
  if (n > 0) return n;
  if (n < 0) {  // launched, size known after start-up (as BSPonMPI starts MPI here)
    start_runtime("bsp_nprocs", nullptr, nullptr);
    runtime_started = true;
    return S.nprocs_all;
  }
  return bspk_bsplib::affinity_nprocs();  // the CPUs online, unless mcbsp-affinity.h's settings say otherwise
}

bsp_pid_t bsp_pid(void) {
  need_spmd("bsp_pid");
  return S.pid;
}

double bsp_time(void) {
  need_spmd("bsp_time");
  return bspk_time() - S.t0;
}

void bsp_abort_va(const char* format, va_list ap) {
  std::string msg = format ? vfmt(format, ap) : std::string("bsp_abort");
  std::fflush(stdout);
  bspk_abort_text(msg.c_str());
}

void bsp_vabort(const char* format, va_list ap) { bsp_abort_va(format, ap); }

void bspk_bsp_elements_error(const char* fn, int negative, unsigned long count, size_t elem_size) {
  if (!fn) fn = "mcbsp-templates.hpp";
  if (negative) fatal(fn, "a negative number of elements or offset (-%lu elements of %zu bytes)", count, elem_size);
  fatal(fn, "%lu elements of %zu bytes are more than the %d bytes a BSPlib size (int) can hold", count, elem_size,
        INT_MAX);
}

void bsp_abort(const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  bsp_abort_va(format, ap);
}

void bsp_sync(void) {
  need_spmd("bsp_sync");
  superstep("bsp_sync", false);
}

void bsp_push_reg(const void* addr, bsp_size_t size) {
  need_spmd("bsp_push_reg");
  if (size < 0) fatal("bsp_push_reg", "negative size %d", size);
  if (!addr && size > 0) fatal("bsp_push_reg", "NULL registered with size %d (NULL takes size 0)", size);
  uint64_t id = S.next_regid++;
  // Registered with the fabric now (zero copy on): its key travels with the
  // push, so peers' bsp_hpget of it read it directly, and reads of hpputs
  // and staged bsp_puts into it land with this registration. A refusal (e.g.
  // read-only memory on verbs) only means those go the copying way.
  // Variables of any size, although zero copy starts at zc_min: a peer's
  // bsp_direct_get reads any of them at its call (registering only those
  // of zc_min bytes or more saved 0.5 us of a 1.6 us push + pop at shm p = 2,
  // 2026-12-05, and failed every DrmaDirectGet test).
  bspk_memreg mr{};
  const bool zc_on = S.zc_min != SIZE_MAX || S.put_zc_min != SIZE_MAX;
  if (addr && size > 0 && zc_on && bspk_mem_register(addr, static_cast<size_t>(size), &mr) != BSPK_OK)
    mr = bspk_memreg{};
  S.ops.push_back({kPush, id, addr ? static_cast<int64_t>(size) : -1, mr.id ? mr.remote.addr : 0, mr.remote.key});
  S.pushed.push_back({addr, size, mr});
  S.pending[addr].push_back(id);
}

void bsp_pop_reg(const void* addr) {
  need_spmd("bsp_pop_reg");
  if (!addr) {
    // A wildcard, as in BSPonMPI: it pops what the processes that named an
    // address pop; when every process pops NULL, the oldest registration that
    // is NULL on every process (pop_everywhere_null). Resolved at the sync.
    S.ops.push_back({kPop, kWildcard, 0});
    return;
  }
  // Newest first: a push of this superstep (push then pop cancel), else the newest live one.
  uint64_t id = 0;
  auto pit = S.pending.find(addr);
  if (pit != S.pending.end() && !pit->second.empty()) {
    id = pit->second.back();
    pit->second.pop_back();
    if (pit->second.empty()) S.pending.erase(pit);
  } else {
    auto it = S.by_addr.find(addr);
    // ids already popped this superstep do not count again (a set: a
    // program popping n registrations in one superstep took O(n^2) until
    // 2026-12-04, 6.7 s for 100,000)
    if (it != S.by_addr.end()) {
      for (auto r = it->second.rbegin(); r != it->second.rend(); ++r) {
        if (!S.popped.count(*r)) {
          id = *r;
          break;
        }
      }
    }
    if (id == 0) fatal("bsp_pop_reg", "address %p has no registration to pop", addr);
    S.popped.insert(id);
  }
  S.ops.push_back({kPop, id, 0});
}

// drma_reg's checks passed inline for the common call -- in the SPMD
// section, a local buffer, the registration lookup_reg named last, pid,
// offset and a non-zero size in range on pid -- so that the caller may use
// S.cache_id without them (anything else goes through drma_reg, which names
// the error).
__attribute__((always_inline)) static inline bool drma_cached(bsp_pid_t pid, const void* reg_addr, const void* local,
                                                             bsp_size_t offset, bsp_size_t nbytes) {
  return S.phase == Phase::Spmd && reg_addr && reg_addr == S.cache_addr && S.cache_id && local && pid >= 0 &&
         pid < S.P && offset >= 0 && nbytes > 0 &&
         static_cast<int64_t>(offset) + nbytes <= S.cache_reg->size[static_cast<size_t>(pid)];
}

// The common put, without a call per check: the registration is the last
// one looked up and the record fits in the current frame. Returns false when
// the full path must run (it checks again; the batch to pid may have been
// started by then, which the full path would do first anyway).
__attribute__((always_inline)) static inline bool put_fast(bsp_pid_t pid, const void* src, const void* dst,
                                                          bsp_size_t offset, bsp_size_t nbytes) {
  if (!drma_cached(pid, dst, src, offset, nbytes) || S.cache_id > UINT32_MAX ||
      nbytes > static_cast<bsp_size_t>(kSmallPutMax))
    return false;
  Outbox& o = outbox(pid);  // (the superstep's first operation to pid starts its batch)
  if (!small_put_here(o, S.cache_id, static_cast<uint64_t>(offset), src, static_cast<size_t>(nbytes))) return false;
  S.copied += static_cast<uint64_t>(nbytes);
  return true;
}

// bsp_put, and bsp_hpput below the zero-copy size: the source is copied into the batch.
static void put_common(const char* fn, bsp_pid_t pid, const void* src, void* dst, bsp_size_t offset,
                       bsp_size_t nbytes) {
  if (put_fast(pid, src, dst, offset, nbytes)) return;
  // 0 bytes: nothing done and nothing checked (issue 11), not even the
  // SPMD section (BSPonMPI 1.1: "unless nbytes is zero").
  if (nbytes == 0) return;
  need_spmd(fn);
  const uint64_t id = drma_reg(fn, pid, offset, nbytes, src, "the source", dst, "writes");
  put_put(outbox(pid), id, static_cast<uint64_t>(offset), src, static_cast<size_t>(nbytes));
}

// bsp_put past put_fast: staged (large, to another host), else put_common.
// Out of line, so that the common call -- put_fast -- saves no registers.
__attribute__((noinline)) static void put_slow(bsp_pid_t pid, const void* src, void* dst, bsp_size_t offset,
                                               bsp_size_t nbytes) {
  if (nbytes > 0 && static_cast<size_t>(nbytes) >= S.put_zc_min && pid != S.pid && pid >= 0 && pid < S.P &&
      S.phase == Phase::Spmd && S.put_staged_to[static_cast<size_t>(pid)] && put_staged(pid, src, dst, offset, nbytes))
    return;
  put_common("bsp_put", pid, src, dst, offset, nbytes);
}

void bsp_put(bsp_pid_t pid, const void* src, void* dst, bsp_size_t offset, bsp_size_t nbytes) {
  // (from BSPK_PUT_ZEROCOPY_MIN bytes on, the staged path goes first)
  if (static_cast<size_t>(nbytes) < S.put_zc_min && put_fast(pid, src, dst, offset, nbytes)) return;
  put_slow(pid, src, dst, offset, nbytes);
}

// bsp_hpput: at least zc_min bytes to another process go by a fabric read
// of the source by the destination in the sync (zero copy); the rest as bsp_put.
void bsp_hpput(bsp_pid_t pid, const void* src, void* dst, bsp_size_t offset, bsp_size_t nbytes) {
  // (below the zero-copy size, or to itself: a bsp_put, whose common case is put_fast)
  if ((static_cast<size_t>(nbytes) < S.zc_min || pid == S.pid) && put_fast(pid, src, dst, offset, nbytes)) return;
  if (nbytes <= 0 || static_cast<size_t>(nbytes) < S.zc_min || pid == S.pid || S.phase != Phase::Spmd) {
    put_common("bsp_hpput", pid, src, dst, offset, nbytes);
    return;
  }
  const uint64_t id = drma_reg("bsp_hpput", pid, offset, nbytes, src, "the source", dst, "writes");
  auto& runs = S.zc_puts[static_cast<size_t>(pid)];
  // A put continuing the previous one (source and destination both
  // adjacent) extends it: one registration and one read for the run.
  if (!runs.empty()) {
    ZcOp& last = runs.back();
    if (last.regid == id && last.offset + last.n == static_cast<uint64_t>(offset) &&
        static_cast<const char*>(last.local) + last.n == src) {
      last.n += static_cast<size_t>(nbytes);
      return;
    }
  }
  outbox(pid);  // the batch that will carry its record (sent whether or not other records join it)
  runs.push_back({const_cast<void*>(src), static_cast<size_t>(nbytes), id, static_cast<uint64_t>(offset)});
  S.zc_any = true;
}

static void get_common(const char* fn, bsp_pid_t pid, const void* src, bsp_size_t offset, void* dst, bsp_size_t nbytes,
                       bool hp) {
  uint64_t id;
  if (drma_cached(pid, src, dst, offset, nbytes) && (!hp || static_cast<size_t>(nbytes) < S.zc_min || pid == S.pid)) {
    id = S.cache_id;  // (no zero-copy read: see below)
  } else {
    if (nbytes == 0) return;  // (as put_common: nothing checked)
    need_spmd(fn);
    id = drma_reg(fn, pid, offset, nbytes, dst, "the destination", src, "reads");
    // bsp_hpget of at least zc_min bytes from a process whose part of the
    // variable is registered with the fabric: read there directly in the sync
    // (zero copy), announced to the owner at the sync (announce_zc), which
    // then waits for the read.
    if (hp && pid != S.pid && static_cast<size_t>(nbytes) >= S.zc_min &&
        S.regs.at(id).keys[static_cast<size_t>(pid)].len != 0) {
      outbox(pid);  // the batch that will carry its record
      S.zc_gets[static_cast<size_t>(pid)].push_back({dst, static_cast<size_t>(nbytes), id, static_cast<uint64_t>(offset)});
      S.zc_any = true;
      return;
    }
  }
  Outbox& o = outbox(pid);
  auto& gets = S.gets[static_cast<size_t>(pid)];
  const size_t n = static_cast<size_t>(nbytes);
  char* d = static_cast<char*>(dst);
  // Combining: a get that continues the previous one (the batch's last
  // record, a SmallGet from the same registration, reading on where it
  // ended into memory where its destination ended) extends it. All sources
  // are read before any get result is written, and the destinations do not
  // overlap, so the result is that of the gets one by one.
  if (o.is_open(kSmallGet) && id == o.open_regid && static_cast<uint64_t>(offset) == o.open_next &&
      d == o.open_dst && o.open_n + n <= kSmallPutMax) {
    o.open_n += n;
    o.open_next += n;
    o.open_dst += n;
    const uint32_t kind_len = static_cast<uint32_t>(kSmallGet | o.open_n << 8);
    std::memcpy(o.open_hdr, &kind_len, sizeof kind_len);
    gets.back().n += nbytes;
    return;
  }
  // Strided (GetRun): gets of the same size reading on at a constant
  // stride, into memory at a constant stride (consecutive, or not: the
  // words of a cyclic distribution gathered into a vector). The second get
  // of a run turns the open single-get SmallGet into a GetRun (8 more bytes,
  // in its frame); later ones extend it. Its replies are back to back as
  // for gets one by one; the requester's PendingGet becomes one get of the
  // whole (consecutive destinations) or a strided one (count pieces).
  if (id == o.open_regid && n <= kSmallPutMax) {
    const uint64_t off = static_cast<uint64_t>(offset);
    if (o.is_open(kGetRun) && n == o.open_n && off == o.open_next && d == o.open_dst && o.open_count < UINT32_MAX) {
      ++o.open_count;
      o.open_next += o.open_stride;
      o.open_dst += o.open_dstride;
      std::memcpy(o.open_hdr + offsetof(GetRun, count), &o.open_count, sizeof o.open_count);
      PendingGet& g = gets.back();
      if (g.count > 1)
        ++g.count;
      else
        g.n += nbytes;
      return;
    }
    const uint64_t prev = o.open_next - o.open_n;  // (a single get: its offset and destination)
    const uintptr_t prev_dst = reinterpret_cast<uintptr_t>(o.open_dst) - o.open_n;
    if (o.is_open(kSmallGet) && n == o.open_n && off > prev && off - prev <= UINT32_MAX &&
        reinterpret_cast<uintptr_t>(d) > prev_dst && o.room_for(8)) {
      const GetRun run{static_cast<uint32_t>(kGetRun | n << 8), o.open_regid, prev, 2,
                       static_cast<uint32_t>(off - prev)};
      std::memcpy(o.open_hdr, &run, sizeof run);
      o.note_open(kGetRun, o.open_hdr);
      o.open_count = 2;
      o.open_stride = run.stride;
      o.open_next = off + run.stride;
      o.open_dstride = reinterpret_cast<uintptr_t>(d) - prev_dst;
      o.open_dst = d + o.open_dstride;
      PendingGet& g = gets.back();
      if (o.open_dstride == n) {
        g.n += nbytes;
      } else {
        g.stride = static_cast<int64_t>(o.open_dstride);
        g.count = 2;
      }
      return;
    }
  }
  if (n <= kSmallPutMax && id <= UINT32_MAX) {
    const SmallGet h{static_cast<uint32_t>(kSmallGet | n << 8), static_cast<uint32_t>(id), static_cast<uint64_t>(offset)};
    char* p = o.record(sizeof h);
    std::memcpy(p, &h, sizeof h);
    o.note_small(kSmallGet, p, static_cast<uint32_t>(id), static_cast<uint64_t>(offset), n);
    o.open_dst = d + n;
  } else {
    put_record(o, Header{kGet, 0, id, static_cast<uint64_t>(offset), static_cast<uint64_t>(nbytes)}, nullptr, 0);
  }
  gets.push_back({dst, nbytes});
}

void bsp_get(bsp_pid_t pid, const void* src, bsp_size_t offset, void* dst, bsp_size_t nbytes) {
  get_common("bsp_get", pid, src, offset, dst, nbytes, false);
}

void bsp_hpget(bsp_pid_t pid, const void* src, bsp_size_t offset, void* dst, bsp_size_t nbytes) {
  get_common("bsp_hpget", pid, src, offset, dst, nbytes, true);
}

void bsp_direct_get(bsp_pid_t pid, const void* src, bsp_size_t offset, void* dst, bsp_size_t nbytes) {
  const char* fn = "bsp_direct_get";
  need_spmd(fn);
  if (nbytes == 0) return;
  const uint64_t id = drma_reg(fn, pid, offset, nbytes, dst, "the destination", src, "reads");
  const Reg& r = S.regs.at(id);
  const size_t n = static_cast<size_t>(nbytes);
  if (pid == S.pid) {
    const char* from = static_cast<const char*>(r.addr) + offset;
    if (static_cast<char*>(dst) + n <= from || from + n <= static_cast<char*>(dst))
      bspk::copy_bytes(dst, from, n);
    else
      std::memmove(dst, from, n);  // (the variable onto itself)
    S.copied += n;
    return;
  }
  const bspk_memkey& k = r.keys[static_cast<size_t>(pid)];
  const bspk_memkey& progress = S.applied_keys[static_cast<size_t>(pid)];
  if (k.len == 0 || progress.len == 0)
    fatal(fn, "pid %d's part of the variable at %p is not registered with the fabric, so it cannot be read at once (%s)",
          pid, src,
          S.zc_min == SIZE_MAX && S.put_zc_min == SIZE_MAX
              ? "BSPK_HP_ZEROCOPY_MIN and BSPK_PUT_ZEROCOPY_MIN are both off: leave one of them on"
              : "the provider refused to register it there");
  // First read of pid in this superstep: wait until pid has left the last
  // bsp_sync (a barrier lets this process out once every process entered
  // it, while pid may still be writing what that sync delivered to it).
  if (S.applied_seen[static_cast<size_t>(pid)] < S.step) {
    const double t0 = bsp_time();
    for (;;) {
      check(fn, bspk_mem_read(pid, &progress, 0, &S.peek_mr, &S.peek, sizeof S.peek));
      check(fn, bspk_mem_wait());
      S.applied_seen[static_cast<size_t>(pid)] = S.peek;
      if (S.peek >= S.step) break;
      if (bsp_time() - t0 > 60)
        fatal(fn, "pid %d has not finished bsp_sync %llu after 60 s (it completed %llu)", pid,
              (unsigned long long)S.step, (unsigned long long)S.peek);
      sched_yield();
    }
  }
  // The destination is registered for the one read only (a program's dst is
  // usually a scalar or a small array; one fi_mr_reg on shm and tcp is cheap).
  bspk_memreg into{};
  check(fn, bspk_mem_register(dst, n, &into));
  int rc = bspk_mem_read(pid, &k, static_cast<size_t>(offset), &into, dst, n);
  if (rc == BSPK_OK) rc = bspk_mem_wait();
  const std::string why = rc == BSPK_OK ? std::string() : std::string(bspk_error_string());
  check(fn, bspk_mem_deregister(&into));
  if (rc != BSPK_OK) fatal(fn, "%s", why.c_str());
}

// Integers in the caller's variable, 4 or 8 bytes wide (bsp.h, "Integer
// arguments of any width"): a 4-byte variable is read as int32_t.
static int64_t read_int(const char* fn, const void* p, size_t width) {
  if (width == 4) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  if (width == 8) {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  fatal(fn, "an integer argument of %zu bytes (4 or 8 bytes: int, unsigned, long, size_t)", width);
}

// v = -1 is all ones in any width (SIZE_MAX in a size_t).
static void write_int(const char* fn, void* p, size_t width, int64_t v) {
  if (width == 8) {
    std::memcpy(p, &v, 8);
  } else if (width == 4) {
    if (v > INT32_MAX)
      fatal(fn, "%lld does not fit the 4-byte integer argument (pass a size_t or long)", (long long)v);
    int32_t w = static_cast<int32_t>(v);
    std::memcpy(p, &w, 4);
  } else {
    fatal(fn, "an integer argument of %zu bytes (4 or 8 bytes: int, unsigned, long, size_t)", width);
  }
}

void bspk_bsp_set_tagsize_w(void* tag_nbytes, size_t width) {
  need_spmd("bsp_set_tagsize");
  if (!tag_nbytes) fatal("bsp_set_tagsize", "NULL argument");
  int64_t want = read_int("bsp_set_tagsize", tag_nbytes, width);
  if (want < 0) fatal("bsp_set_tagsize", "negative tag size %lld", (long long)want);
  if (want > INT32_MAX) fatal("bsp_set_tagsize", "tag size %lld is above INT_MAX", (long long)want);
  write_int("bsp_set_tagsize", tag_nbytes, width, S.tag_next);
  S.tag_next = static_cast<int>(want);
  S.ops.push_back({kTagsize, 0, static_cast<int>(want)});
}

void bsp_set_tagsize(bsp_size_t* tag_nbytes) { bspk_bsp_set_tagsize_w(tag_nbytes, sizeof *tag_nbytes); }

// The Oxford BSP toolset's older names (bsp.h).
void bsp_pushregister(const void* addr, bsp_size_t size) { bsp_push_reg(addr, size); }
void bsp_popregister(const void* addr) { bsp_pop_reg(addr); }
void bsp_set_tag_size(bsp_size_t* tag_nbytes) { bspk_bsp_set_tagsize_w(tag_nbytes, sizeof *tag_nbytes); }

static void send_common(const char* fn, bsp_pid_t pid, const void* tag, const void* payload, bsp_size_t nbytes) {
  need_spmd(fn);
  if (pid < 0 || pid >= S.P) fatal(fn, "pid %d is out of range [0, %d)", pid, S.P);
  if (nbytes < 0) fatal(fn, "negative payload size %d", nbytes);
  if (!payload && nbytes > 0) fatal(fn, "the payload is NULL with %d bytes", nbytes);
  if (!tag && S.tag_now > 0) fatal(fn, "the tag is NULL with tag size %d", S.tag_now);
  S.copied += static_cast<uint64_t>(S.tag_now) + static_cast<uint64_t>(nbytes);
  // (a run of one must fit a frame: with frames of a few hundred bytes, larger
  // messages go as SmallSend records, which may straddle frames)
  if (static_cast<size_t>(S.tag_now) <= kSendRunMax && static_cast<size_t>(nbytes) <= kSendRunMax &&
      sizeof(SendRun) + send_stride(static_cast<size_t>(S.tag_now), static_cast<size_t>(nbytes)) + kMinRoom <= S.frame) {
    send_run(outbox(pid), tag, static_cast<size_t>(S.tag_now), payload, static_cast<size_t>(nbytes));
    return;
  }
  if (S.tag_now < (1 << 24)) {
    SmallSend h{static_cast<uint32_t>(kSmallSend | static_cast<uint32_t>(S.tag_now) << 8), 0, static_cast<uint64_t>(nbytes)};
    put_record_bytes(outbox(pid), &h, sizeof h, tag, static_cast<size_t>(S.tag_now), payload, static_cast<size_t>(nbytes));
    return;
  }
  Header h{kSend, static_cast<uint32_t>(S.tag_now), 0, 0, static_cast<uint64_t>(nbytes)};
  put_record(outbox(pid), h, tag, static_cast<size_t>(S.tag_now), payload, static_cast<size_t>(nbytes));
}

void bsp_send(bsp_pid_t pid, const void* tag, const void* payload, bsp_size_t payload_nbytes) {
  send_common("bsp_send", pid, tag, payload, payload_nbytes);
}

void bsp_hpsend(bsp_pid_t pid, const void* tag, const void* payload, bsp_size_t payload_nbytes) {
  send_common("bsp_hpsend", pid, tag, payload, payload_nbytes);
}

void bspk_bsp_qsize_w(void* nmessages, size_t nmessages_width, void* accum_nbytes, size_t accum_width) {
  need_spmd("bsp_qsize");
  if (!nmessages || !accum_nbytes) fatal("bsp_qsize", "NULL argument");
  write_int("bsp_qsize", nmessages, nmessages_width, S.qmsgs);
  write_int("bsp_qsize", accum_nbytes, accum_width, S.qbytes);
}

void bsp_qsize(bsp_nprocs_t* nmessages, bsp_size_t* accum_nbytes) {
  bspk_bsp_qsize_w(nmessages, sizeof *nmessages, accum_nbytes, sizeof *accum_nbytes);
}

void bspk_bsp_get_tag_w(void* status, size_t status_width, void* tag) {
  need_spmd("bsp_get_tag");
  if (!status) fatal("bsp_get_tag", "NULL status");
  if (S.qmsgs == 0) {
    write_int("bsp_get_tag", status, status_width, -1);
    return;
  }
  const char* t;
  const MessageRun& m = queue_front(&t);
  if (!tag && m.tagsize > 0) fatal("bsp_get_tag", "NULL tag with tag size %d", m.tagsize);
  if (m.tagsize) std::memcpy(tag, t, static_cast<size_t>(m.tagsize));
  write_int("bsp_get_tag", status, status_width, m.nbytes);
}

void bsp_get_tag(bsp_size_t* status, void* tag) { bspk_bsp_get_tag_w(status, sizeof *status, tag); }

void bsp_move(void* payload, bsp_size_t reception_nbytes) {
  need_spmd("bsp_move");
  if (reception_nbytes < 0) fatal("bsp_move", "negative size %d", reception_nbytes);
  if (S.qmsgs == 0) fatal("bsp_move", "the message queue is empty");
  const char* t;
  const MessageRun& m = queue_front(&t);
  size_t n = static_cast<size_t>(std::min<int64_t>(reception_nbytes, m.nbytes));
  if (!payload && n > 0) fatal("bsp_move", "NULL payload buffer with %d bytes", reception_nbytes);
  if (n == 8)
    std::memcpy(payload, t + m.tagpad, 8);
  else if (n)
    bspk::copy_bytes(payload, t + m.tagpad, n);
  S.copied += n;
  queue_pop();
}

bsp_size_t bsp_hpmove(void** tag_ptr, void** payload_ptr) {
  need_spmd("bsp_hpmove");
  if (!tag_ptr || !payload_ptr) fatal("bsp_hpmove", "NULL argument");
  if (S.qmsgs == 0) return -1;
  const char* t;
  const MessageRun& m = queue_front(&t);
  *tag_ptr = const_cast<char*>(t);
  *payload_ptr = const_cast<char*>(t + m.tagpad);
  const int64_t n = m.nbytes;
  queue_pop();
  return static_cast<bsp_size_t>(n);
}

}  // extern "C"
