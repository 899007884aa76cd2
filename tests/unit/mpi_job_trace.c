/* mpi_job_trace DIR [unranked|heavy|nompi|wide|wider|irecv] - writes a hand-made trace of a 4-rank MPI job into
 * DIR, with the slices, arguments and flows libweft-mpi.so writes (docs: MPI call slices in
 * the issue 19 contract), so `weft report --mpi` and `weft plot mpi` have exactly known
 * answers. tests/integration/test_report_mpi.py holds the same timeline and checks them.
 *
 * Processes (pid: rank from its JOB record): 201: 2, 202: 0, 203: 3, 204: 1, on host "nodeA"
 * (ranks 0, 1) and "nodeB" (2, 3); and 200 "mpirun", no rank, no MPI slice (left out).
 * Times in ns; every rank's slice "main" runs 1,000,000 .. 3,200,000 (span 2,200,000).
 *   a ring: rank r sends 1000 * (r + 1) bytes to r + 1 (tag 7, comm 0), flow id 0x4000000000000000 | (r+1)
 *     rank 0: MPI_Send 2,000,000-2,010,000, MPI_Recv 2,010,000-2,400,000 (from 3: its send began
 *             2,300,000: wait 290,000)
 *     rank 1: MPI_Send 2,100,000-2,110,000, MPI_Recv 2,110,000-2,120,000 (from 0, began 2,000,000: 0)
 *     rank 2: MPI_Recv 2,050,000-2,210,000 (posted before 1's send began at 2,100,000: wait 50,000),
 *             then MPI_Send 2,210,000-2,220,000
 *     rank 3: MPI_Send 2,300,000-2,310,000, MPI_Recv 2,310,000-2,320,000 (from 2, began 2,210,000: 0)
 *             with MPI_Get_count 2,315,000-2,316,000 inside it (nested: not counted in MPI time again)
 *   MPI_Barrier (comm 0, seq 1, size 4): begins 2,500,000 / 2,600,000 / 2,700,000 / 3,000,000 (rank
 *     3 arrives last), ends 3,000,010 / 3,000,020 / 3,000,030 / 3,000,040: waits 500,000 / 400,000 /
 *     300,000 / 0
 *   MPI_Bcast (comm 77, a split communicator of ranks 0 and 1, seq 1, size 2, root 0, 64 bytes):
 *     rank 0 3,100,000-3,150,000, rank 1 3,120,000-3,150,000: waits 20,000 / 0
 *   MPI_Sendrecv between ranks 1 and 3, 500 bytes each way (tag 9; as libweft-mpi.so writes it:
 *     comm and size at entry, the receive's peer, tag and bytes at return, the destination only
 *     as the arrow): rank 1 3,160,000-3,180,000, rank 3 3,170,000-3,190,000: rank 1 waits 10,000
 *     for rank 3's send, rank 3 none; flow ids 0x4000000000000013 (1 -> 3), ...31 (3 -> 1)
 * unranked: no JOB records (ranks by pid order: 201 -> 0, 202 -> 1, ...); heavy: rank 0 sends
 * 100,000 bytes instead of 1000; nompi: only the "main" slices (no MPI site); wide: instead 20
 * ranks (pids 300 + r, one host), each with one MPI_Send of 100 * (r + 1) bytes to r + 1 (no
 * arrow) in its "main" slice; wider: the same with 100 ranks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "trace_builder.h"

enum { S_MAIN = 1, S_SEND, S_RECV, S_BARRIER, S_BCAST, S_GETCOUNT, S_SENDRECV, K_PEER, K_TAG, K_BYTES, K_COMM, K_SIZE,
       K_SEQ, K_ROOT, S_IRECV, S_WAIT };

static int irecv; /* variant irecv: rank 2 receives with MPI_Irecv, then MPI_Wait */

static void site(struct tb *b, uint32_t id, unsigned kind, const char *name, const char *cat)
{
	unsigned char rec[256] = {0};
	memcpy(rec, &id, 4);
	rec[4] = (unsigned char)kind;
	size_t l = strlen(name), c = strlen(cat);
	memcpy(rec + 8, name, l + 1);
	memcpy(rec + 8 + l + 1, cat, c + 1);
	rec[8 + l + 1 + c + 1] = 0; /* unit */
	tb_meta(b, WEFT_M_SITE, rec, 8 + l + c + 3);
}

struct recs {
	uint64_t w[512];
	size_t n;
};
static void rec(struct recs *r, uint64_t w0, uint32_t id, unsigned type)
{
	r->w[r->n++] = w0;
	r->w[r->n++] = HDR(id, type, 0, 0);
}
static void begin(struct recs *r, uint64_t ts, uint32_t s) { rec(r, ts, s, WEFT_R_BEGIN); }
static void end(struct recs *r, uint64_t ts, uint32_t s) { rec(r, ts, s, WEFT_R_END); }
static void arg(struct recs *r, uint32_t k, int64_t v) { rec(r, (uint64_t)v, k, WEFT_R_ARG_I64); }

