/* kvsite: the command line. Everything else lives in the library (gen/). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "build.h"
#include "diag.h"
#include "figdiff.h"
#include "fix.h"
#include "fsutil.h"
#include "heap.h"
#include "luatest.h"
#include "paths.h"
#include "render.h"
#include "scaffold.h"
#include "serve.h"

static const char *S_usage =
    "usage: kvsite build [-C DIR] [-o OUT] [--strict] [-j N] [--drafts] [--no-cache]\n"
    "                    [--limits NAME=N,...] [--no-unsafe]\n"
    "       kvsite check [-C DIR] [--strict] [-j N] [--drafts] [--limits NAME=N,...] [--no-unsafe]\n"
    "                    [--fix [--dry-run] | --diff OLD]\n"
    "       kvsite render [--unsafe] [--strict]  Markdown on stdin -> HTML on stdout\n"
    "       kvsite serve [-C DIR] [--port N] [--bind ADDR] [--drafts] [--open]\n"
    "                    live-reload preview, errors in the browser\n"
    "       kvsite lua-test [-C DIR] FILE...  run Lua tests in the sandbox\n"
    "       kvsite new DIR [--lang en|zh]  a new site from the starter, ready to build\n"
    "       kvsite new page [-C DIR] SECTION/NAME  a new page with front matter\n"
    "       kvsite --help | --version\n"
    "\n"
    "build   renders DIR (default .) into OUT (default DIR/site), verifying every\n"
    "        figure and internal link; the output is replaced only on success\n"
    "check   does everything build does and writes nothing\n"
    "  --fix       then rewrites every failing exact quote with the computed value\n"
    "              (same unit, decimals and separators); --dry-run: print a diff instead\n"
    "  --diff OLD  then lists the figures that changed since OLD (a checks.json, or\n"
    "              a build's output folder holding one)\n"
    "  -C DIR      the project folder (site.yaml, content/, templates/, checks/)\n"
    "  -o OUT      the output folder, relative to DIR unless absolute\n"
    "  --strict    warnings (unverified figures, raw HTML) are errors\n"
    "  -j N        worker processes (default: build.jobs, or the number of cores)\n"
    "  --drafts    include pages with draft: true\n"
    "  --no-cache  build even when nothing changed since the last build\n"
    "  --limits NAME=N,...  ceilings site.yaml cannot exceed (NAME: a limits.* key\n"
    "              without \"limits.\"); added to those of KVSITE_LIMITS, the lower wins\n"
    "  --no-unsafe refuse markdown.unsafe: true (as KVSITE_LIMITS=unsafe=0)\n"
    "Exit status: 0 ok, 1 errors in the content, 2 usage or configuration errors.\n";

static int S_usage_error(const char *msg)
{
    fprintf(stderr, "kvsite: %s\n%s", msg, S_usage);
    return 2;
}

static int S_build(int argc, char **argv, bool check)
{
    build_opts o = {.root = ".", .check_only = check};
    static const struct option longs[] = {{"strict", no_argument, 0, 's'},
                                          {"drafts", no_argument, 0, 'd'},
                                          {"no-cache", no_argument, 0, 'n'},
                                          {"limits", required_argument, 0, 'L'},
                                          {"no-unsafe", no_argument, 0, 'U'},
                                          {"help", no_argument, 0, 'h'},
                                          {"fix", no_argument, 0, 'F'},
                                          {"dry-run", no_argument, 0, 'R'},
                                          {"diff", required_argument, 0, 'D'},
                                          {0, 0, 0, 0}};
    fix_opts fix = {false, stdout, stderr};
    figdiff_opts diff = {NULL, stdout, stderr};
    bool fixing = false;
    /* --limits and --no-unsafe join the ceilings of KVSITE_LIMITS, which
     * config_load reads: a flag can add ceilings, never lift one */
    const char *env = getenv("KVSITE_LIMITS");
    buf pins = BUF_INIT;
    buf_puts(&pins, env ? env : "");
    bool pinned = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, check ? "C:j:" : "C:o:j:", longs, NULL)) != -1) {
        switch (c) {
        case 'C': o.root = optarg; break;
        case 'o': o.out = optarg; break;
        case 's': o.strict = true; break;
        case 'd': o.drafts = true; break;
        case 'n': o.no_cache = true; break;
        case 'L':
        case 'U':
            if (pins.len)
                buf_putc(&pins, ',');
            buf_puts(&pins, c == 'L' ? optarg : "unsafe=0");
            pinned = true;
            break;
        case 'j': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end || n < 1 || n > 256) {
                buf_free(&pins);
                return S_usage_error("-j needs a number of workers from 1 to 256");
            }
            o.jobs = (int)n;
            break;
        }
        case 'F': fixing = true; break;
        case 'R': fix.dry_run = true; break;
        case 'D': diff.old = optarg; break;
        case 'h': buf_free(&pins); fputs(S_usage, stdout); return 0;
        default: {
            char msg[80];
            snprintf(msg, sizeof msg, "unknown or incomplete option \"%s\"", argv[optind - 1]);
            buf_free(&pins);
            return S_usage_error(msg);
        }
        }
    }
    if (optind < argc) {
        char msg[200];
        snprintf(msg, sizeof msg, "unexpected argument \"%s\"", argv[optind]);
        buf_free(&pins);
        return S_usage_error(msg);
    }
    const char *bad = !check && (fixing || fix.dry_run || diff.old)
                          ? "--fix, --dry-run and --diff go with check, not build"
                      : fix.dry_run && !fixing ? "--dry-run goes with --fix"
                      : fixing && diff.old     ? "--fix and --diff cannot be combined"
                                               : NULL;
    if (bad) {
        buf_free(&pins);
        return S_usage_error(bad);
    }
    if (fixing) {
        o.after = fix_after_check;
        o.after_ctx = &fix;
    } else if (diff.old) {
        o.after = figdiff_after_check;
        o.after_ctx = &diff;
    }
    if (pinned)
        setenv("KVSITE_LIMITS", buf_cstr(&pins), 1);
    buf_free(&pins);
    o.exiting = true;
    return build_run(&o);
}

