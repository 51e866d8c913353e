#include "httpd.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "fsutil.h"
#include "reload.h"

#define S_HTML_MAX ((size_t)256 << 20) /* an HTML page read to inject into */
#define S_KEEPALIVE_S 15               /* an event stream's comment line, so proxies keep it */

struct httpd {
    struct MHD_Daemon *d;
    char *out_abs;
    int port;
    pthread_mutex_t mu; /* guards what follows */
    pthread_cond_t cv;  /* a build finished, or the server stops */
    char *base;         /* "" or "/docs" */
    char *diags;        /* NULL: the last build succeeded */
    uint64_t generation;
    bool stopping;
};

/* ---------- the library ---------- */

/* libmicrohttpd and what it loads (GnuTLS and its own libraries: a dozen
 * files) take about 5 ms of every process's start on the machines the
 * bench runs on, and only kvsite serve uses them: so the library is opened
 * when a server starts, not linked. KV_MHD_SONAME is the file the Makefile
 * found (the -dev package's link); its functions are declared by the
 * header, and called through these. */
#ifndef KV_MHD_SONAME
#define KV_MHD_SONAME "libmicrohttpd.so.12"
#endif

static struct {
    __typeof__(&MHD_start_daemon) start_daemon;
    __typeof__(&MHD_stop_daemon) stop_daemon;
    __typeof__(&MHD_get_daemon_info) get_daemon_info;
    __typeof__(&MHD_queue_response) queue_response;
    __typeof__(&MHD_destroy_response) destroy_response;
    __typeof__(&MHD_add_response_header) add_response_header;
    __typeof__(&MHD_create_response_from_buffer) create_response_from_buffer;
    __typeof__(&MHD_create_response_from_fd) create_response_from_fd;
    __typeof__(&MHD_create_response_from_callback) create_response_from_callback;
} S_mhd;
static pthread_once_t S_mhd_once = PTHREAD_ONCE_INIT;
static char S_mhd_error[256]; /* empty: loaded */

static void S_mhd_load(void)
{
    void *lib = dlopen(KV_MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(S_mhd_error, sizeof S_mhd_error, "cannot load %s (the libmicrohttpd package): %s",
                 KV_MHD_SONAME, dlerror());
        return;
    }
    /* POSIX's way of taking a function from dlsym: through an object pointer */
    struct {
        const char *name;
        void **fn;
    } want[] = {
        {"MHD_start_daemon", (void **)&S_mhd.start_daemon},
        {"MHD_stop_daemon", (void **)&S_mhd.stop_daemon},
        {"MHD_get_daemon_info", (void **)&S_mhd.get_daemon_info},
        {"MHD_queue_response", (void **)&S_mhd.queue_response},
        {"MHD_destroy_response", (void **)&S_mhd.destroy_response},
        {"MHD_add_response_header", (void **)&S_mhd.add_response_header},
        {"MHD_create_response_from_buffer", (void **)&S_mhd.create_response_from_buffer},
        {"MHD_create_response_from_fd", (void **)&S_mhd.create_response_from_fd},
        {"MHD_create_response_from_callback", (void **)&S_mhd.create_response_from_callback},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        *want[i].fn = dlsym(lib, want[i].name);
        if (!*want[i].fn) {
            snprintf(S_mhd_error, sizeof S_mhd_error, "%s has no %s: a libmicrohttpd too old",
                     KV_MHD_SONAME, want[i].name);
            return; /* the library stays loaded: nothing was taken from it */
        }
    }
}

/* ---------- paths and types ---------- */

int httpd_resolve(const char *path, const char *base, char **rel)
{
    *rel = NULL;
    size_t nb = strlen(base);
    if (strncmp(path, base, nb) != 0 || (path[nb] != '/' && path[nb] != '\0'))
        return HTTPD_NOT_FOUND;
    const char *p = path + nb;
    buf out = BUF_INIT;
    bool folder = true; /* "" and a final '/' name a folder */
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        bool bad = (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.');
        for (size_t i = 0; i < n && !bad; i++)
            bad = p[i] == '\\' || (unsigned char)p[i] < 0x20 || p[i] == 0x7f;
        if (bad) {
            buf_free(&out);
            return HTTPD_FORBIDDEN;
        }
        if (out.len)
            buf_putc(&out, '/');
        buf_put(&out, p, n);
        folder = end != NULL;
        p += n;
    }
    if (folder && out.len)
        buf_putc(&out, '/');
    buf_putc(&out, '\0');
    *rel = buf_detach(&out);
    return HTTPD_OK;
}

