/*
 * init.c - libweft-mpi.so's switches and its life in the program: the first wrapped call learns
 * the MPI flavor (abi.c) and whether to record (the runtime's mpi= option; no weft runtime in
 * the process: pass through); MPI_Init and MPI_Init_thread enter MPI_COMM_WORLD, measure the
 * clock offsets (clocksync.c) and write the MPI metadata record; MPI_Finalize measures them
 * again and writes the record's final counts before MPI is gone.
 */
#include "mpi-internal.h"
#include <dlfcn.h>

/* Written by the first call (mpi_setup_slow: in MPI_Init, before other threads can call MPI)
 * and by Init and Finalize; the counters by every recorded call. */
struct mpi_state mpi_st = {.world_rank = -1};
__thread int mpi_depth MPI_TLS;
__thread int mpi_rec MPI_TLS;
struct weft_site mpi_keys[K_N] = {
	WEFT__SITE_INIT(WEFT_KIND_ARG, "", "mpi.peer"),      WEFT__SITE_INIT(WEFT_KIND_ARG, "", "mpi.tag"),
	WEFT__SITE_INIT(WEFT_KIND_ARG, "", "mpi.bytes"),     WEFT__SITE_INIT(WEFT_KIND_ARG, "", "mpi.comm"),
	WEFT__SITE_INIT(WEFT_KIND_ARG, "", "mpi.comm_size"), WEFT__SITE_INIT(WEFT_KIND_ARG, "", "mpi.root"),
	WEFT__SITE_INIT(WEFT_KIND_ARG, "", "mpi.seq"),       WEFT__SITE_INIT(WEFT_KIND_ARG, "", "mpi.messages"),
};

typedef void (*meta_put_t)(unsigned, const void *, size_t, const void *, size_t);
static meta_put_t meta_put; /* the runtime's weft__meta_put; NULL without it */


void mpi_setup_slow(void)
{
	mpi_abi_detect();
	int (*option)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "weft__mpi_option");
	meta_put = (meta_put_t)dlsym(RTLD_DEFAULT, "weft__meta_put");
	mpi_st.on = option && meta_put && option();
	if (mpi_st.on)
		for (unsigned i = 0; i < K_N; i++)
			weft__on(&mpi_keys[i]); /* registers the key */
	mpi_st.ready = 1;
}

void mpi_write_record(void)
{
	if (!meta_put)
		return;
	struct {
		uint32_t rank, size, flavor, flags;
		uint64_t calls, sent, received, undrawn;
	} r = {mpi_st.world_rank < 0 ? WEFT_RANK_NONE : (uint32_t)mpi_st.world_rank,
	       (uint32_t)mpi_st.world_size, (uint32_t)mpi_abi.flavor,
	       (mpi_st.fortran ? WEFT_MPI_F_FORTRAN : 0) | (mpi_st.on ? 0 : WEFT_MPI_F_OFF),
	       mpi_st.calls, mpi_st.sent, mpi_st.received, mpi_st.undrawn};
	static char version[8192]; /* MPICH's MPI_MAX_LIBRARY_VERSION_STRING; Open MPI's is 256 */
	int len = 0;
	int (*getver)(char *, int *) = (int (*)(char *, int *))mpi_sym("PMPI_Get_library_version");
	version[0] = 0;
	if (getver && !getver(version, &len) && len > 0 && len < (int)sizeof(version))
		version[len] = 0;
	version[sizeof(version) - 1] = 0;
	char *nl = strchr(version, '\n');
	if (nl)
		*nl = 0;
	meta_put(WEFT_M_MPI, &r, sizeof(r), version, strlen(version) + 1);
}

int mpi_runtime(void)
{
	return meta_put != NULL;
}

void mpi_meta_put(unsigned type, const void *a, size_t alen, const void *b, size_t blen)
{
	if (meta_put)
		meta_put(type, a, alen, b, blen);
}

