/*
 * capi_test: the rules of libbacklot's C interface (include/backlot/backlot.h), checked against a
 * real `backlot serve` (scripts/capi-test starts it and sets the environment):
 *
 *   BACKLOT_TEST_CATALOG_URL, BACKLOT_TEST_ROOT_PUB, BACKLOT_TEST_CA, BACKLOT_TEST_WRONG_ROOT_PUB,
 *   BACKLOT_TEST_SOURCE (the folder the pack "Levels" was made from), BACKLOT_TEST_WORK (a folder
 *   for containers), BACKLOT_TEST_DOWNLOAD_URL (a file the server serves, for URL downloads)
 *
 *   capi_test                   every check below
 *   capi_test --after-update C  the container C (left by the first run) after the script published
 *                               a new version of Levels: backlot_check_for_updates updates it
 *
 * Built twice by scripts/capi-test: plainly, and with AddressSanitizer. Every wait has a deadline.
 * Exit status 0 when every check passed; 1 with each failure printed.
 */
#define _DEFAULT_SOURCE
#include <backlot/backlot.h>

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static atomic_int failures;

#define CHECK(cond, ...)                                                                            \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "capi_test:%d: FAILED: %s: ", __LINE__, #cond);                         \
            fprintf(stderr, __VA_ARGS__);                                                           \
            fprintf(stderr, "\n");                                                                  \
            atomic_fetch_add(&failures, 1);                                                         \
        }                                                                                           \
    } while (0)

#define CHECK_STATUS(call, expected)                                                                \
    do {                                                                                            \
        backlot_status got_ = (call);                                                               \
        CHECK(got_ == (expected), "%s returned %s (%d), not %s: %s", #call, backlot_status_name(got_), \
              got_, backlot_status_name(expected), backlot_last_error_message());                   \
    } while (0)

static const char *env(const char *name) {
    const char *value = getenv(name);
    if (value == NULL || *value == 0) {
        fprintf(stderr, "capi_test: %s is not set (scripts/capi-test sets it)\n", name);
        exit(1);
    }
    return value;
}

/* A whole file, malloc'd; NULL when it cannot be read. */
static uint8_t *read_file(const char *path, size_t *length) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
    size_t got = fread(data, 1, (size_t)size, f);
    fclose(f);
    if (got != (size_t)size) {
        free(data);
        return NULL;
    }
    *length = (size_t)size;
    return data;
}

static char *join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *out = malloc(n);
    snprintf(out, n, "%s/%s", a, b);
    return out;
}

static int counter;
static char *new_container(void) {
    char name[64];
    snprintf(name, sizeof name, "container-%d-%d", (int)getpid(), __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST));
    return join(env("BACKLOT_TEST_WORK"), name);
}

static backlot_manager *open_manager(const char *container, const char *key, uint64_t bandwidth) {
    backlot_config config;
    backlot_config_init(&config);
    config.container_path = container;
    config.catalog_url = env("BACKLOT_TEST_CATALOG_URL");
    config.trusted_key_path = key;
    config.ca_path = env("BACKLOT_TEST_CA");
    config.bandwidth_limit = bandwidth;
    backlot_manager *m = NULL;
    backlot_status s = backlot_manager_open(&config, &m);
    CHECK(s == BACKLOT_OK && m != NULL, "backlot_manager_open: %s: %s", backlot_status_name(s),
          backlot_last_error_message());
    return m;
}

/* The pack's file `relative` equals the source's, read through backlot_contents. */
static int same_as_source(backlot_manager *m, const char *relative) {
    char *source = join(env("BACKLOT_TEST_SOURCE"), relative);
    size_t expected_length = 0;
    uint8_t *expected = read_file(source, &expected_length);
    free(source);
    if (expected == NULL) {
        fprintf(stderr, "capi_test: cannot read the source of %s\n", relative);
        return 0;
    }
    uint8_t *data = NULL;
    size_t length = 0;
    backlot_status s = backlot_contents(m, relative, "Levels", &data, &length);
    int same = s == BACKLOT_OK && length == expected_length && memcmp(data, expected, length) == 0;
    if (s != BACKLOT_OK) fprintf(stderr, "capi_test: backlot_contents(%s): %s\n", relative, backlot_last_error_message());
    backlot_free(data);
    free(expected);
    return same;
}

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- the library itself -------------------------------------------------------------------- */

/* Run by several threads at once: the strings the library makes once (the version, the status
   names, a new thread's empty last error) are read from any thread (StaticCString's proof). */
static void *fresh_thread_error(void *unused) {
    (void)unused;
    CHECK(strcmp(backlot_last_error_message(), "") == 0, "a new thread has no last error");
    CHECK(backlot_last_error_status() == BACKLOT_OK, "a new thread's last status is BACKLOT_OK");
    for (int i = 0; i < 1000; i++) {
        CHECK(strcmp(backlot_status_name(BACKLOT_ERR_UNTRUSTED), "BACKLOT_ERR_UNTRUSTED") == 0, "status name");
        CHECK(strcmp(backlot_status_name(987654), "BACKLOT_ERR_UNKNOWN") == 0, "an unknown status");
        CHECK(strcmp(backlot_version(), backlot_version()) == 0 && strlen(backlot_version()) > 0, "the version");
    }
    return NULL;
}

