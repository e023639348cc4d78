// guard.c: the copy into DuckDB's vectors survives a file mapping that
// fails under it. A local chunk is read from a mapping of its file
// (scanner/mmap.go); if another process truncates the file during the
// scan, reading the lost pages raises SIGBUS, here in C on one of DuckDB's
// threads, where Go cannot turn it into a panic. rs_fill_guarded runs the
// copy with a jump point; a SIGBUS handler, installed in front of the one
// before it (Go's), jumps back to it when the fault happened inside a
// guarded copy on this thread and forwards every other SIGBUS unchanged.
// The mapping's bytes may also change under the copy: the string kernel
// checks every offset and calls rs_bad_bytes when one does not fit.
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "rs.h"

typedef struct rs_guard {
	sigjmp_buf jump;
	volatile int why;       // RS_GUARD_FAULT or RS_GUARD_BAD_BYTES
	char *volatile scratch; // rs_scratch's buffer, freed when the guard ends
	volatile size_t cap;
} rs_guard;

// current is this thread's active guard. initial-exec: a signal handler
// must not reach it through __tls_get_addr, which may allocate.
static __thread rs_guard *volatile current __attribute__((tls_model("initial-exec")));

static struct sigaction previous; // the handler ours forwards to
static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static void on_sigbus(int sig, siginfo_t *info, void *ctx) {
	rs_guard *g = current;
	if (g != NULL) {
		current = NULL;
		g->why = RS_GUARD_FAULT;
		// The kernel blocked every signal for this handler; the jump
		// does not restore the mask (sigsetjmp(…, 0) saves none, for a
		// cheap guard), so restore the interrupted code's mask here.
		pthread_sigmask(SIG_SETMASK, &((ucontext_t *)ctx)->uc_sigmask, NULL);
		siglongjmp(g->jump, 1);
	}
	// Not ours: what would have happened without us.
	if (previous.sa_flags & SA_SIGINFO) {
		previous.sa_sigaction(sig, info, ctx);
		return;
	}
	if (previous.sa_handler == SIG_DFL || previous.sa_handler == SIG_IGN) {
		// Back to the default action; the faulting instruction runs
		// again on return and the process ends as it would have.
		signal(sig, SIG_DFL);
		return;
	}
	previous.sa_handler(sig);
}

static void install(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART; // Go's signal stack where there is one, as Go requires
	sigfillset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &previous);
}

void rs_guard_install(void) { pthread_once(&install_once, install); }

void rs_bad_bytes(void) {
	rs_guard *g = current;
	if (g != NULL) {
		current = NULL;
		g->why = RS_GUARD_BAD_BYTES;
		siglongjmp(g->jump, 1);
	}
}

char *rs_scratch(size_t n) {
	rs_guard *g = current;
	if (g == NULL) {
		return NULL;
	}
	if (g->cap < n) {
		char *p = realloc(g->scratch, n);
		if (p == NULL) {
			return NULL;
		}
		g->scratch = p;
		g->cap = n;
	}
	return g->scratch;
}

int rs_fill_guarded(duckdb_data_chunk out, const rs_col *cols, idx_t ncols, int64_t start, idx_t nrows) {
	rs_guard g;
	g.why = 0;
	g.scratch = NULL;
	g.cap = 0;
	if (sigsetjmp(g.jump, 0) == 0) {
		current = &g;
		rs_fill(out, cols, ncols, start, nrows);
		current = NULL;
	}
	free(g.scratch);
	return g.why;
}

uint64_t rs_guarded_sum(const uint8_t *p, size_t n, int *why) {
	rs_guard g;
	g.why = 0;
	g.scratch = NULL;
	g.cap = 0;
	volatile uint64_t sum = 0;
	if (sigsetjmp(g.jump, 0) == 0) {
		current = &g;
		for (size_t i = 0; i < n; i += 512) {
			sum += p[i];
		}
		current = NULL;
	}
	*why = g.why;
	return sum;
}