const char *httpd_mime(const char *name)
{
    static const char *const types[][2] = {
        {".html", "text/html; charset=utf-8"}, {".htm", "text/html; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},   {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".json", "application/json"},         {".xml", "application/xml"},
        {".txt", "text/plain; charset=utf-8"}, {".md", "text/plain; charset=utf-8"},
        {".csv", "text/csv; charset=utf-8"},   {".svg", "image/svg+xml"},
        {".png", "image/png"},                 {".jpg", "image/jpeg"},
        {".jpeg", "image/jpeg"},               {".gif", "image/gif"},
        {".webp", "image/webp"},               {".avif", "image/avif"},
        {".ico", "image/x-icon"},              {".woff", "font/woff"},
        {".woff2", "font/woff2"},              {".ttf", "font/ttf"},
        {".otf", "font/otf"},                  {".pdf", "application/pdf"},
        {".wasm", "application/wasm"},         {".mp4", "video/mp4"},
        {".webm", "video/webm"},               {".mp3", "audio/mpeg"},
        {".yaml", "text/plain; charset=utf-8"}, {".yml", "text/plain; charset=utf-8"},
        {".lua", "text/plain; charset=utf-8"},
    };
    const char *slash = strrchr(name, '/');
    const char *dot = strrchr(slash ? slash + 1 : name, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof *types; i++)
        if (!strcasecmp(dot, types[i][0]))
            return types[i][1];
    return "application/octet-stream";
}

bool httpd_is_html(const char *mime) { return !strncmp(mime, "text/html", 9); }

/* ---------- responses ---------- */

static enum MHD_Result S_queue(struct MHD_Connection *c, unsigned status,
                               struct MHD_Response *r, const char *mime)
{
    if (!r)
        return MHD_NO;
    if (mime)
        S_mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, mime);
    /* every request asks again: an edit must show on the next reload */
    S_mhd.add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    S_mhd.add_response_header(r, "X-Content-Type-Options", "nosniff");
    enum MHD_Result rc = S_mhd.queue_response(c, status, r);
    S_mhd.destroy_response(r);
    return rc;
}

static enum MHD_Result S_text(struct MHD_Connection *c, unsigned status, const char *text)
{
    struct MHD_Response *r =
        S_mhd.create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    return S_queue(c, status, r, "text/plain; charset=utf-8");
}

/* An HTML page read from fd (closed), with the script and the overlay. */
static enum MHD_Result S_html(httpd *h, struct MHD_Connection *c, unsigned status, int fd)
{
    buf page = BUF_INIT, out = BUF_INIT;
    int rc = fs_read_fd(fd, S_HTML_MAX, &page);
    close(fd);
    if (rc != FS_OK) {
        buf_free(&page);
        return S_text(c, MHD_HTTP_FORBIDDEN, "403 forbidden\n");
    }
    pthread_mutex_lock(&h->mu);
    reload_inject(page.ptr ? page.ptr : "", page.len, h->generation, h->diags, &out);
    pthread_mutex_unlock(&h->mu);
    buf_free(&page);
    size_t len = out.len;
    struct MHD_Response *r =
        S_mhd.create_response_from_buffer(len, buf_detach(&out), MHD_RESPMEM_MUST_FREE);
    return S_queue(c, status, r, httpd_mime("x.html"));
}

/* The site's 404.html, or a page of one line when it has none (still with
 * the script and the overlay: a site whose first build failed has no
 * output, and its pages must reload once it builds). */
static enum MHD_Result S_not_found(httpd *h, struct MHD_Connection *c, int outfd)
{
    int fd = outfd >= 0 ? fs_open_beneath(outfd, "404.html", O_RDONLY) : -1;
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        return S_html(h, c, MHD_HTTP_NOT_FOUND, fd);
    if (fd >= 0)
        close(fd);
    static const char page[] = "<!doctype html>\n<title>404 not found</title>\n"
                               "<body><p>404 not found</p></body>\n";
    buf out = BUF_INIT;
    pthread_mutex_lock(&h->mu);
    reload_inject(page, sizeof page - 1, h->generation, h->diags, &out);
    pthread_mutex_unlock(&h->mu);
    size_t len = out.len;
    struct MHD_Response *r =
        S_mhd.create_response_from_buffer(len, buf_detach(&out), MHD_RESPMEM_MUST_FREE);
    return S_queue(c, MHD_HTTP_NOT_FOUND, r, httpd_mime("x.html"));
}

