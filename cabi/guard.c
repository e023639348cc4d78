// guard.c: the copy into DuckDB's vectors survives a file mapping that
// fails under it. A local chunk is read from a mapping of its file
// (scanner/mmap.go); if another process truncates the file during the
// scan, reading the lost pages raises SIGBUS, here in C on one of DuckDB's
// threads, where Go cannot turn it into a panic. rs_fill_guarded runs the
// copy with a jump point; a SIGBUS handler, installed in front of the one
// before it (Go's), jumps back to it when the fault is a read past the end
// of a file, inside a guarded copy on this thread, at an address of one of
// the mapped buffers that copy reads; it forwards every other SIGBUS
// unchanged. The jump must never leave DuckDB's own frames half done, so no
// byte of a mapping is passed to a DuckDB function: the kernels copy long
// strings into scratch memory first (assign_mapped).
// The mapping's bytes may also change under the copy: the string kernel
// checks every offset and calls rs_bad_bytes when one does not fit. The same
// jump ends a copy that meets a value its DuckDB type cannot hold
// (rs_out_of_range).
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "copy.h"

typedef struct rs_guard {
	sigjmp_buf jump;
	rs_fault fault;         // why it ended early; volatile through the pointer below
	volatile idx_t column;  // the output column being copied
	const rs_range *mapped; // the mapped buffers the copy reads
	size_t nmapped;
	char *volatile scratch; // rs_scratch's buffer, freed when the guard ends
	volatile size_t cap;
} rs_guard;

// current is this thread's active guard. initial-exec: a signal handler
// must not reach it through __tls_get_addr, which may allocate.
static __thread rs_guard *volatile current __attribute__((tls_model("initial-exec")));

static struct sigaction previous; // the handler ours forwards to
static pthread_once_t install_once = PTHREAD_ONCE_INIT;

// ours reports whether a SIGBUS is the guard's to catch: a read past the end
// of a file (BUS_ADRERR; not a hardware error or a misaligned access) at an
// address of one of the mapped buffers the copy reads. Anything else, even on
// a guarded thread, is not a truncated chunk: jumping out of it could leave
// DuckDB's own frames half done.
static int ours(const rs_guard *g, const siginfo_t *info) {
	if (info->si_code != BUS_ADRERR) {
		return 0;
	}
	const uint8_t *a = (const uint8_t *)info->si_addr;
	for (size_t i = 0; i < g->nmapped; i++) {
		if (a >= g->mapped[i].p && a < g->mapped[i].p + g->mapped[i].n) {
			return 1;
		}
	}
	return 0;
}

// jump ends the guarded copy of this thread with why.
static void jump(rs_guard *g, int why) {
	current = NULL;
	g->fault.why = why;
	g->fault.column = g->column;
	siglongjmp(g->jump, 1);
}

static void on_sigbus(int sig, siginfo_t *info, void *ctx) {
	rs_guard *g = current;
	if (g != NULL && ours(g, info)) {
		// The kernel blocked every signal for this handler; the jump
		// does not restore the mask (sigsetjmp(…, 0) saves none, for a
		// cheap guard), so restore the interrupted code's mask here.
		pthread_sigmask(SIG_SETMASK, &((ucontext_t *)ctx)->uc_sigmask, NULL);
		jump(g, RS_GUARD_FAULT);
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

void rs_guard_column(idx_t column) {
	rs_guard *g = current;
	if (g != NULL) {
		g->column = column;
	}
}

void rs_bad_bytes(void) {
	rs_guard *g = current;
	if (g != NULL) {
		jump(g, RS_GUARD_BAD_BYTES);
	}
}

void rs_out_of_range(int64_t value, bool has_value) {
	rs_guard *g = current;
	if (g != NULL) {
		g->fault.value = value;
		g->fault.has_value = has_value;
		jump(g, RS_GUARD_RANGE);
	}
}

void rs_no_memory(size_t n) {
	rs_guard *g = current;
	if (g != NULL) {
		g->fault.value = (int64_t)n;
		g->fault.has_value = 1;
		jump(g, RS_GUARD_NO_MEMORY);
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

static void guard_init(rs_guard *g, const rs_range *mapped, size_t nmapped) {
	memset(&g->fault, 0, sizeof g->fault);
	g->column = 0;
	g->mapped = mapped;
	g->nmapped = nmapped;
	g->scratch = NULL;
	g->cap = 0;
}

void rs_fill_guarded(duckdb_data_chunk out, const rs_col *cols, idx_t ncols, int64_t start, idx_t nrows,
                     const rs_range *mapped, size_t nmapped, rs_fault *fault) {
	rs_guard g;
	guard_init(&g, mapped, nmapped);
	if (sigsetjmp(g.jump, 0) == 0) {
		current = &g;
		rs_fill(out, cols, ncols, start, nrows);
		current = NULL;
	}
	free(g.scratch);
	*fault = g.fault;
}

uint64_t rs_guarded_sum(const uint8_t *p, size_t n, bool own, int *why) {
	rs_guard g;
	rs_range r = {p, n};
	guard_init(&g, &r, own ? 1 : 0);
	volatile uint64_t sum = 0;
	if (sigsetjmp(g.jump, 0) == 0) {
		current = &g;
		for (size_t i = 0; i < n; i += 512) {
			sum += p[i];
		}
		current = NULL;
	}
	*why = g.fault.why;
	return sum;
}

void rs_guarded_copy_utf8(duckdb_string_t *slots, const void *offsets, int32_t width, const uint8_t *chars,
                          int64_t length, const uint8_t *validity, int64_t p, idx_t n, int *why) {
	rs_guard g;
	guard_init(&g, NULL, 0);
	rs_col col = {.kind = RS_UTF8, .width = width, .length = length, .data = chars, .offsets = offsets, .validity = validity};
	if (sigsetjmp(g.jump, 0) == 0) {
		current = &g;
		rs_copy_utf8(NULL, &col, (uint8_t *)slots, 0, p, n); // the kernel alone: the validity is DuckDB's to copy
		current = NULL;
	}
	*why = g.fault.why;
}
