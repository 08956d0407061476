#include <stddef.h>
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>
#define ZDICT_STATIC_LINKING_ONLY
#include <zdict.h>
