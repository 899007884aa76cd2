/* The launcher's environment read as a job (src/lib/job.c): each launcher's variables, the
 * order they are tried in, Slurm's tasks-per-node list, and a host as a file-name part. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include "lib/job.h"
#include "format/format.h"

static const char *const *vars; /* NAME=VALUE, NULL-terminated: the environment of one case */
static const char *get(const char *name)
{
	for (const char *const *v = vars; *v; v++)
		if (!strncmp(*v, name, strlen(name)) && (*v)[strlen(name)] == '=')
			return *v + strlen(name) + 1;
	return NULL;
}

static void detect(struct weft_job *j, const char *const *env)
{
	vars = env;
	weft_job_detect(j, get);
}

static void test_openmpi(void **state)
{
	(void)state;
	static const char *const env[] = {"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=8",
					  "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=4",
					  "OMPI_MCA_ess_base_jobid=1929445377", "PMIX_RANK=3", "SLURM_PROCID=0",
					  "SLURM_STEP_ID=0", NULL};
	struct weft_job j;
	detect(&j, env);
	assert_int_equal(j.known, 1);
	assert_int_equal(j.rank, 3);
	assert_int_equal(j.size, 8);
	assert_int_equal(j.local_rank, 1);
	assert_int_equal(j.local_size, 4);
	assert_string_equal(j.id, "1929445377");
	assert_string_equal(j.launcher, "openmpi");
}

static void test_hydra_before_slurm(void **state)
{
	(void)state; /* mpiexec.hydra inside a Slurm allocation: hydra's variables win */
	static const char *const env[] = {"PMI_RANK=2", "PMI_SIZE=4", "MPI_LOCALRANKID=2", "MPI_LOCALNRANKS=4",
					  "SLURM_PROCID=0", "SLURM_STEP_ID=1", "SLURM_JOB_ID=9", NULL};
	struct weft_job j;
	detect(&j, env);
	assert_string_equal(j.launcher, "hydra");
	assert_int_equal(j.rank, 2);
	assert_int_equal(j.local_size, 4);
	assert_true(!strncmp(j.id, "hydra.", 6));
}

static void test_slurm(void **state)
{
	(void)state;
	static const char *const env[] = {"SLURM_PROCID=5", "SLURM_STEP_NUM_TASKS=7", "SLURM_NTASKS=99",
					  "SLURM_LOCALID=0", "SLURM_NODEID=2", "SLURM_STEP_TASKS_PER_NODE=3,2(x2),1",
					  "SLURM_JOB_ID=41", "SLURM_STEP_ID=2", "PMI_RANK=5", "PMI_JOBID=41.2", NULL};
	struct weft_job j;
	detect(&j, env);
	assert_string_equal(j.launcher, "slurm");
	assert_int_equal(j.rank, 5);
	assert_int_equal(j.size, 7);
	assert_int_equal(j.local_rank, 0);
	assert_int_equal(j.local_size, 2); /* node 2: the second of "2(x2)" */
	assert_string_equal(j.id, "41.2");
	static const char *const env2[] = {"SLURM_PROCID=0", "SLURM_STEP_ID=0", "SLURM_JOB_ID=1", "SLURM_NODEID=3",
					   "SLURM_STEP_TASKS_PER_NODE=3,2(x2)", "SLURM_NTASKS=7", NULL};
	detect(&j, env2);
	assert_int_equal(j.size, 7);
	assert_int_equal(j.local_size, 0); /* past the list: unknown */
}

static void test_pmix_pmi_override_none(void **state)
{
	(void)state;
	static const char *const pmix[] = {"PMIX_RANK=1", "PMIX_NAMESPACE=ns.4", "WEFT_JOB_ID=given", NULL};
	struct weft_job j;
	detect(&j, pmix);
	assert_string_equal(j.launcher, "pmix");
	assert_int_equal(j.rank, 1);
	assert_int_equal(j.size, 0);
	assert_int_equal(j.local_rank, WEFT_RANK_NONE);
	assert_string_equal(j.id, "given");
	static const char *const pmi[] = {"PMI_RANK=0", "PMI_SIZE=2", "PMI_JOBID=3.0", NULL};
	detect(&j, pmi);
	assert_string_equal(j.launcher, "pmi");
	assert_string_equal(j.id, "3.0");
	static const char *const none[] = {"SLURM_PROCID=0", "SLURM_JOB_ID=4", "OMPI_COMM_WORLD_RANK=x", NULL};
	assert_int_equal(weft_job_detect(&j, (vars = none, get)), 0); /* a batch step, a bad number */
	assert_int_equal(j.known, 0);
}

static void test_host_part(void **state)
{
	(void)state;
	char out[16];
	weft_job_host_part("node-1.cluster", out, sizeof(out));
	assert_string_equal(out, "node-1.cluster");
	weft_job_host_part("a/b c", out, sizeof(out));
	assert_string_equal(out, "a_b_c");
	weft_job_host_part("", out, sizeof(out));
	assert_string_equal(out, "_");
	weft_job_host_part("averyveryverylonghostname", out, sizeof(out));
	assert_int_equal(strlen(out), 15);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openmpi), cmocka_unit_test(test_hydra_before_slurm), cmocka_unit_test(test_slurm),
		cmocka_unit_test(test_pmix_pmi_override_none), cmocka_unit_test(test_host_part),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
