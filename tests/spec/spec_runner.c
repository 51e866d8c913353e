/* spec_runner: runs the examples of a CommonMark/GFM spec file through a
 * command (Markdown on stdin, HTML on stdout) and counts how many match.
 *
 *   spec_runner SPEC.txt MIN COMMAND [ARGS...]
 *
 * The expected HTML is compared after a light normalisation that removes what
 * kvsite adds on purpose: the id="..." of headings. Exits 1 when fewer than
 * MIN examples pass. Prints the failing example numbers and a final line
 * "N passed, N failed". */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    char *p;
    size_t n, cap;
} str;

static void put(str *s, const char *d, size_t n)
{
    if (s->n + n + 1 > s->cap) {
        s->cap = (s->n + n + 1) * 2;
        s->p = realloc(s->p, s->cap);
        if (!s->p)
            exit(70);
    }
    memcpy(s->p + s->n, d, n);
    s->n += n;
    s->p[s->n] = '\0';
}

/* "→" stands for a tab in spec files */
static void put_spec_line(str *s, const char *line)
{
    for (const char *p = line; *p; p++) {
        if (strncmp(p, "\xE2\x86\x92", 3) == 0) {
            put(s, "\t", 1);
            p += 2;
        } else {
            put(s, p, 1);
        }
    }
}

/* Like the normaliser of the CommonMark test suite, in spirit: spelling of
 * harmless entities, runs of white space and white space between tags do not
 * count. kvsite's heading ids do not count either. */
static void normalize(str *s)
{
    str o = {0};
    put(&o, "", 0);
    for (size_t i = 0; i < s->n; i++) {
        static const struct { const char *ent; char c; } ents[] = {
            {"&gt;", '>'}, {"&quot;", '"'}, {"&#39;", '\''}, {"&#x27;", '\''}};
        bool done = false;
        for (size_t k = 0; k < sizeof ents / sizeof ents[0] && !done; k++) {
            size_t n = strlen(ents[k].ent);
            if (strncmp(s->p + i, ents[k].ent, n) == 0) {
                put(&o, &ents[k].c, 1);
                i += n - 1;
                done = true;
            }
        }
        if (done)
            continue;
        if (s->p[i] == ' ' || s->p[i] == '\n' || s->p[i] == '\t') {
            size_t j = i;
            while (j < s->n && (s->p[j] == ' ' || s->p[j] == '\n' || s->p[j] == '\t'))
                j++;
            bool between_tags = (o.n == 0 || o.p[o.n - 1] == '>') && (j == s->n || s->p[j] == '<');
            if (!between_tags)
                put(&o, " ", 1);
            i = j - 1;
            continue;
        }
        if (s->p[i] == '<' && s->p[i + 1] == 'h' && s->p[i + 2] >= '1' && s->p[i + 2] <= '6' &&
            strncmp(s->p + i + 3, " id=\"", 5) == 0) {
            char *end = strchr(s->p + i + 8, '"');
            if (end) {
                put(&o, s->p + i, 3);
                i = (size_t)(end - s->p);
                continue;
            }
        }
        put(&o, s->p + i, 1);
    }
    free(s->p);
    *s = o;
}

static int run(char **cmd, const str *in, str *out)
{
    int to[2], from[2];
    if (pipe(to) || pipe(from))
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        close(to[1]);
        close(from[0]);
        execvp(cmd[0], cmd);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    /* inputs are small: write all, then read all */
    size_t off = 0;
    while (off < in->n) {
        ssize_t w = write(to[1], in->p + off, in->n - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(to[1]);
    char b[65536];
    ssize_t r;
    put(out, "", 0);
    while ((r = read(from[0], b, sizeof b)) > 0)
        put(out, b, (size_t)r);
    close(from[0]);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: spec_runner SPEC.txt MIN COMMAND [ARGS...]\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        fprintf(stderr, "spec_runner: %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    int min = atoi(argv[2]);
    char *line = NULL;
    size_t cap = 0;
    int state = 0, number = 0, passed = 0, failed = 0;
    str md = {0}, html = {0};
    while (getline(&line, &cap, f) > 0) {
        if (state == 0 && strncmp(line, "````````````````````````````````", 32) == 0 &&
            strstr(line, " example")) {
            if (strstr(line, "disabled")) {
                state = 3; /* examples the spec itself disables */
                continue;
            }
            state = 1;
            md.n = html.n = 0;
            put(&md, "", 0);
            put(&html, "", 0);
        } else if (state == 3) {
            if (strncmp(line, "````````````````````````````````", 32) == 0)
                state = 0;
        } else if (state == 1 && strcmp(line, ".\n") == 0) {
            state = 2;
        } else if (state == 2 && strncmp(line, "````````````````````````````````", 32) == 0) {
            state = 0;
            number++;
            str out = {0};
            run(argv + 3, &md, &out);
            normalize(&out);
            normalize(&html);
            if (out.n == html.n && memcmp(out.p, html.p, html.n) == 0) {
                passed++;
            } else {
                failed++;
                printf("example %d failed\n", number);
            }
            free(out.p);
        } else if (state == 1) {
            put_spec_line(&md, line);
        } else if (state == 2) {
            put_spec_line(&html, line);
        }
    }
    free(line);
    free(md.p);
    free(html.p);
    fclose(f);
    printf("%s: %d of %d examples (required: %d)\n", argv[1], passed, passed + failed, min);
    printf("%d passed, %d failed\n", passed, failed);
    return passed >= min ? 0 : 1;
}