#define FLOW(r) (0x4000000000000000ull | (uint64_t)((r) + 1))

static int nranks = 4;

static void send(struct recs *r, int rank, uint64_t b, uint64_t e, int64_t bytes)
{
	begin(r, b, S_SEND);
	arg(r, K_PEER, (rank + 1) % nranks);
	arg(r, K_TAG, 7);
	arg(r, K_BYTES, bytes);
	arg(r, K_COMM, 0);
	rec(r, FLOW(rank), 0, WEFT_R_FLOW_OUT);
	end(r, e, S_SEND);
}

static void recv_begin(struct recs *r, int rank, uint64_t b)
{
	int i = irecv && rank == 2;
	begin(r, b, i ? S_IRECV : S_RECV);
	arg(r, K_PEER, (rank + 3) % 4); /* the source asked for */
	arg(r, K_TAG, 7);
	arg(r, K_COMM, 0);
	if (i) { /* posted: the size comes with the Wait that completes it (as mpi/complete.c writes) */
		end(r, b + 1000, S_IRECV);
		begin(r, b + 1000, S_WAIT);
	}
}
static void recv_end(struct recs *r, int rank, uint64_t e, int64_t bytes)
{
	end(r, e, irecv && rank == 2 ? S_WAIT : S_RECV);
	arg(r, K_PEER, (rank + 3) % 4); /* the actual source */
	arg(r, K_TAG, 7);
	arg(r, K_BYTES, bytes);
	rec(r, FLOW((rank + 3) % 4), 0, WEFT_R_FLOW_IN);
}

static void coll(struct recs *r, uint32_t s, uint64_t b, uint64_t e, int64_t comm, int64_t size, int64_t seq,
		 int64_t bytes)
{
	begin(r, b, s);
	arg(r, K_COMM, comm);
	arg(r, K_SIZE, size);
	arg(r, K_SEQ, seq);
	if (bytes >= 0) {
		arg(r, K_BYTES, bytes);
		arg(r, K_ROOT, 0);
	}
	end(r, e, s);
}

static void sendrecv(struct recs *r, int rank, uint64_t b, uint64_t e)
{
	int peer = rank == 1 ? 3 : 1;
	begin(r, b, S_SENDRECV);
	arg(r, K_COMM, 0);
	arg(r, K_SIZE, 4);
	rec(r, 0x4000000000000000ull | (uint64_t)(rank * 16 + peer), 0, WEFT_R_FLOW_OUT);
	end(r, e, S_SENDRECV);
	arg(r, K_PEER, peer);
	arg(r, K_TAG, 9);
	arg(r, K_BYTES, 500);
	rec(r, 0x4000000000000000ull | (uint64_t)(peer * 16 + rank), 0, WEFT_R_FLOW_IN);
}

