/*
 * clocksync.c - each process's clock offset to world rank 0's, measured over MPI at the end
 * of MPI_Init (phase 0) and again before MPI_Finalize (phase 1), as Score-P does: rank 0 plays
 * ROUNDS ping-pongs with each other rank in turn (more, up to MAX_ROUNDS, while none was
 * shorter than GOOD_RTT_NS: on an oversubscribed node every one of ten can be preempted for
 * ms; a ping of 0 ends them), the other rank reading its CLOCK_BOOTTIME
 * (the trace's clock) when the ping arrives; the round trip with the smallest time bounds the
 * error best, and the middle of it on rank 0's clock is taken to be the moment the other rank
 * read its own. Rank 0 then sends each rank its offset (rank 0's BOOTTIME minus its own at that
 * moment), the round trip and its host; every rank writes its own WEFT_M_CLOCK_SYNC record (rank 0
 * with offset 0). The exchange runs on a private duplicate of MPI_COMM_WORLD made at MPI_Init,
 * so it can never match the program's messages, through PMPI calls that are not recorded.
 *
 * It is weft's time, not the program's: each phase is its own slice, `weft: clock sync`
 * (category weft), after MPI_Init's END and before MPI_Finalize's BEGIN (init.c), and ends in a
 * barrier on the private communicator, so that every rank leaves it together: a rank synced
 * early waits there, not in the program's first collective. Its cost is bounded: past ROUNDS,
 * more round trips with a peer only while the exchange with it took under EXTRA_NS; and a rank
 * waiting its turn (its first ping) or in the barrier polls a nonblocking request and sleeps
 * between polls once SPIN_NS passed, instead of the MPI library's busy wait: on an
 * oversubscribed node the ranks waiting their turn took the CPU from the two playing (MPICH,
 * 4 ranks on 2 cores: 150 ms a phase). Within a turn both sides poll without sleeping: a nap
 * there lengthens the round trips the offset is measured by (under load, a wake-up comes
 * milliseconds late). What a phase took on each process is in its record
 * (weft info prints it).
 */
#include "mpi-internal.h"
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 10
#define MAX_ROUNDS 100
#define GOOD_RTT_NS 200000 /* bounds the offset's error by 100 us */
#define EXTRA_NS 100000000 /* more rounds with a peer only within 100 ms of its first */
#define SPIN_NS 50000      /* a wait polls this long, then sleeps between polls */
#define NAP_NS 50000
#define SAY_NS 10000000000ull /* the duplication waits this long: say why it may be waiting */
#define TAG 0x5746 /* "WF"; + phase: a late message never matches the other phase */

static mh priv; /* the private communicator; written at phase 0, freed after phase 1 */
static int have_priv;

static uint64_t boot_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef int (*irecv_t)(void *, int, mh, int, int, mh, void *);
typedef int (*ibarrier_t)(mh, void *);
typedef int (*test_t)(void *, int *, void *);

/* What a rank says when the private communicator's duplication (every rank of the job takes
 * part) has not completed after SAY_NS: some ranks may never come (started without weft). */
static void say_waiting(void)
{
	char line[512];
	int n = snprintf(line, sizeof(line),
			 "weft: rank %d (pid %d): waiting %d s in weft's clock sync at MPI_Init for the job's other "
			 "ranks: a rank started without weft (an MPMD part) never joins it; give the traced ranks "
			 "--options mpi_sync=0 (WEFT_OPTIONS=mpi_sync=0)\n",
			 mpi_st.world_rank, (int)getpid(), (int)(SAY_NS / 1000000000ull));
	if (n > 0) {
		ssize_t w = write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
		(void)w;
	}
}

/* Waits for request *req (its handle in a word: MPICH writes 4 bytes of it); with `nap`
 * without keeping a CPU busy past SPIN_NS; with `say`, say_waiting() once past SAY_NS. */
static int patient(test_t test, uintptr_t *req, int nap, int say)
{
	uint64_t t0 = boot_ns();
	for (;;) {
		int flag = 0;
		if (test(req, &flag, (void *)mpi_abi.status_ignore))
			return -1;
		if (flag)
			return 0;
		if (say && boot_ns() - t0 > SAY_NS) {
			say_waiting();
			say = 0;
		}
		if (nap && boot_ns() - t0 > SPIN_NS) {
			struct timespec ts = {0, NAP_NS};
			nanosleep(&ts, NULL);
		}
	}
}

struct result {
	int64_t offset;
	uint64_t at; /* on the receiving rank's clock */
	uint64_t rtt;
	uint32_t rounds;
	char host[64];
};

