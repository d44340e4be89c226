#include "libev_private.h"

#include <dlfcn.h>
#include <pthread.h>

#include "log.h"

static libev_api_t     api;
static const libev_api_t *api_ready;
static pthread_once_t  api_once = PTHREAD_ONCE_INIT;

static int resolve(void *lib, const char *name, void *slot)
{
    void *fn = dlsym(lib, name);
    if (fn == NULL) {
        pami_error("evloop", "libev lacks %s", name);
        return -1;
    }
    *(void **)slot = fn;
    return 0;
}

static void load(void)
{
    void *lib = dlopen("libev.so.4", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        pami_error("evloop", "cannot load libev.so.4: %s", dlerror());
        return;
    }
    int bad = resolve(lib, "ev_loop_new", &api.loop_new) |
              resolve(lib, "ev_loop_destroy", &api.loop_destroy) |
              resolve(lib, "ev_io_start", &api.io_start) |
              resolve(lib, "ev_io_stop", &api.io_stop) |
              resolve(lib, "ev_timer_start", &api.timer_start) |
              resolve(lib, "ev_timer_stop", &api.timer_stop) |
              resolve(lib, "ev_async_start", &api.async_start) |
              resolve(lib, "ev_async_stop", &api.async_stop) |
              resolve(lib, "ev_async_send", &api.async_send) |
              resolve(lib, "ev_run", &api.run) |
              resolve(lib, "ev_now_update", &api.now_update);
    /* The library stays loaded for the life of the process. */
    if (!bad)
        api_ready = &api;
}

const libev_api_t *libev_api(void)
{
    pthread_once(&api_once, load);
    return api_ready;
}
