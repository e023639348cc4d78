/*
 * duckdb_host: a minimal DuckDB shell over the pinned engine (DuckDB 1.5.6,
 * statically linked from the Go driver's bindings module), so SQL tests do not
 * depend on one source of DuckDB.
 *
 * It opens an in-memory database (or the file named by the only argument) with
 * allow_unsigned_extensions=true and reads a small subset of the DuckDB CLI's
 * line protocol from stdin, the subset test/sqllogictest drives both hosts with:
 *
 *   SQL lines           accumulated until a line ends a statement with ';'
 *                       (outside quotes and comments), then run
 *   .read FILE          run every statement of FILE; a file that ends in the
 *                       middle of a statement is a parser error
 *   .print ARG...       print the arguments, separated by spaces, and a newline
 *   .output ?FILE?      send output to FILE (e.g. /dev/stderr), or stdout again
 *   .separator COL ?ROW?  column and row separators (backslash escapes allowed)
 *   .nullvalue TEXT     text printed for NULL
 *   .mode list          the only mode
 *   .headers on|off     print column names before rows
 *   .version            print the DuckDB version
 *   .quit, .exit        stop
 *
 * Rows are printed in list mode: each value cast to VARCHAR, as the CLI does
 * (see "Rendering" below).
 * A failing statement prints its error message to stderr and stops the rest of
 * its input unit (the SQL text or the .read file); later input still runs.
 * Output is flushed after every command, so a reader can wait for a .print
 * marker. Exit status: 0, or 1 when any command failed (like the CLI).
 */
#include <duckdb.h>

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	duckdb_database db;
	duckdb_connection con;
	FILE *out;            /* stdout, or the file of .output */
	char *col_sep;
	char *row_sep;
	char *null_value;
	bool headers;
	int errors;
} shell;

static void *xmalloc(size_t n) {
	void *p = malloc(n);
	if (!p) {
		fputs("duckdb_host: out of memory\n", stderr);
		exit(2);
	}
	return p;
}

static char *xstrdup(const char *s) {
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}

/* report prints an error message on stderr, after flushing the output so a
 * reader that merges both streams sees them in order. */
static void report(shell *sh, const char *prefix, const char *msg) {
	fflush(sh->out);
	fflush(stdout);
	fprintf(stderr, "%s%s\n", prefix, msg ? msg : "(no message)");
	fflush(stderr);
	sh->errors++;
}

/* resolve_backslashes rewrites \t \n \r \\ \" \' and \NNN (octal) in place. */
static void resolve_backslashes(char *s) {
	char *w = s;
	for (char *r = s; *r; r++) {
		if (*r != '\\' || r[1] == '\0') {
			*w++ = *r;
			continue;
		}
		r++;
		switch (*r) {
		case 't': *w++ = '\t'; break;
		case 'n': *w++ = '\n'; break;
		case 'r': *w++ = '\r'; break;
		case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
			int v = 0, k = 0;
			while (k < 3 && *r >= '0' && *r <= '7') {
				v = v * 8 + (*r - '0');
				r++;
				k++;
			}
			r--;
			*w++ = (char)v;
			break;
		}
		default: *w++ = *r; break;
		}
	}
	*w = '\0';
}

/* split_args splits a dot-command line into at most max arguments, in place.
 * "..." arguments have backslash escapes resolved; '...' arguments are literal. */
static int split_args(char *line, char **argv, int max) {
	int argc = 0;
	char *p = line;
	while (*p && argc < max) {
		while (isspace((unsigned char)*p)) p++;
		if (!*p) break;
		if (*p == '"' || *p == '\'') {
			char q = *p++;
			argv[argc++] = p;
			while (*p && *p != q) {
				if (q == '"' && *p == '\\' && p[1]) p++;
				p++;
			}
			if (*p) *p++ = '\0';
			if (q == '"') resolve_backslashes(argv[argc - 1]);
		} else {
			argv[argc++] = p;
			while (*p && !isspace((unsigned char)*p)) p++;
			if (*p) *p++ = '\0';
		}
	}
	return argc;
}

/*
 * Rendering. The CLI prints every value cast to VARCHAR. The C API casts only
 * flat values (duckdb_value_string has no nested types, ENUM or UNION), so the
 * host lets DuckDB do the cast: the fetched chunks of a result are handed back
 * to DuckDB through the table function __duckdb_host_result(), and
 * SELECT CAST(COLUMNS(*) AS VARCHAR) FROM __duckdb_host_result() yields the
 * text of every value exactly as the engine casts it.
 */
#define RENDER_FUNCTION "__duckdb_host_result"

