/* The layout check and copy behind every *_sized entry point. */
#include <string.h>

#include "internal.h"
#include "params.h"

static int known(const pami_params_layouts_t *l, size_t given)
{
    for (size_t i = 0; i < l->num_sizes; i++)
        if (l->sizes[i] == given)
            return 1;
    return 0;
}

static pami_result_t refuse(const pami_params_layouts_t *l, size_t given)
{
    size_t now = l->sizes[l->num_sizes - 1];
    pami_warn("params", "%s of %zu bytes is no layout of this pami "
                        "(%zu bytes now, %zu at least, at a field's end): "
                        "built against a newer pami.h, or a wrong size",
              l->name, given, now, l->sizes[0]);
    return PAMI_INVAL;
}

pami_result_t pami_params_in_copy(const pami_params_layouts_t *l,
                                  const void *p, size_t given, void *buf,
                                  const void **out)
{
    size_t now = l->sizes[l->num_sizes - 1];
    if (!known(l, given))
        return refuse(l, given);
    memset(buf, 0, now);
    memcpy(buf, p, given);
    *out = buf;
    return PAMI_SUCCESS;
}

pami_result_t pami_params_mask(const char *name, uint64_t mask,
                               uint64_t known)
{
    if (likely((mask & ~known) == 0))
        return PAMI_SUCCESS;
    pami_warn("params", "%s.field_mask has bits 0x%llx this pami does not "
                        "know (known: 0x%llx): built against a newer pami.h, "
                        "or not initialised",
              name, (unsigned long long)(mask & ~known),
              (unsigned long long)known);
    return PAMI_INVAL;
}

pami_result_t pami_params_out(const pami_params_layouts_t *l, size_t given)
{
    return known(l, given) ? PAMI_SUCCESS : refuse(l, given);
}
