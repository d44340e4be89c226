/*
 * libFuzzer target: the PAMI_* environment variables as pami_config_load
 * reads them (pami/config.c), and the size and boolean parsers it uses.
 *
 * Input: NUL-separated values; the first few go to the core's variables
 * in the order pami_config_var lists them, the next to the parsers.
 */
#include <stdio.h>

#include "fuzz_util.h"
#include "config.h"

FZ_QUIET_INIT

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL)
        abort();
    memcpy(text, in, size);
    text[size] = '\0';

    /* The core's variables, then the protocols' (set, but read only by
     * their init, which needs a context). */
    const char *names[16];
    size_t      nnames = 0;
    pami_config_var_t var;
    for (unsigned i = 0; nnames < 16; i++) {
        if (pami_config_var(i, &var) != PAMI_SUCCESS)
            break;
        names[nnames++] = var.name;
    }
    char  *p   = text;
    size_t set = 0;
    for (; set < nnames && p <= text + size; set++) {
        setenv(names[set], p, 1);
        p += strlen(p) + 1;
    }
    pami_config_t cfg;
    (void)pami_config_load(&cfg);
    if (cfg.bootstrap[sizeof(cfg.bootstrap) - 1] != '\0')
        abort(); /* a string setting must stay terminated */
    for (; p <= text + size; p += strlen(p) + 1) {
        size_t sz;
        int    b;
        if (pami_config_parse_size(p, &sz) == 0 && p[0] == '-')
            abort();
        if (pami_config_parse_bool(p, &b) == 0 && b != 0 && b != 1)
            abort();
    }
    for (size_t i = 0; i < set; i++)
        unsetenv(names[i]);
    free(text);
    return 0;
}
