/*
 * bench/rawfab.h -- the baseline: plain libfabric (fi_send/fi_recv on an RDM
 * endpoint, busy-polling a CQ), opened next to BSPk inside the same benchmark
 * process, on the same provider and interface BSPk chose. Deliberately written
 * against libfabric directly, not through BSPk's fabric/ layer, so that the
 * ratio measures everything BSPk adds.
 *
 * Endpoint names are exchanged with BSPk messages (one superstep).
 */
#ifndef BSPK_BENCH_RAWFAB_H
#define BSPK_BENCH_RAWFAB_H

#include <bspk.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_cq *cq;
    struct fid_av *av;
    struct fid_ep *ep;
    struct fid_mr *mr;
    void *buf, *desc;
    size_t len;
    fi_addr_t *peers;
    uint64_t *peer_base, *peer_key;  /* remote address base and key of each peer's buffer (RMA) */
} rawfab;

#define RAW_CHECK(call)                                                              \
    do {                                                                             \
        int rc_ = (int)(call);                                                       \
        if (rc_) bspk_abort("raw libfabric: %s: %s", #call, fi_strerror(-rc_));      \
    } while (0)

/* Open an endpoint on the provider BSPk picked (it exports FI_PROVIDER), register
 * a buffer of len bytes (for sends and receives: two halves), exchange names.
 * caps: FI_MSG, or FI_MSG | FI_RMA for fi_write / fi_read on the buffers. */
static inline void rawfab_open_caps(rawfab *r, size_t len, uint64_t caps) {
    memset(r, 0, sizeof *r);
    const char *prov = getenv("FI_PROVIDER");
    struct fi_info *hints = fi_allocinfo();
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = caps;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->domain_attr->av_type = FI_AV_TABLE;
    if (prov) hints->fabric_attr->prov_name = strdup(prov);
    struct fi_info *list = NULL;
    RAW_CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &list));
    fi_freeinfo(hints);
    /* the provider exactly as BSPk named it (asking for "net" also lists
     * "net;ofi_rxm"), and the same interface as BSPk on one host: loopback */
    struct fi_info *pick = NULL;
    for (struct fi_info *i = list; i; i = i->next) {
        if (prov && strcmp(i->fabric_attr->prov_name, prov)) continue;
        if (!pick) pick = i;
        if (i->domain_attr->name && !strcmp(i->domain_attr->name, "lo")) { pick = i; break; }
    }
    if (!pick) bspk_abort("raw libfabric: fi_getinfo lists no endpoint of provider %s", prov);
    r->info = fi_dupinfo(pick);
    fi_freeinfo(list);
    RAW_CHECK(fi_fabric(r->info->fabric_attr, &r->fabric, NULL));
    RAW_CHECK(fi_domain(r->fabric, r->info, &r->domain, NULL));
    struct fi_cq_attr ca;
    memset(&ca, 0, sizeof ca);
    ca.format = FI_CQ_FORMAT_CONTEXT;
    ca.size = 1024;
    ca.wait_obj = FI_WAIT_NONE;
    RAW_CHECK(fi_cq_open(r->domain, &ca, &r->cq, NULL));
    struct fi_av_attr aa;
    memset(&aa, 0, sizeof aa);
    aa.type = FI_AV_TABLE;
    RAW_CHECK(fi_av_open(r->domain, &aa, &r->av, NULL));
    RAW_CHECK(fi_endpoint(r->domain, r->info, &r->ep, NULL));
    RAW_CHECK(fi_ep_bind(r->ep, &r->av->fid, 0));
    RAW_CHECK(fi_ep_bind(r->ep, &r->cq->fid, FI_TRANSMIT | FI_RECV));
    RAW_CHECK(fi_enable(r->ep));
    r->len = len;
    if (posix_memalign(&r->buf, 4096, 2 * len)) bspk_abort("raw libfabric: out of memory");
    memset(r->buf, 1, 2 * len);
    uint64_t access = FI_SEND | FI_RECV;
    if (caps & FI_RMA) access |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    RAW_CHECK(fi_mr_reg(r->domain, r->buf, 2 * len, access, 0, 7, 0, &r->mr, NULL));
    r->desc = fi_mr_desc(r->mr);
    if (r->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
        RAW_CHECK(fi_mr_bind(r->mr, &r->ep->fid, 0));
        RAW_CHECK(fi_mr_enable(r->mr));
    }

    /* exchange endpoint names through BSPk */
    char name[256 + 16];
    size_t nlen = 256;
    RAW_CHECK(fi_getname(&r->ep->fid, name + 16, &nlen));
    uint64_t meta[2] = {(uint64_t)(uintptr_t)r->buf, fi_mr_key(r->mr)};
    memcpy(name, meta, sizeof meta);
    nlen += 16;
    int P = bspk_nprocs();
    bspk_ptr m = bspk_malloc("", 0, nlen, 1);
    memcpy(bspk_elemP(m), name, nlen);
    for (int q = 0; q < P; q++) bspk_send(q, m, nlen);
    bspk_expect(P);
    bspk_sync();
    bspk_free(m);
    r->peers = (fi_addr_t *)calloc((size_t)P, sizeof *r->peers); /* casts: C++ includes this too */
    r->peer_base = (uint64_t *)calloc((size_t)P, sizeof(uint64_t));
    r->peer_key = (uint64_t *)calloc((size_t)P, sizeof(uint64_t));
    for (bspk_ptr in; !bspk_is_null(in = bspk_recv());) {
        int q = bspk_sender_id(in);
        uint64_t pm[2];
        memcpy(pm, bspk_elemP(in), sizeof pm);
        r->peer_base[q] = pm[0];
        r->peer_key[q] = pm[1];
        if (fi_av_insert(r->av, (char *)bspk_elemP(in) + 16, 1, &r->peers[q], 0, NULL) != 1)
            bspk_abort("raw libfabric: fi_av_insert failed");
        bspk_free(in);
    }
}