typedef struct {
	duckdb_result *res;      /* the result being rendered, its columns */
	duckdb_data_chunk *chunks;
	idx_t nchunks;
} render_source;

static render_source current_source; /* set around the render query only */

static void render_bind(duckdb_bind_info info) {
	render_source *src = &current_source;
	if (!src->res) {
		duckdb_bind_set_error(info, RENDER_FUNCTION " is internal to duckdb_host");
		return;
	}
	idx_t ncol = duckdb_column_count(src->res);
	for (idx_t c = 0; c < ncol; c++) {
		char name[32];
		snprintf(name, sizeof name, "c%llu", (unsigned long long)c);
		duckdb_logical_type t = duckdb_column_logical_type(src->res, c);
		duckdb_bind_add_result_column(info, name, t);
		duckdb_destroy_logical_type(&t);
	}
}

static void render_init(duckdb_init_info info) {
	idx_t *next = xmalloc(sizeof *next);
	*next = 0;
	duckdb_init_set_init_data(info, next, free);
	duckdb_init_set_max_threads(info, 1); /* keep the chunks in order */
}

static void render_function(duckdb_function_info info, duckdb_data_chunk output) {
	render_source *src = &current_source;
	idx_t *next = duckdb_function_get_init_data(info);
	if (*next >= src->nchunks) {
		duckdb_data_chunk_set_size(output, 0);
		return;
	}
	duckdb_data_chunk in = src->chunks[(*next)++];
	idx_t ncol = duckdb_data_chunk_get_column_count(in);
	for (idx_t c = 0; c < ncol; c++) {
		duckdb_vector_reference_vector(duckdb_data_chunk_get_vector(output, c), duckdb_data_chunk_get_vector(in, c));
	}
	duckdb_data_chunk_set_size(output, duckdb_data_chunk_get_size(in));
}

static bool register_render_function(duckdb_connection con) {
	duckdb_table_function tf = duckdb_create_table_function();
	duckdb_table_function_set_name(tf, RENDER_FUNCTION);
	duckdb_table_function_set_bind(tf, render_bind);
	duckdb_table_function_set_init(tf, render_init);
	duckdb_table_function_set_function(tf, render_function);
	duckdb_state st = duckdb_register_table_function(con, tf);
	duckdb_destroy_table_function(&tf);
	return st == DuckDBSuccess;
}

/* print_varchar_chunks prints the rows of a result whose columns are all VARCHAR. */
static void print_varchar_chunks(shell *sh, duckdb_result *text) {
	duckdb_data_chunk chunk;
	while ((chunk = duckdb_fetch_chunk(*text)) != NULL) {
		idx_t n = duckdb_data_chunk_get_size(chunk);
		idx_t ncol = duckdb_data_chunk_get_column_count(chunk);
		for (idx_t r = 0; r < n; r++) {
			for (idx_t c = 0; c < ncol; c++) {
				if (c) fputs(sh->col_sep, sh->out);
				duckdb_vector v = duckdb_data_chunk_get_vector(chunk, c);
				uint64_t *validity = duckdb_vector_get_validity(v);
				if (validity && !duckdb_validity_row_is_valid(validity, r)) {
					fputs(sh->null_value, sh->out);
					continue;
				}
				duckdb_string_t *s = (duckdb_string_t *)duckdb_vector_get_data(v) + r;
				fwrite(duckdb_string_t_data(s), 1, duckdb_string_t_length(*s), sh->out);
			}
			fputs(sh->row_sep, sh->out);
		}
		duckdb_destroy_data_chunk(&chunk);
	}
}

/* print_result prints the rows of a query result (not the row counts of
 * INSERT/UPDATE/DELETE, which the CLI does not print either). */
static void print_result(shell *sh, duckdb_result *res) {
	idx_t ncol = duckdb_column_count(res);
	if (ncol == 0 || duckdb_result_return_type(*res) != DUCKDB_RESULT_TYPE_QUERY_RESULT) return;
	if (sh->headers) {
		for (idx_t c = 0; c < ncol; c++) {
			if (c) fputs(sh->col_sep, sh->out);
			fputs(duckdb_column_name(res, c), sh->out);
		}
		fputs(sh->row_sep, sh->out);
	}

	idx_t cap = 16, n = 0;
	duckdb_data_chunk *chunks = xmalloc(cap * sizeof *chunks);
	duckdb_data_chunk chunk;
	while ((chunk = duckdb_fetch_chunk(*res)) != NULL) {
		if (n == cap) {
			cap *= 2;
			duckdb_data_chunk *nc = realloc(chunks, cap * sizeof *chunks);
			if (!nc) {
				fputs("duckdb_host: out of memory\n", stderr);
				exit(2);
			}
			chunks = nc;
		}
		chunks[n++] = chunk;
	}
	if (duckdb_result_error(res)) {
		report(sh, "", duckdb_result_error(res));
	} else if (n > 0) {
		current_source = (render_source){.res = res, .chunks = chunks, .nchunks = n};
		duckdb_result text;
		if (duckdb_query(sh->con, "SELECT CAST(COLUMNS(*) AS VARCHAR) FROM " RENDER_FUNCTION "()", &text) == DuckDBError) {
			report(sh, "Error: duckdb_host: rendering the result failed: ", duckdb_result_error(&text));
		} else {
			print_varchar_chunks(sh, &text);
		}
		duckdb_destroy_result(&text);
		current_source = (render_source){0};
	}
	for (idx_t i = 0; i < n; i++) duckdb_destroy_data_chunk(&chunks[i]);
	free(chunks);
}