static void test_version_and_names(void) {
    CHECK(backlot_version() != NULL && strlen(backlot_version()) > 0, "backlot_version is empty");
    CHECK(backlot_abi_version() == BACKLOT_ABI_VERSION, "the ABI version %u", backlot_abi_version());
    CHECK(strcmp(backlot_status_name(BACKLOT_ERR_UNTRUSTED), "BACKLOT_ERR_UNTRUSTED") == 0, "status name");
    CHECK(strcmp(backlot_status_name(BACKLOT_OK), "BACKLOT_OK") == 0, "status name of OK");
    CHECK(strcmp(backlot_status_name(BACKLOT_ERR_BA(101)), "BACKLOT_ERR_BA_DOWNLOAD_NOT_SCHEDULED") == 0,
          "an Apple code's name is %s", backlot_status_name(BACKLOT_ERR_BA(101)));
    CHECK(strcmp(backlot_status_name(987654), "BACKLOT_ERR_UNKNOWN") == 0, "an unknown status");
    CHECK(BACKLOT_ERR_BA_DOWNLOAD_NOT_SCHEDULED == BACKLOT_ERR_BA(101), "named Apple codes");
    CHECK(strcmp(backlot_status_name(BACKLOT_ERR_BA_SESSION_DOWNLOAD_NOT_PERMITTED_BEFORE_APP_LAUNCH),
                 "BACKLOT_ERR_BA_SESSION_DOWNLOAD_NOT_PERMITTED_BEFORE_APP_LAUNCH") == 0,
          "the header's Apple names are the library's");
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) pthread_create(&threads[i], NULL, fresh_thread_error, NULL);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    backlot_free(NULL);
}

/* A struct initialised with the size an older or a newer header gives it: the library writes
   exactly that many bytes (members it does not know are zero), never past them. */
static void test_struct_sizes(void) {
    unsigned char buffer[sizeof(backlot_config) + 64];
    size_t older = offsetof(backlot_config, retries); /* a header without the last member */
    memset(buffer, 0xAB, sizeof buffer);
    backlot_config_init_size((backlot_config *)(void *)buffer, older);
    size_t recorded;
    memcpy(&recorded, buffer, sizeof recorded);
    CHECK(recorded == older, "the size recorded is the caller's (%zu)", recorded);
    int untouched = 1;
    for (size_t i = older; i < sizeof buffer; i++) untouched &= buffer[i] == 0xAB;
    CHECK(untouched, "nothing is written past a smaller struct");
    memset(buffer, 0xAB, sizeof buffer);
    backlot_config_init_size((backlot_config *)(void *)buffer, sizeof(backlot_config) + 32);
    int zeroed = 1;
    for (size_t i = sizeof(backlot_config); i < sizeof(backlot_config) + 32; i++) zeroed &= buffer[i] == 0;
    CHECK(zeroed, "members of a newer header are zero");
    CHECK(buffer[sizeof(backlot_config) + 32] == 0xAB, "nothing past a larger struct either");
    backlot_config_init_size(NULL, sizeof(backlot_config));
    backlot_config_init_size((backlot_config *)(void *)buffer, 3); /* too small to hold its size: nothing */
}