/* weft's own time, not the program's: a clock sync phase in its own slice (clocksync.c) */
static struct weft_site site_sync = WEFT__SITE_INIT(WEFT_KIND_EVENT, "weft", "weft: clock sync");

void mpi_sync_phase(int phase)
{
	int rec = weft__on_n(&site_sync, 2) != 0;
	if (rec)
		weft__slice(weft__hdr(site_sync.id, WEFT_R_BEGIN, 0, 0));
	mpi_depth++; /* (its PMPI calls are weft's) */
	mpi_clock_sync(phase);
	mpi_depth--;
	if (rec)
		weft__slice(weft__hdr(site_sync.id, WEFT_R_END, 0, 0));
	mpi_write_record();
}

/* after a successful Init, inside its slice: WORLD's rank and size */
void mpi_init_world(void)
{
	int (*csize)(mh, int *) = (int (*)(mh, int *))mpi_sym("PMPI_Comm_size");
	int (*crank)(mh, int *) = (int (*)(mh, int *))mpi_sym("PMPI_Comm_rank");
	int r = -1, n = 0;
	if (csize && crank && !crank(mpi_abi.comm_world, &r) && !csize(mpi_abi.comm_world, &n))
		mpi_st.world_rank = r, mpi_st.world_size = n;
	mpi_comm_init_world();
}

/* after a successful Init (its slice ended): the offsets, the record */
void mpi_after_init(void)
{
	mpi_init_world();
	mpi_sync_phase(0);
}

MPI_SITE(MPI_Init);
MPI_SITE(MPI_Init_thread);
MPI_SITE(MPI_Finalize);

EXPORT int MPI_Init(int *argc, char ***argv)
{
	REAL(int, MPI_Init, (int *, char ***));
	if (!mpi_enter(&site_MPI_Init)) {
		int rc = real_MPI_Init(argc, argv);
		if (!rc && !mpi_depth && meta_put) /* mpi=0: say so */
			mpi_after_init();
		return rc;
	}
	mpi_emit(&site_MPI_Init, WEFT_R_BEGIN, NULL, 0, 0, 0);
	int rc = real_MPI_Init(argc, argv);
	if (!rc)
		mpi_init_world();
	struct marg a[] = {{K_COMM, 0}, {K_COMM_SIZE, mpi_st.world_size}};
	mpi_emit(&site_MPI_Init, WEFT_R_END, a, rc ? 0 : 2, 0, 0);
	mpi_leave();
	if (!rc)
		mpi_sync_phase(0);
	return rc;
}

EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	REAL(int, MPI_Init_thread, (int *, char ***, int, int *));
	if (!mpi_enter(&site_MPI_Init_thread)) {
		int rc = real_MPI_Init_thread(argc, argv, required, provided);
		if (!rc && !mpi_depth && meta_put)
			mpi_after_init();
		return rc;
	}
	mpi_emit(&site_MPI_Init_thread, WEFT_R_BEGIN, NULL, 0, 0, 0);
	int rc = real_MPI_Init_thread(argc, argv, required, provided);
	if (!rc)
		mpi_init_world();
	struct marg a[] = {{K_COMM, 0}, {K_COMM_SIZE, mpi_st.world_size}};
	mpi_emit(&site_MPI_Init_thread, WEFT_R_END, a, rc ? 0 : 2, 0, 0);
	mpi_leave();
	if (!rc)
		mpi_sync_phase(0);
	return rc;
}

EXPORT int MPI_Finalize(void)
{
	REAL(int, MPI_Finalize, (void));
	int on = mpi_enter(&site_MPI_Finalize);
	if (mpi_st.world_rank >= 0 && (on || (!mpi_depth && meta_put)))
		mpi_sync_phase(1); /* before its slice */
	if (on)
		mpi_emit(&site_MPI_Finalize, WEFT_R_BEGIN, NULL, 0, 0, 0);
	int rc = real_MPI_Finalize();
	if (on) {
		mpi_emit(&site_MPI_Finalize, WEFT_R_END, NULL, 0, 0, 0);
		mpi_leave();
	}
	return rc;
}
