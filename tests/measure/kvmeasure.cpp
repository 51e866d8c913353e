// kvmeasure: load a model with llama.cpp once, then create one context for each context
// length x cache type asked for (one after the other, each freed before the next) and
// print what the engine allocates: its own log lines (llama_kv_cache: size = ..., the SWA/non-SWA cache lines,
// llama_memory_recurrent: size = ...) and common_memory_breakdown_print's table.
//
// Compiled by tests/measure/measure.sh against the prebuilt llama.cpp libraries of the
// pinned npm package, with the headers of the same llama.cpp commit. Nothing is decoded:
// the numbers are allocation sizes, which depend on the model's shape and the context
// parameters only (the models are zero-weight synthetic files, see synth_gguf.py).
//
// usage: kvmeasure -m MODEL -c N_CTX[,N_CTX...] [-ct TYPE[,TYPE...]] [-ub N_UBATCH]
//                  [-np N_SEQ] [--backend LIB]
// -ct sets K and V to the same type (f16 when not given). Contexts are created in the
// order -c major, -ct minor; each one's log starts with llama.cpp's own
// "llama_context: constructing llama_context". The log goes to stderr, no timestamps.

#include "llama.h"
#include "ggml-backend.h"
#include "common.h"
#include "fit.h"
#include "build-info.h"
#include "log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

static ggml_type S_type(const char * s) {
    // the cache types llama.cpp's -ctk/-ctv accept are ggml type names
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        const char * n = ggml_type_name((ggml_type) t);
        if (n && strcmp(n, s) == 0) {
            return (ggml_type) t;
        }
    }
    fprintf(stderr, "kvmeasure: unknown cache type '%s'\n", s);
    exit(2);
}

static unsigned S_uint(const char * s, const char * what) {
    char * end = nullptr;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || v == 0 || v > (1ul << 24)) {
        fprintf(stderr, "kvmeasure: %s must be a positive integer up to 2^24, got '%s'\n", what, s);
        exit(2);
    }
    return (unsigned) v;
}

enum { MAX_LIST = 8 };

// "a,b,c" -> up to MAX_LIST items, each passed to parse (which exits on a bad one)
template <typename T, typename F>
static int S_list(char * s, T * out, F parse, const char * what) {
    int n = 0;
    for (char * tok = strtok(s, ","); tok; tok = strtok(nullptr, ",")) {
        if (n == MAX_LIST) {
            fprintf(stderr, "kvmeasure: at most %d values for %s\n", MAX_LIST, what);
            exit(2);
        }
        out[n++] = parse(tok);
    }
    return n;
}

int main(int argc, char ** argv) {
    const char * model_path = nullptr;
    const char * backend = nullptr;
    llama_context_params cp = llama_context_default_params();
    unsigned ctxs[MAX_LIST];
    ggml_type types[MAX_LIST] = {GGML_TYPE_F16};
    int n_ctxs = 0, n_types = 1;
    for (int i = 1; i < argc; i++) {
        const char * a = argv[i];
        if (i + 1 >= argc) {
            fprintf(stderr, "kvmeasure: %s needs a value\n", a);
            return 2;
        }
        const char * v = argv[++i];
        if (!strcmp(a, "-m")) {
            model_path = v;
        } else if (!strcmp(a, "-c")) {
            n_ctxs = S_list(argv[i], ctxs, [](const char * x) { return S_uint(x, "-c"); }, "-c");
        } else if (!strcmp(a, "-ct")) {
            n_types = S_list(argv[i], types, S_type, "-ct");
        } else if (!strcmp(a, "-ub")) {
            cp.n_ubatch = S_uint(v, "-ub");
        } else if (!strcmp(a, "-np")) {
            cp.n_seq_max = S_uint(v, "-np");
        } else if (!strcmp(a, "--backend")) {
            backend = v;
        } else {
            fprintf(stderr, "kvmeasure: unknown option %s\n", a);
            return 2;
        }
    }
    if (!model_path || n_ctxs == 0 || n_types == 0) {
        fprintf(stderr, "usage: kvmeasure -m MODEL -c N_CTX[,...] [-ct TYPE[,...]] [-ub N] [-np N] [--backend LIB]\n");
        return 2;
    }
    cp.n_batch = cp.n_ubatch;
    cp.swa_full = false; // llama.cpp's tools default (--swa-full off): SWA layers get the window
    cp.n_threads = cp.n_threads_batch = 1;

    // every message through common's logger: plain text, no timestamps, debug included
    common_log_set_prefix(common_log_main(), false);
    common_log_set_timestamps(common_log_main(), false);
    common_log_set_verbosity_thold(4);
    llama_log_set(common_log_default_callback, nullptr);

    // which llama.cpp this is, as its own build info says (the manifest records it)
    fprintf(stderr, "kvmeasure: llama.cpp build %d (%s)\n", llama_build_number(), llama_commit());

    // one named CPU backend (the baseline x64 build), so every x86-64 machine loads the same
    if (backend) {
        if (!ggml_backend_load(backend)) {
            fprintf(stderr, "kvmeasure: cannot load backend %s\n", backend);
            return 1;
        }
    } else {
        ggml_backend_load_all();
    }
    llama_backend_init();

    llama_model_params mp = llama_model_default_params();
    mp.use_extra_bufts = false; // no CPU-specific repacking of the (zero) weights
    llama_model * model = llama_model_load_from_file(model_path, mp);
    if (!model) {
        fprintf(stderr, "kvmeasure: cannot load %s\n", model_path);
        return 1;
    }
    int rc = 0;
    for (int c = 0; c < n_ctxs && rc == 0; c++) {
        for (int t = 0; t < n_types && rc == 0; t++) {
            cp.n_ctx = ctxs[c];
            cp.type_k = cp.type_v = types[t];
            llama_context * ctx = llama_init_from_model(model, cp);
            if (!ctx) {
                fprintf(stderr, "kvmeasure: cannot create a context\n");
                rc = 1;
                break;
            }
            common_memory_breakdown_print(ctx);
            llama_free(ctx);
        }
    }
    common_log_pause(common_log_main()); // flush the log worker before exit
    llama_model_free(model);
    llama_backend_free();
    return rc;
}