static void write_file(const char *dir, const char *name, const struct tb *b)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(b->p, 1, b->n, f) != b->n || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static void process(const char *dir, int pid, const char *name, const char *host, int rank, int mpi,
		    const struct recs *r)
{
	struct tb meta = {0}, ev = {0};
	tb_header(&meta, WEFT_META_MAGIC, 1, pid);
	unsigned char pr[128] = {0};
	uint32_t ids[2] = {(uint32_t)pid, 1};
	uint64_t start = 900000;
	memcpy(pr, ids, 8);
	memcpy(pr + 8, &start, 8);
	size_t hl = strlen(host), nl = strlen(name);
	memcpy(pr + 16, host, hl + 1);
	memcpy(pr + 16 + hl + 1, name, nl + 1); /* argv[0], then the empty string that ends argv */
	tb_meta(&meta, WEFT_M_PROCESS, pr, 16 + hl + 1 + nl + 2);
	tb_meta(&meta, WEFT_M_PROCESS_NAME, name, nl + 1);
	tb_clock_kind(&meta, 0);
	tb_clock(&meta, 1000000, 1000000);
	unsigned char th[64] = {0};
	uint32_t tid = (uint32_t)pid;
	uint64_t serial = 0;
	memcpy(th, &tid, 4);
	memcpy(th + 4, name, nl + 1);
	memcpy(th + 4 + nl + 1, &serial, 8);
	tb_meta(&meta, WEFT_M_THREAD, th, 4 + nl + 1 + 8);
	if (rank >= 0) {
		unsigned char job[64] = {0};
		uint32_t jr[4] = {(uint32_t)rank, (uint32_t)nranks, (uint32_t)rank % 2, 2};
		memcpy(job, jr, 16);
		memcpy(job + 16, "42.0\0mpirun", 12);
		tb_meta(&meta, WEFT_M_JOB, job, 16 + 12);
	}
	site(&meta, S_MAIN, WEFT_KIND_EVENT, "main", "");
	if (mpi) {
		static const char *const fns[] = {"MPI_Send", "MPI_Recv", "MPI_Barrier", "MPI_Bcast", "MPI_Get_count",
						  "MPI_Sendrecv"};
		for (int i = 0; i < 6; i++)
			site(&meta, S_SEND + (uint32_t)i, WEFT_KIND_EVENT, fns[i], "mpi");
		static const char *const keys[] = {"mpi.peer", "mpi.tag", "mpi.bytes", "mpi.comm", "mpi.comm_size",
						   "mpi.seq", "mpi.root"};
		for (int i = 0; i < 7; i++)
			site(&meta, K_PEER + (uint32_t)i, WEFT_KIND_ARG, keys[i], "");
		site(&meta, S_IRECV, WEFT_KIND_EVENT, "MPI_Irecv", "mpi");
		site(&meta, S_WAIT, WEFT_KIND_EVENT, "MPI_Wait", "mpi");
	}
	tb_header(&ev, WEFT_EVENTS_MAGIC, 1, pid);
	tb_chunk(&ev, tid, 0, r->w, r->n, 1);
	char nm[64];
	snprintf(nm, sizeof(nm), "%d.wmeta", pid);
	write_file(dir, nm, &meta);
	snprintf(nm, sizeof(nm), "%d-0.wevents", pid);
	write_file(dir, nm, &ev);
	free(meta.p);
	free(ev.p);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: mpi_job_trace DIR [unranked|heavy|nompi|wide|wider|irecv]\n");
		return 2;
	}
	const char *v = argc == 3 ? argv[2] : "";
	if (!strcmp(v, "wide") || !strcmp(v, "wider")) {
		nranks = v[4] ? 100 : 20;
		for (int k = 0; k < nranks; k++) {
			struct recs w;
			memset(&w, 0, sizeof(w));
			begin(&w, 1000000, S_MAIN);
			send(&w, k, 2000000, 2010000, 100 * (k + 1));
			end(&w, 3200000, S_MAIN);
			process(argv[1], 300 + k, "solver", "nodeA", k, 1, &w);
		}
		return 0;
	}
	int ranked = strcmp(v, "unranked") != 0, mpi = strcmp(v, "nompi") != 0;
	irecv = !strcmp(v, "irecv");
	int64_t b0 = !strcmp(v, "heavy") ? 100000 : 1000;
	static const uint64_t bar_b[4] = {2500000, 2600000, 2700000, 3000000};
	struct recs r[4];
	for (int k = 0; k < 4; k++) {
		memset(&r[k], 0, sizeof(r[k]));
		begin(&r[k], 1000000, S_MAIN);
		if (!mpi) {
			end(&r[k], 3200000, S_MAIN);
			continue;
		}
		int64_t bytes = k ? 1000 * (k + 1) : b0, from = k == 1 ? b0 : 1000 * ((k + 3) % 4 + 1);
		switch (k) {
		case 0:
			send(&r[k], 0, 2000000, 2010000, bytes);
			recv_begin(&r[k], 0, 2010000);
			recv_end(&r[k], 0, 2400000, from);
			break;
		case 1:
			send(&r[k], 1, 2100000, 2110000, bytes);
			recv_begin(&r[k], 1, 2110000);
			recv_end(&r[k], 1, 2120000, from);
			break;
		case 2:
			recv_begin(&r[k], 2, 2050000);
			recv_end(&r[k], 2, 2210000, from);
			send(&r[k], 2, 2210000, 2220000, bytes);
			break;
		case 3:
			send(&r[k], 3, 2300000, 2310000, bytes);
			recv_begin(&r[k], 3, 2310000);
			begin(&r[k], 2315000, S_GETCOUNT);
			end(&r[k], 2316000, S_GETCOUNT);
			recv_end(&r[k], 3, 2320000, from);
			break;
		}
		coll(&r[k], S_BARRIER, bar_b[k], 3000010 + 10 * (uint64_t)k, 0, 4, 1, -1);
		if (k == 0)
			coll(&r[k], S_BCAST, 3100000, 3150000, 77, 2, 1, 64);
		if (k == 1)
			coll(&r[k], S_BCAST, 3120000, 3150000, 77, 2, 1, 64);
		if (k == 1)
			sendrecv(&r[k], 1, 3160000, 3180000);
		if (k == 3)
			sendrecv(&r[k], 3, 3170000, 3190000);
		end(&r[k], 3200000, S_MAIN);
	}
	static const int pid_of_rank[4] = {202, 204, 201, 203};
	for (int k = 0; k < 4; k++)
		process(argv[1], pid_of_rank[k], "solver", k < 2 ? "nodeA" : "nodeB", ranked ? k : -1, mpi, &r[k]);
	struct recs l;
	memset(&l, 0, sizeof(l));
	begin(&l, 950000, S_MAIN);
	end(&l, 3300000, S_MAIN);
	process(argv[1], 200, "mpirun", "nodeA", -1, 0, &l);
	return 0;
}