/* rel names a folder: redirect url to url + "/". */
static enum MHD_Result S_redirect(struct MHD_Connection *c, const char *url)
{
    struct MHD_Response *r =
        S_mhd.create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    /* the path came decoded: encoded again for the header */
    buf to = BUF_INIT;
    for (const unsigned char *p = (const unsigned char *)url; *p; p++) {
        if (*p <= 0x20 || *p >= 0x7f || *p == '%' || *p == '"' || *p == '?' || *p == '#') {
            char esc[4];
            snprintf(esc, sizeof esc, "%%%02X", *p);
            buf_puts(&to, esc);
        } else {
            buf_putc(&to, *p);
        }
    }
    buf_putc(&to, '/');
    S_mhd.add_response_header(r, MHD_HTTP_HEADER_LOCATION, buf_cstr(&to));
    buf_free(&to);
    return S_queue(c, MHD_HTTP_MOVED_PERMANENTLY, r, NULL);
}

/* A file of the output, opened beneath the output folder opened once for
 * this request (the old or the new one, whole). */
static enum MHD_Result S_file(httpd *h, struct MHD_Connection *c, const char *url, const char *rel)
{
    int outfd = open(h->out_abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (outfd < 0)
        return S_not_found(h, c, -1);
    size_t n = strlen(rel);
    char *name = !n || rel[n - 1] == '/' ? xasprintf("%sindex.html", rel) : xstrdup(rel);
    int fd = fs_open_beneath(outfd, name, O_RDONLY);
    int err = errno;
    enum MHD_Result rc;
    struct stat st;
    if (fd < 0) {
        rc = err == ELOOP || err == EXDEV ? S_text(c, MHD_HTTP_FORBIDDEN, "403 forbidden\n")
                                          : S_not_found(h, c, outfd);
    } else if (fstat(fd, &st) != 0) {
        close(fd);
        rc = S_not_found(h, c, outfd);
    } else if (S_ISDIR(st.st_mode)) {
        close(fd);
        rc = S_redirect(c, url);
    } else if (!S_ISREG(st.st_mode)) {
        close(fd);
        rc = S_text(c, MHD_HTTP_FORBIDDEN, "403 forbidden\n");
    } else if (httpd_is_html(httpd_mime(name))) {
        rc = S_html(h, c, MHD_HTTP_OK, fd);
    } else {
        /* the response owns fd; HEAD sends the headers only */
        struct MHD_Response *r = S_mhd.create_response_from_fd((uint64_t)st.st_size, fd);
        if (!r)
            close(fd);
        rc = S_queue(c, MHD_HTTP_OK, r, httpd_mime(name));
    }
    free(name);
    close(outfd);
    return rc;
}

/* ---------- the event stream ---------- */

typedef struct {
    httpd *h;
    uint64_t seen;   /* the generation last announced to this page */
    bool started;
    buf pending;     /* an event not yet handed to the connection */
    size_t at;
} S_stream;

/* Blocks (in the connection's own thread) until there is something to say:
 * the generation on connecting and whenever it changes, a comment line now
 * and then, the end when the server stops. */
static ssize_t S_stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    S_stream *s = cls;
    if (s->at == s->pending.len) {
        buf_clear(&s->pending);
        s->at = 0;
        httpd *h = s->h;
        pthread_mutex_lock(&h->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += S_KEEPALIVE_S;
        int rc = 0;
        while (s->started && !h->stopping && h->generation == s->seen && rc == 0)
            rc = pthread_cond_timedwait(&h->cv, &h->mu, &until);
        bool stop = h->stopping;
        if (!stop && (!s->started || h->generation != s->seen)) {
            s->started = true;
            s->seen = h->generation;
            reload_event(s->seen, &s->pending);
        } else if (!stop) {
            buf_puts(&s->pending, ": ping\n\n");
        }
        pthread_mutex_unlock(&h->mu);
        if (stop)
            return MHD_CONTENT_READER_END_OF_STREAM;
    }
    size_t n = s->pending.len - s->at;
    if (n > max)
        n = max;
    memcpy(out, s->pending.ptr + s->at, n);
    s->at += n;
    return (ssize_t)n;
}

static void S_stream_free(void *cls)
{
    S_stream *s = cls;
    buf_free(&s->pending);
    free(s);
}

static enum MHD_Result S_events(httpd *h, struct MHD_Connection *c)
{
    S_stream *s = xcalloc(1, sizeof *s);
    s->h = h;
    buf_init(&s->pending);
    struct MHD_Response *r = S_mhd.create_response_from_callback(MHD_SIZE_UNKNOWN, 1024,
                                                                 S_stream_read, s, S_stream_free);
    if (!r) {
        S_stream_free(s);
        return MHD_NO;
    }
    return S_queue(c, MHD_HTTP_OK, r, "text/event-stream");
}

/* ---------- the server ---------- */

static enum MHD_Result S_request(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version,
                                 const char *upload_data, size_t *upload_data_size, void **con_cls)
{
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)con_cls;
    httpd *h = cls;
    if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
        return S_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "405 method not allowed\n");
    if (!strcmp(url, RELOAD_EVENTS))
        return S_events(h, c);
    pthread_mutex_lock(&h->mu);
    char *base = xstrdup(h->base);
    pthread_mutex_unlock(&h->mu);
    char *rel;
    int how = httpd_resolve(url, base, &rel);
    free(base);
    enum MHD_Result rc;
    if (how == HTTPD_FORBIDDEN)
        rc = S_text(c, MHD_HTTP_FORBIDDEN, "403 forbidden\n");
    else if (how == HTTPD_NOT_FOUND) {
        int outfd = open(h->out_abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        rc = S_not_found(h, c, outfd);
        if (outfd >= 0)
            close(outfd);
    } else
        rc = S_file(h, c, url, rel);
    free(rel);
    return rc;
}

