/*
 * job.c - the launcher's view of this process. Every MPI launcher tells its tasks their rank
 * in environment variables before the program runs: Open MPI's mpirun OMPI_COMM_WORLD_RANK,
 * _SIZE, _LOCAL_RANK, _LOCAL_SIZE and the job in OMPI_MCA_ess_base_jobid (= PMIX_NAMESPACE);
 * MPICH's hydra PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS and no job id at all (the
 * job is then named by the mpiexec its hydra proxy answers to: hydra_id());
 * Slurm's srun SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID, SLURM_STEP_TASKS_PER_NODE
 * with SLURM_NODEID, and SLURM_JOB_ID.SLURM_STEP_ID; PMIx launchers PMIX_RANK and
 * PMIX_NAMESPACE; PMI-2 launchers PMI_RANK, PMI_SIZE, PMI_JOBID. They are tried in that order:
 * a launcher started inside another's task (mpirun in a Slurm batch step) sets its own
 * variables, which win over the inherited ones.
 */
#include "job.h"
#include "../format/format.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A non-negative decimal below 2^32 - 1, else -1. */
static long num(const char *s)
{
	if (!s || !*s)
		return -1;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (*end || errno || v < 0 || v >= (long long)WEFT_RANK_NONE)
		return -1;
	return (long)v;
}

static void set_u32(uint32_t *dst, const char *s)
{
	long v = num(s);
	if (v >= 0)
		*dst = (uint32_t)v;
}

/* SLURM_STEP_TASKS_PER_NODE "3,2(x2),1": the count of the node'th node (0-based), or -1. */
static long tasks_on_node(const char *list, long node)
{
	if (!list || node < 0)
		return -1;
	for (const char *p = list; *p;) {
		char *end;
		long n = strtol(p, &end, 10), times = 1;
		if (end == p || n < 0)
			return -1;
		if (!strncmp(end, "(x", 2)) {
			times = strtol(end + 2, &end, 10);
			if (times < 1 || *end != ')')
				return -1;
			end++;
		}
		if (node < times)
			return n;
		node -= times;
		if (*end != ',')
			return -1;
		p = end + 1;
	}
	return -1;
}

/* The job id of a hydra task: hydra names none, but every proxy of one mpiexec (one per
 * host) was given the same --control-port HOST:PORT of that mpiexec, and --pgid numbers the
 * process group of a spawn; the proxy is the nearest ancestor named hydra_pmi_proxy (a shell
 * or wrapper may stand between). Without a proxy: the host and the parent. */
static void hydra_id(char *id, size_t n)
{
	int pid = (int)getppid();
	char host[64] = "";
	gethostname(host, sizeof(host) - 1);
	snprintf(id, n, "hydra.%s.%d", host, pid);
	for (int depth = 0; depth < 8 && pid > 1; depth++) {
		char path[64], buf[4096];
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		FILE *f = fopen(path, "re");
		if (!f)
			return;
		size_t len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = 0;
		char *open = strchr(buf, '('), *close = strrchr(buf, ')');
		if (!open || !close || close < open)
			return;
		*close = 0;
		if (!strcmp(open + 1, "hydra_pmi_proxy")) { /* comm (15 bytes at most) */
			snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
			if (!(f = fopen(path, "re")))
				return;
			len = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
			buf[len] = 0;
			const char *port = NULL, *pgid = "0";
			for (size_t i = 0; i < len; i += strlen(buf + i) + 1) {
				size_t next = i + strlen(buf + i) + 1;
				if (next < len && !strcmp(buf + i, "--control-port"))
					port = buf + next;
				else if (next < len && !strcmp(buf + i, "--pgid"))
					pgid = buf + next;
			}
			if (port)
				snprintf(id, n, "hydra.%s.%s", port, pgid);
			else
				snprintf(id, n, "hydra.%s.%d", host, pid);
			return;
		}
		int ppid;
		char state;
		if (sscanf(close + 1, " %c %d", &state, &ppid) != 2)
			return;
		pid = ppid;
	}
}

int weft_job_detect(struct weft_job *j, const char *(*get)(const char *name))
{
	memset(j, 0, sizeof(*j));
	j->rank = j->local_rank = WEFT_RANK_NONE;
	const char *id = NULL;
	char idbuf[128];
	if (num(get("OMPI_COMM_WORLD_RANK")) >= 0) {
		snprintf(j->launcher, sizeof(j->launcher), "openmpi");
		set_u32(&j->rank, get("OMPI_COMM_WORLD_RANK"));
		set_u32(&j->size, get("OMPI_COMM_WORLD_SIZE"));
		set_u32(&j->local_rank, get("OMPI_COMM_WORLD_LOCAL_RANK"));
		set_u32(&j->local_size, get("OMPI_COMM_WORLD_LOCAL_SIZE"));
		id = get("OMPI_MCA_ess_base_jobid");
		if (!id || !*id)
			id = get("PMIX_NAMESPACE");
	} else if (num(get("PMI_RANK")) >= 0 && num(get("MPI_LOCALRANKID")) >= 0) {
		snprintf(j->launcher, sizeof(j->launcher), "hydra");
		set_u32(&j->rank, get("PMI_RANK"));
		set_u32(&j->size, get("PMI_SIZE"));
		set_u32(&j->local_rank, get("MPI_LOCALRANKID"));
		set_u32(&j->local_size, get("MPI_LOCALNRANKS"));
		hydra_id(idbuf, sizeof(idbuf));
		id = idbuf;
	} else if (num(get("SLURM_PROCID")) >= 0 && num(get("SLURM_STEP_ID")) >= 0) {
		snprintf(j->launcher, sizeof(j->launcher), "slurm");
		set_u32(&j->rank, get("SLURM_PROCID"));
		set_u32(&j->size, get("SLURM_STEP_NUM_TASKS"));
		if (!j->size)
			set_u32(&j->size, get("SLURM_NTASKS"));
		set_u32(&j->local_rank, get("SLURM_LOCALID"));
		long n = tasks_on_node(get("SLURM_STEP_TASKS_PER_NODE"), num(get("SLURM_NODEID")));
		if (n > 0)
			j->local_size = (uint32_t)n;
		const char *job = get("SLURM_JOB_ID"), *step = get("SLURM_STEP_ID");
		snprintf(idbuf, sizeof(idbuf), "%s.%s", job ? job : "", step);
		id = idbuf;
	} else if (num(get("PMIX_RANK")) >= 0) {
		snprintf(j->launcher, sizeof(j->launcher), "pmix");
		set_u32(&j->rank, get("PMIX_RANK"));
		id = get("PMIX_NAMESPACE");
	} else if (num(get("PMI_RANK")) >= 0) {
		snprintf(j->launcher, sizeof(j->launcher), "pmi");
		set_u32(&j->rank, get("PMI_RANK"));
		set_u32(&j->size, get("PMI_SIZE"));
		id = get("PMI_JOBID");
	} else {
		return 0;
	}
	const char *given = get("WEFT_JOB_ID");
	if (given && *given)
		id = given;
	snprintf(j->id, sizeof(j->id), "%s", id ? id : "");
	j->known = j->rank != WEFT_RANK_NONE;
	return j->known;
}

void weft_job_host_part(const char *host, char *out, size_t n)
{
	size_t o = 0;
	for (const char *p = host; *p && o + 1 < n; p++) {
		char c = *p;
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
			 c == '-';
		out[o++] = ok ? c : '_';
	}
	if (!o && n > 1)
		out[o++] = '_';
	if (n)
		out[o] = 0;
}
