#include <stddef.h>
#include <zlib.h>
