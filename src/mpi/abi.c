/*
 * abi.c - which MPI the program runs on, learnt at the first wrapped call without mpi.h:
 * Open MPI exports its predefined objects (ompi_mpi_comm_world, ...), whose addresses are its
 * handles; MPICH's handles are fixed integers (mpi.h of MPICH 4.0) and its status keeps the
 * count first. Everything else in the wrappers reads the ABI from `mpi_abi`.
 */
#include "mpi-internal.h"
#include <dlfcn.h>

/* Written once by mpi_abi_detect (the first call of the process, before any other thread can
 * have called MPI, which needs MPI_Init first); read-only after. */
struct mpi_abi mpi_abi;

void *mpi_sym(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);
	return f ? f : dlsym(RTLD_DEFAULT, name);
}

void mpi_abi_detect(void)
{
	struct mpi_abi a;
	memset(&a, 0, sizeof(a));
	void *world = dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world");
	if (world) {
		a.flavor = WEFT_MPI_OPENMPI;
		a.handle_size = 8;
		a.status_size = 24;
		a.off_source = 0, a.off_tag = 4, a.off_error = 8;
		a.any_source = -1, a.proc_null = -2, a.root = -4;
		a.err_other = 16;
		a.comm_world = (mh)world;
		a.comm_self = (mh)dlsym(RTLD_DEFAULT, "ompi_mpi_comm_self");
		a.comm_null = (mh)dlsym(RTLD_DEFAULT, "ompi_mpi_comm_null");
		a.request_null = (mh)dlsym(RTLD_DEFAULT, "ompi_request_null");
		a.message_null = (mh)dlsym(RTLD_DEFAULT, "ompi_message_null");
		a.message_no_proc = (mh)dlsym(RTLD_DEFAULT, "ompi_message_no_proc");
		a.byte = (mh)dlsym(RTLD_DEFAULT, "ompi_mpi_byte");
		a.status_ignore = 0;
		a.in_place = 1;
	} else {
		/* MPICH (and its ABI relatives); also what a program without MPI gets: its calls
		 * then find no PMPI_X and return an error */
		a.flavor = dlsym(RTLD_DEFAULT, "MPIR_Err_return_comm") ? WEFT_MPI_MPICH : WEFT_MPI_UNKNOWN;
		a.handle_size = 4;
		a.status_size = 20;
		a.off_source = 8, a.off_tag = 12, a.off_error = 16;
		a.any_source = -2, a.proc_null = -1, a.root = -3;
		a.err_other = 15;
		a.comm_world = 0x44000000, a.comm_self = 0x44000001, a.comm_null = 0x04000000;
		a.request_null = 0x2c000000, a.message_null = 0x2c000000, a.message_no_proc = 0x6c000000;
		a.byte = 0x4c00010d;
		a.status_ignore = 1;
		a.in_place = (uintptr_t)-1;
	}
	mpi_abi = a;
}
