// libFuzzer's driver entry (compiler-rt, linked by -sanitize=fuzzer), header only.
#include <stddef.h>
#include <stdint.h>

/// Runs libFuzzer's command line (the same flags as its own main) over `callback`.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