static inline void rawfab_open(rawfab *r, size_t len) { rawfab_open_caps(r, len, FI_MSG); }

/* Remote address of byte `off` of dest's buffer, per the provider's mr_mode. */
static inline uint64_t rawfab_raddr(rawfab *r, int dest, uint64_t off) {
    return (r->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? r->peer_base[dest] + off : off;
}

/* fi_write (write != 0) len bytes from our buffer at loff into dest's buffer
 * at roff, or fi_read them from there into ours. */
static inline void rawfab_rma(rawfab *r, int write, int dest, size_t loff, size_t roff, size_t len) {
    static struct fi_context2 ctx;
    char *local = (char *)r->buf + loff;
    uint64_t raddr = rawfab_raddr(r, dest, roff);
    ssize_t rc;
    while ((rc = write ? fi_write(r->ep, local, len, r->desc, r->peers[dest], raddr, r->peer_key[dest], &ctx)
                       : fi_read(r->ep, local, len, r->desc, r->peers[dest], raddr, r->peer_key[dest], &ctx)) ==
           -FI_EAGAIN) {
        struct fi_cq_entry e;
        (void)fi_cq_read(r->cq, &e, 0);
    }
    RAW_CHECK(rc);
}

static inline void rawfab_close(rawfab *r) {
    fi_close(&r->ep->fid);
    fi_close(&r->mr->fid);
    fi_close(&r->av->fid);
    fi_close(&r->cq->fid);
    fi_close(&r->domain->fid);
    fi_close(&r->fabric->fid);
    fi_freeinfo(r->info);
    free(r->buf);
    free(r->peers);
    free(r->peer_base);
    free(r->peer_key);
}

/* Read the completions available now (any number); returns how many. */
static inline int rawfab_poll(rawfab *r) {
    struct fi_cq_entry e[8];
    ssize_t k = fi_cq_read(r->cq, e, 8);
    if (k > 0) return (int)k;
    if (k != -FI_EAGAIN) {
        struct fi_cq_err_entry err;
        memset(&err, 0, sizeof err);
        fi_cq_readerr(r->cq, &err, 0);
        bspk_abort("raw libfabric: completion error: %s", fi_strerror(err.err));
    }
    return 0;
}

/* Busy-poll until n completions were read (may read a few more: use only
 * when no other operation is outstanding). */
static inline void rawfab_wait(rawfab *r, int n) {
    struct fi_cq_entry e[8];
    while (n > 0) {
        ssize_t k = fi_cq_read(r->cq, e, 8);
        if (k > 0) n -= (int)k;
        else if (k != -FI_EAGAIN) {
            struct fi_cq_err_entry err;
            memset(&err, 0, sizeof err);
            fi_cq_readerr(r->cq, &err, 0);
            bspk_abort("raw libfabric: completion error: %s", fi_strerror(err.err));
        }
    }
}

static inline void rawfab_post_recv(rawfab *r, size_t len) {
    static struct fi_context2 ctx;
    ssize_t rc;
    while ((rc = fi_recv(r->ep, (char *)r->buf + r->len, len, r->desc, FI_ADDR_UNSPEC, &ctx)) == -FI_EAGAIN)
        { struct fi_cq_entry e_; (void)fi_cq_read(r->cq, &e_, 0); }
    RAW_CHECK(rc);
}

static inline void rawfab_send(rawfab *r, int dest, size_t len) {
    static struct fi_context2 ctx;
    ssize_t rc;
    while ((rc = fi_send(r->ep, r->buf, len, r->desc, r->peers[dest], &ctx)) == -FI_EAGAIN) {
        struct fi_cq_entry e;
        (void)fi_cq_read(r->cq, &e, 0);
    }
    RAW_CHECK(rc);
}

/* Half round trip (seconds) of fi_send/fi_recv ping-pong of `bytes` between
 * processes 0 and 1 (`me` is the caller's), receives pre-posted, busy polling;
 * iters / 10 + 1 untimed warm-up rounds first. bench/pingpong's baseline. */
static inline double rawfab_pingpong(rawfab *r, int me, size_t bytes, int iters) {
    double t0 = 0;
    for (int it = -iters / 10 - 1; it < iters; it++) {
        if (it == 0) t0 = bspk_time();
        if (me == 0) {
            rawfab_post_recv(r, bytes);
            rawfab_send(r, 1, bytes);
            rawfab_wait(r, 2);
        } else {
            rawfab_post_recv(r, bytes);
            rawfab_wait(r, 1);
            rawfab_send(r, 0, bytes);
            rawfab_wait(r, 1);
        }
    }
    return (bspk_time() - t0) / iters / 2;
}

#endif
