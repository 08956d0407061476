#include <stddef.h>
#include <lz4.h>