static int S_render(int argc, char **argv)
{
    bool unsafe = false, strict = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--unsafe") == 0)
            unsafe = true;
        else if (strcmp(argv[i], "--strict") == 0)
            strict = true;
        else
            return S_usage_error("render takes only --unsafe and --strict");
    }
    buf in = BUF_INIT;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0) {
        buf_put(&in, chunk, n);
        if (in.len > (64u << 20)) {
            fprintf(stderr, "kvsite: render: input larger than 64 MiB\n");
            buf_free(&in);
            return 1;
        }
    }
    buf out = BUF_INIT;
    diag_list dl;
    diag_list_init(&dl);
    render_fragment(buf_cstr(&in), in.len, unsafe, &out, &dl);
    if (strict)
        diag_promote_warnings(&dl); /* the build's rule: warnings alone exit 0 */
    fwrite(buf_cstr(&out), 1, out.len, stdout);
    diag_print(&dl, stderr, false);
    int status = dl.errors ? 1 : 0;
    diag_list_free(&dl);
    buf_free(&in);
    buf_free(&out);
    return status;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return S_usage_error("no command");
    const char *cmd = argv[1];
    paths_get(); /* the share folder, found once before any thread or worker starts */
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(S_usage, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("kvsite %s\n", KVSITE_VERSION);
        return 0;
    }
    /* before any thread or worker starts; 64 MiB: a 10,000-page build's
     * parent heap and more (heap.h) */
    heap_prefer_huge_pages((size_t)64 << 20);
    if (strcmp(cmd, "build") == 0)
        return S_build(argc - 1, argv + 1, false);
    if (strcmp(cmd, "check") == 0)
        return S_build(argc - 1, argv + 1, true);
    if (strcmp(cmd, "render") == 0)
        return S_render(argc - 1, argv + 1);
    if (strcmp(cmd, "serve") == 0)
        return serve_main(argc - 1, argv + 1);
    if (strcmp(cmd, "lua-test") == 0)
        return luatest_main(argc - 1, argv + 1);
    if (strcmp(cmd, "new") == 0)
        return scaffold_main(argc - 1, argv + 1);
    char msg[200];
    snprintf(msg, sizeof msg, "unknown command \"%s\"", cmd);
    return S_usage_error(msg);
}