static void test_invalid_arguments(void) {
    backlot_manager *m = (backlot_manager *)1;
    CHECK_STATUS(backlot_manager_open(NULL, &m), BACKLOT_ERR_INVALID_ARGUMENT);
    CHECK(m == NULL, "*out is NULL after a failed open");
    CHECK(strstr(backlot_last_error_message(), "config") != NULL, "the message names the argument: %s",
          backlot_last_error_message());
    CHECK(backlot_last_error_status() == BACKLOT_ERR_INVALID_ARGUMENT, "last status");

    backlot_config config;
    backlot_config_init(&config);
    CHECK(config.size == sizeof config && config.retries == -1, "backlot_config_init");
    CHECK_STATUS(backlot_manager_open(&config, NULL), BACKLOT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(backlot_manager_open(&config, &m), BACKLOT_ERR_INVALID_ARGUMENT); /* no container */
    config.container_path = "/tmp/never-made";
    config.catalog_url = env("BACKLOT_TEST_CATALOG_URL");
    config.trusted_key_path = env("BACKLOT_TEST_ROOT_PUB");
    config.retries = -7;
    CHECK_STATUS(backlot_manager_open(&config, &m), BACKLOT_ERR_INVALID_ARGUMENT);
    config.retries = -1;
    config.bandwidth_limit = UINT64_MAX; /* no Int64 holds it: refused, never a trap */
    CHECK_STATUS(backlot_manager_open(&config, &m), BACKLOT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(backlot_last_error_message(), "bandwidth_limit") != NULL, "the message names the field: %s",
          backlot_last_error_message());
    config.bandwidth_limit = 0;
    config.catalog_url = "https://example.com/not/a/catalog";
    CHECK_STATUS(backlot_manager_open(&config, &m), BACKLOT_ERR_USAGE);
    config.catalog_url = env("BACKLOT_TEST_CATALOG_URL");
    config.app = "com.example.other";
    CHECK_STATUS(backlot_manager_open(&config, &m), BACKLOT_ERR_USAGE);
    config.app = NULL;
    config.device_profile = "textureFormat=astcc";
    CHECK_STATUS(backlot_manager_open(&config, &m), BACKLOT_ERR_INVALID_INPUT);
    CHECK(strstr(backlot_last_error_message(), "device_profile") != NULL, "the message names the field: %s",
          backlot_last_error_message());
    config.device_profile = NULL;
    config.peers = "http://10.0.0.2:7301,ftp://10.0.0.3:21";
    CHECK_STATUS(backlot_manager_open(&config, &m), BACKLOT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(backlot_last_error_message(), "config->peers") != NULL &&
              strstr(backlot_last_error_message(), "ftp://") != NULL,
          "the message names the field and the peer: %s", backlot_last_error_message());
    config.peers = NULL;
    config.discover_peers = 2;
    CHECK_STATUS(backlot_manager_open(&config, &m), BACKLOT_ERR_INVALID_ARGUMENT);
    config.discover_peers = 0;
    config.trusted_key_path = "/nonexistent/root.pub";
    /* A size ending inside a pointer member (a miscomputed size, a binding's own packing): half the
       pointer would be the caller's and half the default's. Refused; a size a release had is
       taken (and the open then fails on the missing key file). */
    config.size = offsetof(backlot_config, device_profile) + 3;
    CHECK_STATUS(backlot_manager_open(&config, &m), BACKLOT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(backlot_last_error_message(), "not its size in any release") != NULL,
          "the message says why: %s", backlot_last_error_message());
    config.size = offsetof(backlot_config, peers); /* ABI version 2's struct */
    CHECK_STATUS(backlot_manager_open(&config, &m), BACKLOT_ERR_IO);
    config.size = sizeof config;
    CHECK_STATUS(backlot_manager_open(&config, &m), BACKLOT_ERR_IO);
    CHECK(m == NULL, "a missing key file is refused");
    config.trusted_key_path = env("BACKLOT_TEST_ROOT_PUB");
    char *under_file = join(env("BACKLOT_TEST_ROOT_PUB"), "container"); /* beneath a regular file */
    config.container_path = under_file;
    CHECK_STATUS(backlot_manager_open(&config, &m), BACKLOT_ERR_IO);
    CHECK(strstr(backlot_last_error_message(), "unexpected") == NULL, "a plain I/O error: %s", backlot_last_error_message());
    free(under_file);
    config.container_path = "/tmp/never-made";
    backlot_config uninitialised;
    memset(&uninitialised, 0, sizeof uninitialised);
    uninitialised.container_path = "/tmp/x";
    CHECK_STATUS(backlot_manager_open(&uninitialised, &m), BACKLOT_ERR_INVALID_ARGUMENT);

    /* NULL, forged and garbage handles: refused, never followed. */
    CHECK_STATUS(backlot_ensure_local_availability(NULL, "Levels", NULL, NULL), BACKLOT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(backlot_ensure_local_availability((backlot_manager *)(uintptr_t)0x12345, "Levels", NULL, NULL),
                 BACKLOT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(backlot_remove((backlot_manager *)(uintptr_t)0xdeadbeef00000001ull, "Levels"),
                 BACKLOT_ERR_INVALID_ARGUMENT);
    backlot_manager_close(NULL);
    backlot_manager_close((backlot_manager *)(uintptr_t)0x77);

    char *container = new_container();
    backlot_manager *real = open_manager(container, env("BACKLOT_TEST_ROOT_PUB"), 0);
    uint8_t *data = (uint8_t *)1;
    size_t length = 9;
    CHECK_STATUS(backlot_contents(real, "Levels/1.txt", NULL, NULL, &length), BACKLOT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(backlot_contents(real, NULL, NULL, &data, &length), BACKLOT_ERR_INVALID_ARGUMENT);
    CHECK(data == NULL && length == 0, "outputs are cleared on failure");
    CHECK_STATUS(backlot_contents(real, "Levels/1.txt", NULL, &data, &length), BACKLOT_ERR_FILE_NOT_FOUND);
    CHECK_STATUS(backlot_ensure_local_availability(real, "\xff\xfe", NULL, NULL), BACKLOT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(backlot_ensure_local_availability(real, NULL, NULL, NULL), BACKLOT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(backlot_ensure_local_availability(real, "NoSuchPack", NULL, NULL), BACKLOT_ERR_ASSET_PACK_NOT_FOUND);
    CHECK_STATUS(backlot_unsubscribe(real, 424242), BACKLOT_ERR_INVALID_ARGUMENT);
    uint64_t subscription = 7;
    CHECK_STATUS(backlot_subscribe(real, NULL, NULL, NULL, &subscription), BACKLOT_ERR_INVALID_ARGUMENT);
    int fd = 5;
    CHECK_STATUS(backlot_descriptor(real, "../../etc/passwd", NULL, &fd), BACKLOT_ERR_FILE_NOT_FOUND);
    CHECK(fd == -1, "no descriptor on failure");
    backlot_url_download download;
    backlot_url_download_init(&download);
    CHECK_STATUS(backlot_schedule_download(real, &download), BACKLOT_ERR_INVALID_ARGUMENT);
    download.identifier = "x";
    download.url = "https://127.0.0.1/x";
    download.file_size = -3;
    CHECK_STATUS(backlot_schedule_download(real, &download), BACKLOT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(backlot_with_exclusive_control(real, 1.0, NULL, NULL), BACKLOT_ERR_INVALID_ARGUMENT);
    backlot_pack_info info;
    memset(&info, 0, sizeof info);
    CHECK_STATUS(backlot_asset_pack(real, "Levels", &info), BACKLOT_ERR_INVALID_ARGUMENT); /* size 0 */
    backlot_config_init(NULL);
    backlot_pack_info_init(NULL);
    backlot_pack_info_clear(NULL);
    backlot_manager_close(real);
    free(container);
}

/* ---- installing and reading ---------------------------------------------------------------- */

struct progress_log {
    int calls;
    uint64_t last_completed, last_total;
    int went_backwards;
    int reentered;
    backlot_manager *manager;
};

static void log_progress(void *context, uint64_t completed, uint64_t total) {
    struct progress_log *log = context;
    if (completed < log->last_completed) log->went_backwards = 1;
    log->calls++;
    log->last_completed = completed;
    log->last_total = total;
    /* A callback may call back into the library. */
    char **ids = NULL;
    size_t count = 0;
    if (log->manager != NULL && backlot_installed_packs(log->manager, &ids, &count) == BACKLOT_OK) log->reentered++;
    backlot_free(ids);
}

static void test_install_and_read(void) {
    char *container = new_container();
    backlot_manager *m = open_manager(container, env("BACKLOT_TEST_ROOT_PUB"), 0);
    struct progress_log log = {0};
    log.manager = m;
    backlot_fetch_report report;
    memset(&report, 0, sizeof report);
    report.size = sizeof report;
    CHECK_STATUS(backlot_last_fetch(m, "Levels", &report), BACKLOT_ERR_NOT_FOUND);
    CHECK_STATUS(backlot_ensure_local_availability(m, "Levels", log_progress, &log), BACKLOT_OK);
    CHECK_STATUS(backlot_last_fetch(m, "Levels", &report), BACKLOT_OK);
    CHECK(report.size == sizeof report && report.version == 1 && report.origin_bytes > 3000000 &&
              report.peer_bytes == 0 && report.peer_chunks == 0 && report.origin_chunks > 0,
          "the fetch report: version %lld, %llu bytes from the origin, %llu from peers", (long long)report.version,
          (unsigned long long)report.origin_bytes, (unsigned long long)report.peer_bytes);
    CHECK(log.calls >= 1 && log.last_completed == log.last_total && log.last_total > 3000000,
          "progress: %d calls, last %llu of %llu", log.calls, (unsigned long long)log.last_completed,
          (unsigned long long)log.last_total);
    CHECK(!log.went_backwards, "progress never goes backwards");
    CHECK(log.reentered == log.calls, "every progress callback called into the library");
    CHECK(same_as_source(m, "Levels/1.txt"), "Levels/1.txt");
    CHECK(same_as_source(m, "Levels/big.bin"), "Levels/big.bin");
    /* Installed: a second call downloads nothing and returns at once. */
    CHECK_STATUS(backlot_ensure_local_availability(m, "Levels", NULL, NULL), BACKLOT_OK);

    int fd = -1;
    CHECK_STATUS(backlot_descriptor(m, "Levels/big.bin", "Levels", &fd), BACKLOT_OK);
    char *source = join(env("BACKLOT_TEST_SOURCE"), "Levels/big.bin");
    size_t expected_length = 0;
    uint8_t *expected = read_file(source, &expected_length);
    if (fd >= 0 && expected != NULL) {
        struct stat st;
        fstat(fd, &st);
        CHECK((size_t)st.st_size == expected_length, "descriptor size");
        void *mapped = mmap(NULL, expected_length, PROT_READ, MAP_PRIVATE, fd, 0);
        CHECK(mapped != MAP_FAILED && memcmp(mapped, expected, expected_length) == 0, "mapped bytes");
        if (mapped != MAP_FAILED) munmap(mapped, expected_length);
        CHECK(write(fd, "x", 1) == -1, "the descriptor is read-only");
        close(fd);
    }
    free(expected);
    free(source);

    uint8_t *empty = NULL;
    size_t empty_length = 9;
    CHECK_STATUS(backlot_contents(m, "Levels/empty.txt", NULL, &empty, &empty_length), BACKLOT_OK);
    CHECK(empty != NULL && empty_length == 0 && empty[0] == 0, "an empty file: a 1-byte buffer holding 0");
    backlot_free(empty);

    char *path = NULL;
    CHECK_STATUS(backlot_path(m, "Levels/1.txt", NULL, &path), BACKLOT_OK);
    CHECK(path != NULL && access(path, R_OK) == 0 && strstr(path, container) == path, "path %s", path ? path : "");
    backlot_free(path);

    char **ids = NULL;
    size_t count = 0;
    CHECK_STATUS(backlot_installed_packs(m, &ids, &count), BACKLOT_OK);
    CHECK(count == 1 && strcmp(ids[0], "Levels") == 0 && ids[1] == NULL, "installed packs");
    backlot_free(ids);
    CHECK_STATUS(backlot_all_asset_packs(m, &ids, &count), BACKLOT_OK);
    CHECK(count >= 1, "the catalog offers packs");
    backlot_free(ids);

    backlot_pack_info info;
    backlot_pack_info_init(&info);
    CHECK_STATUS(backlot_asset_pack(m, "Levels", &info), BACKLOT_OK);
    CHECK(info.id != NULL && strcmp(info.id, "Levels") == 0 && info.version >= 1 && info.download_size > 3000000,
          "pack info");
    CHECK((info.status & BACKLOT_PACK_DOWNLOADED) && (info.status & BACKLOT_PACK_UP_TO_DATE), "status %u", info.status);
    backlot_pack_info_clear(&info);
    CHECK(info.id == NULL, "cleared");

    char *device = NULL;
    CHECK_STATUS(backlot_device_id(m, &device), BACKLOT_OK);
    CHECK(device != NULL && strlen(device) == 36, "device id");
    backlot_free(device);
    char *profile = NULL;
    CHECK_STATUS(backlot_device_profile(m, &profile), BACKLOT_OK);
    CHECK(profile != NULL && strncmp(profile, "textureFormat=", 14) == 0 && strstr(profile, ",deviceTier=") != NULL,
          "device profile: %s", profile ? profile : "(null)");
    backlot_free(profile);
    {
        char *other = new_container();
        backlot_config config;
        backlot_config_init(&config);
        config.container_path = other;
        config.catalog_url = env("BACKLOT_TEST_CATALOG_URL");
        config.trusted_key_path = env("BACKLOT_TEST_ROOT_PUB");
        config.ca_path = env("BACKLOT_TEST_CA");
        config.device_profile = "textureFormat=etc2+astc,deviceTier=high";
        backlot_manager *chosen = NULL;
        CHECK_STATUS(backlot_manager_open(&config, &chosen), BACKLOT_OK);
        CHECK_STATUS(backlot_device_profile(chosen, &profile), BACKLOT_OK);
        CHECK(profile != NULL && strcmp(profile, "textureFormat=astc+etc2,deviceTier=2") == 0, "the profile set: %s",
              profile ? profile : "(null)");
        backlot_free(profile);
        backlot_manager_close(chosen);
        free(other);
    }

    CHECK_STATUS(backlot_remove(m, "Levels"), BACKLOT_OK);
    CHECK_STATUS(backlot_installed_packs(m, &ids, &count), BACKLOT_OK);
    CHECK(count == 0 && ids == NULL, "removed");
    backlot_manager_close(m);
    free(container);
}

static void test_closed_handle(void) {
    char *container = new_container();
    backlot_manager *m = open_manager(container, env("BACKLOT_TEST_ROOT_PUB"), 0);
    backlot_manager_close(m);
    CHECK_STATUS(backlot_ensure_local_availability(m, "Levels", NULL, NULL), BACKLOT_ERR_CLOSED_HANDLE);
    char **ids = NULL;
    size_t count = 0;
    CHECK_STATUS(backlot_installed_packs(m, &ids, &count), BACKLOT_ERR_CLOSED_HANDLE);
    backlot_manager_close(m); /* twice: nothing */
    /* A new manager may reuse the slot: the old handle stays closed. */
    backlot_manager *other = open_manager(container, env("BACKLOT_TEST_ROOT_PUB"), 0);
    CHECK(other != m, "a new handle differs from a closed one");
    CHECK_STATUS(backlot_installed_packs(m, &ids, &count), BACKLOT_ERR_CLOSED_HANDLE);
    CHECK_STATUS(backlot_installed_packs(other, &ids, &count), BACKLOT_OK);
    backlot_free(ids);
    backlot_manager_close(other);
    free(container);
}

/* ---- threads -------------------------------------------------------------------------------- */

struct worker {
    backlot_manager *shared; /* NULL: open a manager of its own */
    int ok;
};

static void *install_and_compare(void *argument) {
    struct worker *w = argument;
    char *container = NULL;
    backlot_manager *m = w->shared;
    if (m == NULL) {
        container = new_container();
        m = open_manager(container, env("BACKLOT_TEST_ROOT_PUB"), 0);
    }
    w->ok = backlot_ensure_local_availability(m, "Levels", NULL, NULL) == BACKLOT_OK &&
            same_as_source(m, "Levels/big.bin") && same_as_source(m, "Levels/1.txt");
    if (!w->ok) fprintf(stderr, "capi_test: a worker failed: %s\n", backlot_last_error_message());
    if (w->shared == NULL) {
        backlot_manager_close(m);
        free(container);
    }
    return NULL;
}

static void test_threads(void) {
    enum { THREADS = 8 };
    pthread_t threads[THREADS];
    struct worker workers[THREADS];
    char *container = new_container();
    backlot_manager *shared = open_manager(container, env("BACKLOT_TEST_ROOT_PUB"), 0);
    for (int round = 0; round < 2; round++) {
        /* Round 0: eight threads on one handle; round 1: eight handles, one each. */
        for (int i = 0; i < THREADS; i++) {
            workers[i].shared = round == 0 ? shared : NULL;
            workers[i].ok = 0;
            pthread_create(&threads[i], NULL, install_and_compare, &workers[i]);
        }
        for (int i = 0; i < THREADS; i++) {
            pthread_join(threads[i], NULL);
            CHECK(workers[i].ok, "round %d, thread %d", round, i);
        }
    }
    backlot_manager_close(shared);
    free(container);
}

/* ---- cancelling, closing while a download runs ------------------------------------------------ */

struct running {
    backlot_manager *m;
    atomic_ullong completed;
    atomic_int started;
    backlot_status result;
    char message[512];
};

static void note_progress(void *context, uint64_t completed, uint64_t total) {
    (void)total;
    struct running *r = context;
    atomic_store(&r->completed, completed);
    atomic_store(&r->started, 1);
}

static void *run_install(void *argument) {
    struct running *r = argument;
    r->result = backlot_ensure_local_availability(r->m, "Levels", note_progress, r);
    snprintf(r->message, sizeof r->message, "%s", backlot_last_error_message());
    return NULL;
}

/* Waits until the download has installed some bytes (at most 60 s). */
static int wait_for_bytes(struct running *r) {
    double deadline = now_seconds() + 60;
    while (atomic_load(&r->completed) == 0 && now_seconds() < deadline) usleep(10000);
    return atomic_load(&r->completed) > 0;
}

static void test_cancel_and_close(void) {
    for (int closing = 0; closing < 2; closing++) {
        char *container = new_container();
        struct running r;
        memset(&r, 0, sizeof r);
        /* 3 MB at 256 KB/s: about 12 s, so the cancel lands mid-download. */
        r.m = open_manager(container, env("BACKLOT_TEST_ROOT_PUB"), 256 * 1024);
        pthread_t t;
        pthread_create(&t, NULL, run_install, &r);
        CHECK(wait_for_bytes(&r), "the limited download made progress");
        if (closing)
            backlot_manager_close(r.m);
        else
            CHECK_STATUS(backlot_cancel(r.m, "Levels"), BACKLOT_OK);
        pthread_join(t, NULL);
        CHECK(r.result == BACKLOT_ERR_CANCELLED, "%s: the install returned %s: %s", closing ? "close" : "cancel",
              backlot_status_name(r.result), r.message);
        if (!closing) backlot_manager_close(r.m);
        /* Nothing was installed; a new attempt without a limit finishes, from what arrived. */
        backlot_manager *again = open_manager(container, env("BACKLOT_TEST_ROOT_PUB"), 0);
        char **ids = NULL;
        size_t count = 9;
        CHECK_STATUS(backlot_installed_packs(again, &ids, &count), BACKLOT_OK);
        CHECK(count == 0, "a cancelled download installs nothing");
        CHECK_STATUS(backlot_ensure_local_availability(again, "Levels", NULL, NULL), BACKLOT_OK);
        CHECK(same_as_source(again, "Levels/big.bin"), "after a cancelled attempt");
        backlot_manager_close(again);
        free(container);
    }
}

/* ---- refused catalogs, errors per thread ------------------------------------------------------ */

static void *fail_on_another_thread(void *argument) {
    backlot_manager *m = argument;
    CHECK_STATUS(backlot_ensure_local_availability(m, "NoSuchPack", NULL, NULL), BACKLOT_ERR_UNTRUSTED);
    return NULL;
}

static void test_refused_catalog(void) {
    char *container = new_container();
    backlot_manager *m = open_manager(container, env("BACKLOT_TEST_WRONG_ROOT_PUB"), 0);
    CHECK_STATUS(backlot_ensure_local_availability(m, "Levels", NULL, NULL), BACKLOT_ERR_UNTRUSTED);
    const char *message = backlot_last_error_message();
    CHECK(strlen(message) > 10, "the refusal says why: %s", message);
    char *kept = strdup(message);
    pthread_t t;
    pthread_create(&t, NULL, fail_on_another_thread, m);
    pthread_join(t, NULL);
    CHECK(strcmp(kept, backlot_last_error_message()) == 0, "another thread's failure leaves this one's message");
    CHECK(backlot_last_error_status() == BACKLOT_ERR_UNTRUSTED, "last status");
    char **ids = NULL;
    size_t count = 9;
    CHECK_STATUS(backlot_installed_packs(m, &ids, &count), BACKLOT_OK);
    CHECK(count == 0, "nothing installed from a refused catalog");
    free(kept);
    backlot_manager_close(m);
    free(container);
}

/* ---- status updates ---------------------------------------------------------------------------- */

struct update_log {
    pthread_mutex_t lock;
    int kinds[4096];
    int count;
    int out_of_order;
    backlot_manager *manager;
    int reentered;
};

static void record_update(void *context, const backlot_status_update *u) {
    struct update_log *log = context;
    char *device = NULL;
    if (backlot_device_id(log->manager, &device) == BACKLOT_OK) log->reentered++;
    backlot_free(device);
    pthread_mutex_lock(&log->lock);
    if (u->size < sizeof *u || strcmp(u->pack_id, "Levels") != 0) log->out_of_order = 1;
    if (log->count < 4096) log->kinds[log->count++] = u->kind;
    pthread_mutex_unlock(&log->lock);
}

struct self_ending {
    backlot_manager *manager;
    uint64_t subscription;
    atomic_int calls;
    backlot_status ended;
};

/* Unsubscribes itself on its first update (the header allows it). */
static void end_on_first(void *context, const backlot_status_update *u) {
    (void)u;
    struct self_ending *s = context;
    if (atomic_fetch_add(&s->calls, 1) == 0) s->ended = backlot_unsubscribe(s->manager, s->subscription);
}

static int wait_for_kind(struct update_log *log, int kind) {
    double deadline = now_seconds() + 60;
    for (;;) {
        pthread_mutex_lock(&log->lock);
        int seen = 0;
        for (int i = 0; i < log->count; i++) seen |= log->kinds[i] == kind;
        pthread_mutex_unlock(&log->lock);
        if (seen) return 1;
        if (now_seconds() > deadline) return 0;
        usleep(10000);
    }
}

static void test_status_updates(void) {
    char *container = new_container();
    backlot_manager *m = open_manager(container, env("BACKLOT_TEST_ROOT_PUB"), 0);
    struct update_log log;
    memset(&log, 0, sizeof log);
    pthread_mutex_init(&log.lock, NULL);
    log.manager = m;
    uint64_t subscription = 0;
    CHECK_STATUS(backlot_subscribe(m, "Levels", record_update, &log, &subscription), BACKLOT_OK);
    CHECK(subscription != 0, "a subscription number");
    CHECK_STATUS(backlot_ensure_local_availability(m, "Levels", NULL, NULL), BACKLOT_OK);
    CHECK(wait_for_kind(&log, BACKLOT_UPDATE_FINISHED), "a FINISHED update arrives");
    CHECK_STATUS(backlot_unsubscribe(m, subscription), BACKLOT_OK);
    pthread_mutex_lock(&log.lock);
    int n = log.count;
    CHECK(n >= 3 && log.kinds[0] == BACKLOT_UPDATE_BEGAN && log.kinds[1] == BACKLOT_UPDATE_DOWNLOADING &&
              log.kinds[n - 1] == BACKLOT_UPDATE_FINISHED,
          "updates in order: %d of them, first %d, last %d", n, n ? log.kinds[0] : 0, n ? log.kinds[n - 1] : 0);
    for (int i = 1; i + 1 < n; i++)
        CHECK(log.kinds[i] == BACKLOT_UPDATE_DOWNLOADING, "update %d is %d", i, log.kinds[i]);
    CHECK(!log.out_of_order, "every update names Levels and has its size");
    CHECK(log.reentered == n, "every callback called into the library");
    pthread_mutex_unlock(&log.lock);
    /* After unsubscribing, nothing more arrives. */
    CHECK_STATUS(backlot_remove(m, "Levels"), BACKLOT_OK);
    CHECK_STATUS(backlot_ensure_local_availability(m, "Levels", NULL, NULL), BACKLOT_OK);
    usleep(300000);
    pthread_mutex_lock(&log.lock);
    CHECK(log.count == n, "no update after backlot_unsubscribe (%d then %d)", n, log.count);
    pthread_mutex_unlock(&log.lock);
    /* A subscription that ends itself from its callback, while downloads run: no deadlock, and
       no call after the first (ten rounds: the race it guards against is timing-dependent). */
    for (int round = 0; round < 10; round++) {
        struct self_ending s;
        memset(&s, 0, sizeof s);
        s.manager = m;
        s.ended = -1;
        uint64_t number = 0;
        CHECK_STATUS(backlot_subscribe(m, NULL, end_on_first, &s, &number), BACKLOT_OK);
        s.subscription = number;
        CHECK_STATUS(backlot_remove(m, "Levels"), BACKLOT_OK);
        CHECK_STATUS(backlot_ensure_local_availability(m, "Levels", NULL, NULL), BACKLOT_OK);
        usleep(50000);
        CHECK(atomic_load(&s.calls) == 1 && s.ended == BACKLOT_OK, "round %d: %d calls, unsubscribe gave %d", round,
              atomic_load(&s.calls), s.ended);
    }
    backlot_manager_close(m);
    pthread_mutex_destroy(&log.lock);
    free(container);
}

/* ---- URL downloads (BADownloadManager) ------------------------------------------------------ */

struct delegate_log {
    pthread_mutex_t lock;
    int began, finished, failed;
    char copy[4096];
    size_t copied;
    char failure[512];
};

static void on_began(void *context, const char *identifier) {
    struct delegate_log *log = context;
    (void)identifier;
    pthread_mutex_lock(&log->lock);
    log->began++;
    pthread_mutex_unlock(&log->lock);
}

static void on_finished(void *context, const char *identifier, const char *file_path) {
    struct delegate_log *log = context;
    (void)identifier;
    size_t length = 0;
    uint8_t *data = read_file(file_path, &length); /* moved or copied before returning */
    pthread_mutex_lock(&log->lock);
    if (data != NULL) {
        log->copied = length < sizeof log->copy ? length : sizeof log->copy;
        memcpy(log->copy, data, log->copied);
    }
    log->finished++;
    pthread_mutex_unlock(&log->lock);
    free(data);
}

static void on_failed(void *context, const char *identifier, backlot_status error, const char *message) {
    struct delegate_log *log = context;
    (void)identifier;
    pthread_mutex_lock(&log->lock);
    snprintf(log->failure, sizeof log->failure, "%s: %s", backlot_status_name(error), message);
    log->failed++;
    pthread_mutex_unlock(&log->lock);
}

static backlot_status exclusive_body(void *context) {
    int *ran = context;
    (*ran)++;
    return *ran == 1 ? BACKLOT_OK : BACKLOT_ERR_CONFLICT;
}

static void test_url_downloads(void) {
    char *container = new_container();
    backlot_manager *m = open_manager(container, env("BACKLOT_TEST_ROOT_PUB"), 0);
    struct delegate_log log;
    memset(&log, 0, sizeof log);
    pthread_mutex_init(&log.lock, NULL);
    backlot_download_delegate delegate;
    backlot_download_delegate_init(&delegate);
    delegate.began = on_began;
    delegate.finished = on_finished;
    delegate.failed = on_failed;
    CHECK_STATUS(backlot_set_download_delegate(m, &delegate, &log), BACKLOT_OK);

    backlot_url_download download;
    backlot_url_download_init(&download);
    download.identifier = "keys";
    download.url = env("BACKLOT_TEST_DOWNLOAD_URL");
    CHECK_STATUS(backlot_cancel_download(m, "keys"), BACKLOT_ERR_BA(101));
    CHECK_STATUS(backlot_schedule_download(m, &download), BACKLOT_OK);
    CHECK_STATUS(backlot_schedule_download(m, &download), BACKLOT_ERR_BA(100));
    char **ids = NULL;
    size_t count = 0;
    CHECK_STATUS(backlot_current_downloads(m, &ids, &count), BACKLOT_OK);
    CHECK(count == 1 && strcmp(ids[0], "keys") == 0, "the scheduled download is current");
    backlot_free(ids);
    CHECK_STATUS(backlot_start_foreground_download(m, &download), BACKLOT_OK);
    double deadline = now_seconds() + 60;
    int done = 0;
    while (!done && now_seconds() < deadline) {
        pthread_mutex_lock(&log.lock);
        done = log.finished + log.failed > 0;
        pthread_mutex_unlock(&log.lock);
        if (!done) usleep(10000);
    }
    pthread_mutex_lock(&log.lock);
    CHECK(log.finished == 1 && log.failed == 0, "the download finished (%d) or failed (%d: %s)", log.finished,
          log.failed, log.failure);
    CHECK(log.copied > 10 && memchr(log.copy, '{', log.copied) != NULL, "the delegate read the file (%zu bytes)",
          log.copied);
    pthread_mutex_unlock(&log.lock);
    CHECK_STATUS(backlot_current_downloads(m, &ids, &count), BACKLOT_OK);
    CHECK(count == 0, "a finished download is not current");
    backlot_free(ids);

    int ran = 0;
    CHECK_STATUS(backlot_with_exclusive_control(m, 5.0, exclusive_body, &ran), BACKLOT_OK);
    CHECK_STATUS(backlot_with_exclusive_control(m, -1, exclusive_body, &ran), BACKLOT_ERR_CONFLICT);
    CHECK(strstr(backlot_last_error_message(), "BACKLOT_ERR_CONFLICT") != NULL, "the body's status is the last error: %s",
          backlot_last_error_message());
    CHECK_STATUS(backlot_with_exclusive_control(m, NAN, exclusive_body, &ran), BACKLOT_ERR_INVALID_ARGUMENT);
    CHECK(ran == 2, "the body ran under exclusive control twice (never for a NaN timeout)");
    CHECK_STATUS(backlot_set_download_delegate(m, NULL, NULL), BACKLOT_OK);
    backlot_manager_close(m);
    pthread_mutex_destroy(&log.lock);
    free(container);
}

/* ---- after the script published version 2 ------------------------------------------------------ */

static int after_update(const char *container) {
    backlot_manager *m = open_manager(container, env("BACKLOT_TEST_ROOT_PUB"), 0);
    char **ids = NULL;
    size_t count = 0;
    CHECK_STATUS(backlot_check_for_updates(m, &ids, &count), BACKLOT_OK);
    CHECK(count == 1 && ids != NULL && strcmp(ids[0], "Levels") == 0, "Levels is updated (%zu updated)", count);
    backlot_free(ids);
    CHECK(same_as_source(m, "Levels/1.txt"), "the new version's Levels/1.txt");
    CHECK_STATUS(backlot_check_for_updates(m, &ids, &count), BACKLOT_OK);
    CHECK(count == 0 && ids == NULL, "nothing more to update");
    backlot_pack_info info;
    backlot_pack_info_init(&info);
    CHECK_STATUS(backlot_asset_pack(m, "Levels", &info), BACKLOT_OK);
    CHECK(info.version == 2, "version %lld", (long long)info.version);
    backlot_pack_info_clear(&info);
    backlot_manager_close(m);
    return atomic_load(&failures) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && strcmp(argv[1], "--after-update") == 0) return after_update(argv[2]);
    if (argc != 1 && !(argc == 3 && strcmp(argv[1], "--keep") == 0)) {
        fprintf(stderr, "usage: capi_test [--keep CONTAINER] | --after-update CONTAINER\n");
        return 2;
    }
    struct {
        const char *name;
        void (*run)(void);
    } tests[] = {
        {"version and names", test_version_and_names},
        {"struct sizes", test_struct_sizes},
        {"invalid arguments", test_invalid_arguments},
        {"install and read", test_install_and_read},
        {"closed handle", test_closed_handle},
        {"threads", test_threads},
        {"cancel and close", test_cancel_and_close},
        {"refused catalog", test_refused_catalog},
        {"status updates", test_status_updates},
        {"URL downloads", test_url_downloads},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        int before = atomic_load(&failures);
        double start = now_seconds();
        tests[i].run();
        printf("capi_test: %s: %s (%.1f s)\n", tests[i].name, atomic_load(&failures) == before ? "passed" : "FAILED",
               now_seconds() - start);
    }
    if (argc == 3) {
        /* A container with Levels version 1 installed, for --after-update. */
        backlot_manager *m = open_manager(argv[2], env("BACKLOT_TEST_ROOT_PUB"), 0);
        CHECK_STATUS(backlot_ensure_local_availability(m, "Levels", NULL, NULL), BACKLOT_OK);
        backlot_manager_close(m);
    }
    int n = atomic_load(&failures);
    printf("capi_test: %s\n", n == 0 ? "every check passed" : "some checks FAILED");
    return n == 0 ? 0 : 1;
}
