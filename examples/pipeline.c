/*
 * pipeline - the bundled example: an event-processing framework in miniature. S streams each
 * push E events through three modules (unpack -> reconstruct -> write). Every module step is
 * a task on a shared pool of W worker threads, so one stream's modules hop between threads.
 * It exercises what weft records: named tracks (one per stream, a lane per worker under it),
 * nested slices with arguments, counters, a rate, async slices (an event's life from submit
 * to write, begun and ended on different threads), flows (arrows from each module to the
 * next), instants, categories and a complete slice with given times.
 *
 * usage: pipeline [STREAMS [EVENTS [WORKERS]]]   (defaults 3 40 2)
 */
#include <weft.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODULES 3 /* unpack, reconstruct, write */

struct task {
	int stream, event, module;
	struct task *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct task *head, *tail;
static int queued, remaining, nstreams, nevents;
static unsigned tracks[64];

static void push(struct task *t) /* under lock */
{
	t->next = NULL;
	if (tail)
		tail->next = t;
	else
		head = t;
	tail = t;
	queued++;
	WEFT_COUNTER("queue depth", queued);
	pthread_cond_signal(&cond);
}

static double burn(int n)
{
	volatile double x = 1.0;
	for (int i = 0; i < n; i++)
		x = x * 1.000001 + 0.5;
	return x;
}

static uint64_t flow_id(int stream, int event, int module)
{
	return ((uint64_t)stream << 40) | ((uint64_t)event << 8) | (uint64_t)module;
}

static void run_module(struct task *t)
{
	unsigned tr = tracks[t->stream];
	uint64_t aid = ((uint64_t)t->stream << 32) | (uint64_t)t->event;
	switch (t->module) {
	case 0: {
		WEFT_SCOPE_ON(tr, "unpack", WEFT_I("event", t->event), WEFT_S("stream", "raw"));
		weft_flow_out(flow_id(t->stream, t->event, t->module + 1));
		{
			WEFT_SCOPE_ON(tr, "decode", WEFT_U("bytes", 4096));
			burn(20000);
		}
		break;
	}
	case 1: {
		WEFT_SCOPE_ON(tr, "reconstruct", WEFT_I("event", t->event), WEFT_D("quality", 0.5 + t->event % 5 * 0.1));
		weft_flow_in(flow_id(t->stream, t->event, t->module));
		weft_flow_out(flow_id(t->stream, t->event, t->module + 1));
		for (int k = 0; k < 2; k++) {
			WEFT_SCOPE_ON(tr, "fit", WEFT_I("iteration", k));
			burn(15000);
		}
		break;
	}
	default: {
		WEFT_SCOPE_ON(tr, "write", WEFT_I("event", t->event), WEFT_B("compressed", t->event % 2));
		weft_flow_in(flow_id(t->stream, t->event, t->module));
		burn(10000);
		WEFT_ASYNC_END("event in flight", aid);
		break;
	}
	}
	WEFT_RATE("module steps/s", 1);
}

static void *worker(void *arg)
{
	char name[32];
	snprintf(name, sizeof(name), "worker %d", (int)(long)arg);
	weft_thread_name(name);
	for (;;) {
		pthread_mutex_lock(&lock);
		while (!head && remaining > 0)
			pthread_cond_wait(&cond, &lock);
		if (!head) {
			pthread_mutex_unlock(&lock);
			break;
		}
		struct task *t = head;
		head = t->next;
		if (!head)
			tail = NULL;
		queued--;
		WEFT_COUNTER("queue depth", queued);
		pthread_mutex_unlock(&lock);

		run_module(t);

		pthread_mutex_lock(&lock);
		if (++t->module < MODULES) {
			push(t); /* the next module of this stream may run on any worker */
		} else {
			free(t);
			if (--remaining == 0)
				pthread_cond_broadcast(&cond);
		}
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static void setup(void)
{
	WEFT_FUNC();
	uint64_t t0 = weft_now_ns();
	for (int s = 0; s < nstreams; s++) {
		char name[32];
		snprintf(name, sizeof(name), "stream %d", s);
		tracks[s] = weft_track(name);
	}
	burn(50000);
	WEFT_COMPLETE("load geometry", t0, weft_now_ns());
	WEFT_INSTANT_C("framework", "configured", WEFT_I("streams", nstreams), WEFT_I("events", nevents));
}

int main(int argc, char **argv)
{
	nstreams = argc > 1 ? atoi(argv[1]) : 3;
	nevents = argc > 2 ? atoi(argv[2]) : 40;
	int nworkers = argc > 3 ? atoi(argv[3]) : 2;
	if (nstreams < 1 || nstreams > 64 || nevents < 1 || nworkers < 1 || nworkers > 64) {
		fprintf(stderr, "usage: pipeline [STREAMS(1-64) [EVENTS [WORKERS(1-64)]]]\n");
		return 2;
	}
	weft_process_name("pipeline");
	weft_thread_name("main");
	WEFT_SCOPE("main");
	setup();
	pthread_t th[64];
	remaining = nstreams * nevents;
	for (int w = 0; w < nworkers; w++)
		pthread_create(&th[w], NULL, worker, (void *)(long)w);
	{
		WEFT_SCOPE("submit");
		for (int e = 0; e < nevents; e++)
			for (int s = 0; s < nstreams; s++) {
				struct task *t = calloc(1, sizeof(*t));
				t->stream = s;
				t->event = e;
				WEFT_ASYNC_BEGIN("event in flight", ((uint64_t)s << 32) | (uint64_t)e);
				pthread_mutex_lock(&lock);
				push(t);
				pthread_mutex_unlock(&lock);
			}
	}
	{
		WEFT_SCOPE_C("framework", "join");
		for (int w = 0; w < nworkers; w++)
			pthread_join(th[w], NULL);
	}
	WEFT_COUNTER_F_UNIT("work done", "count", (double)nstreams * nevents);
	return 0;
}