httpd *httpd_start(const char *out_abs, const char *base, const char *bind_addr, int port,
                   char *err, size_t errsz)
{
    struct sockaddr_in v4;
    struct sockaddr_in6 v6;
    memset(&v4, 0, sizeof v4);
    memset(&v6, 0, sizeof v6);
    const struct sockaddr *sa;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
    if (inet_pton(AF_INET, bind_addr, &v4.sin_addr) == 1) {
        v4.sin_family = AF_INET;
        v4.sin_port = htons((uint16_t)port);
        sa = (const struct sockaddr *)&v4;
    } else if (inet_pton(AF_INET6, bind_addr, &v6.sin6_addr) == 1) {
        v6.sin6_family = AF_INET6;
        v6.sin6_port = htons((uint16_t)port);
        sa = (const struct sockaddr *)&v6;
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(err, errsz, "--bind %s: not an IPv4 or IPv6 address", bind_addr);
        return NULL;
    }
    pthread_once(&S_mhd_once, S_mhd_load);
    if (S_mhd_error[0]) {
        snprintf(err, errsz, "%s", S_mhd_error);
        return NULL;
    }
    httpd *h = xcalloc(1, sizeof *h);
    h->out_abs = xstrdup(out_abs);
    h->base = xstrdup(base);
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    h->d = S_mhd.start_daemon(flags, (uint16_t)port, NULL, NULL, S_request, h,
                              MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_CONNECTION_LIMIT, (unsigned)256,
                              MHD_OPTION_END);
    if (!h->d) {
        snprintf(err, errsz, "cannot listen on %s port %d%s", bind_addr, port,
                 port ? " (in use? --port 0 picks a free one)" : "");
        httpd_stop(h);
        return NULL;
    }
    const union MHD_DaemonInfo *info = S_mhd.get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : port;
    return h;
}

int httpd_port(const httpd *h) { return h->port; }

void httpd_publish(httpd *h, const char *base, const char *diags)
{
    pthread_mutex_lock(&h->mu);
    free(h->base);
    h->base = xstrdup(base);
    free(h->diags);
    h->diags = diags ? xstrdup(diags) : NULL;
    h->generation++;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

void httpd_stop(httpd *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    h->stopping = true; /* the event streams end: their threads can be joined */
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    if (h->d)
        S_mhd.stop_daemon(h->d);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    free(h->out_abs);
    free(h->base);
    free(h->diags);
    free(h);
}
