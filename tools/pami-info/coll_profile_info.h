/* pami-info --coll-profile: a profile's decision table for a shape. */
#ifndef PAMI_INFO_COLL_PROFILE_H
#define PAMI_INFO_COLL_PROFILE_H

#include <pami.h>

int coll_profile_info(pami_context_t ctx, const char *path,
                      const char *shape);

#endif