/* run_sql runs every statement of sql, printing results; it stops at the first
 * failing statement. */
static void run_sql(shell *sh, const char *sql) {
	duckdb_extracted_statements stmts = NULL;
	idx_t n = duckdb_extract_statements(sh->con, sql, &stmts);
	if (n == 0) {
		const char *err = duckdb_extract_statements_error(stmts);
		if (err) report(sh, "", err);
		duckdb_destroy_extracted(&stmts);
		return;
	}
	for (idx_t i = 0; i < n; i++) {
		duckdb_prepared_statement prep = NULL;
		if (duckdb_prepare_extracted_statement(sh->con, stmts, i, &prep) == DuckDBError) {
			report(sh, "", duckdb_prepare_error(prep));
			duckdb_destroy_prepare(&prep);
			break;
		}
		duckdb_result res;
		duckdb_state st = duckdb_execute_prepared(prep, &res);
		duckdb_destroy_prepare(&prep);
		if (st == DuckDBError) {
			report(sh, "", duckdb_result_error(&res));
			duckdb_destroy_result(&res);
			break;
		}
		print_result(sh, &res);
		duckdb_destroy_result(&res);
	}
	duckdb_destroy_extracted(&stmts);
}

/* statement_complete reports whether sql ends with ';' outside quotes and
 * comments (what the CLI waits for before it runs the input). */
static bool statement_complete(const char *sql) {
	bool complete = false;
	for (const char *p = sql; *p; p++) {
		if (*p == '\'' || *p == '"') {
			char q = *p++;
			while (*p && *p != q) p++;
			if (!*p) return false;
			complete = false;
		} else if (p[0] == '-' && p[1] == '-') {
			while (*p && *p != '\n') p++;
			if (!*p) break;
		} else if (p[0] == '/' && p[1] == '*') {
			p += 2;
			while (*p && !(p[0] == '*' && p[1] == '/')) p++;
			if (!*p) return false;
			p++;
		} else if (*p == ';') {
			complete = true;
		} else if (!isspace((unsigned char)*p)) {
			complete = false;
		}
	}
	return complete;
}

static char *read_file(const char *path, char **err) {
	FILE *f = fopen(path, "rb");
	if (!f) {
		*err = strerror(errno);
		return NULL;
	}
	size_t cap = 4096, len = 0;
	char *buf = xmalloc(cap);
	size_t k;
	while ((k = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += k;
		if (cap - len - 1 == 0) {
			cap *= 2;
			char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				*err = "out of memory";
				return NULL;
			}
			buf = nb;
		}
	}
	fclose(f);
	buf[len] = '\0';
	return buf;
}

static void set_string(char **field, const char *value) {
	free(*field);
	*field = xstrdup(value);
}

