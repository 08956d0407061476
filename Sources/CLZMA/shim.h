#include <stddef.h>
#include <lzma.h>