void mpi_clock_sync(int phase)
{
	typedef int (*send_t)(const void *, int, mh, int, int, mh);
	typedef int (*recv_t)(void *, int, mh, int, int, mh, void *);
	typedef int (*dup_t)(mh, void *);
	typedef int (*free_t)(void *);
	typedef int (*barrier_t)(mh);
	barrier_t bar = (barrier_t)mpi_sym("PMPI_Barrier");
	irecv_t irecv = (irecv_t)mpi_sym("PMPI_Irecv");
	ibarrier_t ibar = (ibarrier_t)mpi_sym("PMPI_Ibarrier");
	test_t test = (test_t)mpi_sym("PMPI_Test");
	uint64_t began = boot_ns();
	send_t snd = (send_t)mpi_sym("PMPI_Send");
	recv_t rcv = (recv_t)mpi_sym("PMPI_Recv");
	dup_t dup = (dup_t)mpi_sym("PMPI_Comm_dup");
	free_t cfree = (free_t)mpi_sym("PMPI_Comm_free");
	typedef int (*idup_t)(mh, void *, void *);
	idup_t idup = (idup_t)mpi_sym("PMPI_Comm_idup");
	int (*sync_option)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "weft__mpi_sync_option");
	/* Every rank of the job must take part, or the collective dup below waits for the missing
	 * ones: so the measurement runs wherever the weft runtime is (mpi=0 too); in a job whose
	 * ranks do not all run under weft, mpi_sync=0 leaves it out (said after SAY_NS of waiting:
	 * docs/mpi.md) */
	if (!mpi_runtime() || !snd || !rcv || !dup || !cfree || mpi_st.world_size < 1 || mpi_st.world_rank < 0 ||
	    (sync_option && !sync_option()))
		return;
	if (phase == 0) {
		uintptr_t h = 0, req = 0;
		if (idup && test && !idup(mpi_abi.comm_world, &h, &req)) {
			if (patient(test, &req, 1, 1))
				return;
		} else if (dup(mpi_abi.comm_world, &h))
			return;
		priv = mh_load(&h, 0);
		have_priv = 1;
	}
	if (!have_priv)
		return;
	void *ign = (void *)mpi_abi.status_ignore;
	/* a receive from rank `src` on the private communicator: polled and patient where the
	 * library has Irecv and Test, else its own (busy) wait */
#define RECV(buf, len, src, nap)                                                                     \
	do {                                                                                         \
		uintptr_t req_ = 0;                                                                  \
		if (irecv && test && !irecv((buf), (len), mpi_abi.byte, (src), tag, priv, &req_))    \
			patient(test, &req_, (nap), 0);                                                 \
		else                                                                                 \
			rcv((buf), (len), mpi_abi.byte, (src), tag, priv, ign);                      \
	} while (0)
	int me = mpi_st.world_rank, n = mpi_st.world_size, tag = TAG + phase;
	struct result res = {0};
	gethostname(res.host, sizeof(res.host) - 1);
	if (me == 0) {
		char host[64] = {0};
		memcpy(host, res.host, sizeof(host));
		for (int r = 1; r < n; r++) {
			struct result best = {.rtt = UINT64_MAX};
			int i;
			uint64_t first = boot_ns();
			for (i = 0; i < ROUNDS || (best.rtt > GOOD_RTT_NS && i < MAX_ROUNDS && boot_ns() - first < EXTRA_NS);
			     i++) {
				uint64_t t0 = boot_ns(), tr = 0;
				snd(&t0, 8, mpi_abi.byte, r, tag, priv);
				RECV(&tr, 8, r, 0);
				uint64_t t1 = boot_ns();
				if (t1 - t0 < best.rtt) {
					best.rtt = t1 - t0;
					best.at = tr;
					best.offset = (int64_t)(t0 + (t1 - t0) / 2) - (int64_t)tr;
				}
			}
			uint64_t stop = 0;
			snd(&stop, 8, mpi_abi.byte, r, tag, priv);
			best.rounds = (uint32_t)i;
			memcpy(best.host, host, sizeof(best.host));
			snd(&best, (int)sizeof(best), mpi_abi.byte, r, tag, priv);
		}
		res.offset = 0, res.at = boot_ns(), res.rtt = 0, res.rounds = 0;
	} else {
		for (int first = 1;; first = 0) {
			uint64_t t0 = 0;
			RECV(&t0, 8, 0, first); /* the first: its turn may be long in coming */
			uint64_t tr = boot_ns();
			if (!t0)
				break;
			snd(&tr, 8, mpi_abi.byte, 0, tag, priv);
		}
		RECV(&res, (int)sizeof(res), 0, 0);
	}
	res.host[sizeof(res.host) - 1] = 0;
	uintptr_t breq = 0; /* every rank leaves together (see above) */
	if (ibar && test && !ibar(priv, &breq))
		patient(test, &breq, 1, 0);
	else if (bar)
		bar(priv);
	uint64_t took = (boot_ns() - began) / 1000;
	struct {
		uint32_t phase, ref;
		int64_t offset;
		uint64_t at, rtt;
		uint32_t rounds, took_us;
	} rec = {(uint32_t)phase, 0, res.offset, res.at, res.rtt, res.rounds, took > UINT32_MAX ? UINT32_MAX : (uint32_t)took};
	mpi_meta_put(WEFT_M_CLOCK_SYNC, &rec, sizeof(rec), res.host, strlen(res.host) + 1);
	if (phase == 1) {
		uintptr_t h = priv;
		if (mpi_abi.handle_size == 4) {
			uint32_t h32 = (uint32_t)priv;
			cfree(&h32);
		} else {
			cfree(&h);
		}
		have_priv = 0;
	}
}