/* dot_command runs one dot command; it returns false for .quit/.exit. */
static bool dot_command(shell *sh, char *line) {
	char *argv[16];
	int argc = split_args(line + 1, argv, 16);
	if (argc == 0) return true;
	const char *cmd = argv[0];
	if (!strcmp(cmd, "quit") || !strcmp(cmd, "exit")) return false;
	if (!strcmp(cmd, "print")) {
		for (int i = 1; i < argc; i++) {
			if (i > 1) fputc(' ', sh->out);
			fputs(argv[i], sh->out);
		}
		fputc('\n', sh->out);
	} else if (!strcmp(cmd, "read") && argc == 2) {
		char *err = NULL;
		char *sql = read_file(argv[1], &err);
		if (!sql) {
			fflush(sh->out);
			fprintf(stderr, "Error: cannot open \"%s\": %s\n", argv[1], err);
			fflush(stderr);
			sh->errors++;
			return true;
		}
		run_sql(sh, sql); /* a last statement without ';' runs too, as in the CLI */
		free(sql);
	} else if (!strcmp(cmd, "output")) {
		if (sh->out != stdout) fclose(sh->out);
		sh->out = stdout;
		if (argc >= 2 && strcmp(argv[1], "stdout") != 0) {
			FILE *f = fopen(argv[1], "w");
			if (!f) {
				report(sh, "Error: cannot open output: ", strerror(errno));
			} else {
				sh->out = f;
			}
		}
	} else if (!strcmp(cmd, "separator") && argc >= 2) {
		resolve_backslashes(argv[1]);
		set_string(&sh->col_sep, argv[1]);
		if (argc >= 3) {
			resolve_backslashes(argv[2]);
			set_string(&sh->row_sep, argv[2]);
		}
	} else if (!strcmp(cmd, "nullvalue") && argc == 2) {
		set_string(&sh->null_value, argv[1]);
	} else if (!strcmp(cmd, "mode") && argc == 2 && !strcmp(argv[1], "list")) {
		/* the only mode */
	} else if ((!strcmp(cmd, "headers") || !strcmp(cmd, "header")) && argc == 2) {
		sh->headers = !strcmp(argv[1], "on") || !strcmp(argv[1], "1");
	} else if (!strcmp(cmd, "version")) {
		fprintf(sh->out, "%s\n", duckdb_library_version());
	} else {
		fflush(sh->out);
		fprintf(stderr, "Error: unknown command or invalid arguments: \"%s\"\n", cmd);
		fflush(stderr);
		sh->errors++;
	}
	return true;
}

int main(int argc, char **argv) {
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-version") || !strcmp(argv[i], "--version")) {
			printf("%s\n", duckdb_library_version());
			return 0;
		} else if (!strcmp(argv[i], "-unsigned")) {
			/* always on */
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "usage: %s [-unsigned] [-version] [DATABASE]\n", argv[0]);
			return 2;
		} else {
			path = argv[i];
		}
	}

	shell sh = {0};
	sh.out = stdout;
	sh.col_sep = xstrdup("|");
	sh.row_sep = xstrdup("\n");
	sh.null_value = xstrdup("NULL");

	duckdb_config config = NULL;
	char *open_err = NULL;
	if (duckdb_create_config(&config) == DuckDBError ||
	    duckdb_set_config(config, "allow_unsigned_extensions", "true") == DuckDBError) {
		fputs("duckdb_host: cannot create the database config\n", stderr);
		return 2;
	}
	if (duckdb_open_ext(path, &sh.db, config, &open_err) == DuckDBError) {
		fprintf(stderr, "duckdb_host: cannot open the database: %s\n", open_err ? open_err : "?");
		duckdb_free(open_err);
		duckdb_destroy_config(&config);
		return 2;
	}
	duckdb_destroy_config(&config);
	if (duckdb_connect(sh.db, &sh.con) == DuckDBError) {
		fputs("duckdb_host: cannot connect\n", stderr);
		duckdb_close(&sh.db);
		return 2;
	}
	if (!register_render_function(sh.con)) {
		fputs("duckdb_host: cannot register " RENDER_FUNCTION "\n", stderr);
		return 2;
	}

	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	size_t sql_len = 0, sql_cap = 4096;
	char *sql = xmalloc(sql_cap);
	sql[0] = '\0';
	bool running = true;
	while (running && (len = getline(&line, &cap, stdin)) >= 0) {
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
		if (sql_len == 0 && line[0] == '.') {
			running = dot_command(&sh, line);
		} else if (sql_len > 0 || strspn(line, " \t") != (size_t)len) {
			if (sql_len + (size_t)len + 2 > sql_cap) {
				while (sql_len + (size_t)len + 2 > sql_cap) sql_cap *= 2;
				char *ns = realloc(sql, sql_cap);
				if (!ns) {
					fputs("duckdb_host: out of memory\n", stderr);
					return 2;
				}
				sql = ns;
			}
			memcpy(sql + sql_len, line, (size_t)len);
			sql_len += (size_t)len;
			sql[sql_len++] = '\n';
			sql[sql_len] = '\0';
			if (statement_complete(sql)) {
				run_sql(&sh, sql);
				sql_len = 0;
				sql[0] = '\0';
			}
		}
		fflush(sh.out);
		fflush(stdout);
	}
	if (running && sql_len > 0) run_sql(&sh, sql);
	fflush(stdout);

	free(sql);
	free(line);
	if (sh.out != stdout) fclose(sh.out);
	free(sh.col_sep);
	free(sh.row_sep);
	free(sh.null_value);
	duckdb_disconnect(&sh.con);
	duckdb_close(&sh.db);
	return sh.errors ? 1 : 0;
}
