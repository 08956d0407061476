/*
 * backlot.h: the C interface of Backlot's client (libbacklot), for C, C++ and every language that
 * calls C (C#, Rust, Python, Go, Lua, …). C99; C++ includes it as it is (extern "C").
 *
 * The same client as Backlot's Swift API (BacklotClient): an asset-pack manager over a container
 * folder that a signed catalog of a Backlot repository feeds, with Apple's names where Apple has
 * one (ensureLocalAvailability, checkForUpdates, statusUpdates, BADownloadManager). Everything it
 * guarantees a Swift app holds here: signatures and hashes are verified before any byte is used,
 * an interrupted download resumes, an update fetches only what changed, a failure leaves the
 * installed release untouched.
 *
 * Rules of the interface (docs/c-api.md):
 *  - Every function that can fail returns a backlot_status: BACKLOT_OK (0) or a code below. After
 *    a failure, backlot_last_error_message() says what went wrong and what to do, for the calling
 *    thread, until that thread's next failing call.
 *  - Strings in are UTF-8 and NUL-terminated; they are copied before the call returns.
 *  - Buffers out (file contents, lists of IDs) are allocated by the library and freed by the
 *    caller with backlot_free(). A list of strings (char **) is one block: one backlot_free().
 *  - Handles are opaque. A NULL, forged or closed handle is refused (BACKLOT_ERR_INVALID_ARGUMENT,
 *    BACKLOT_ERR_CLOSED_HANDLE), never followed: they are entries of a table with generations.
 *  - Every function may be called from any thread, on one handle or on several, at once.
 *  - Callbacks run on the library's threads or, for progress and exclusive control, on the
 *    thread that called; they may call back into the library (but must not close the handle
 *    they were given for).
 *  - Structs that may grow start with a `size` member. Their _init functions (inline, below) call
 *    the library's _init_size function with the struct's size as the caller's header has it, so
 *    that the library fills exactly that much: a caller built against an older, smaller struct
 *    keeps working with a newer library (members it does not know keep their defaults), and a
 *    newer caller's members are ignored by an older library. Bindings in other languages call
 *    the _init_size functions with their own struct's size.
 *
 *     backlot_config config;
 *     backlot_config_init(&config);
 *     config.container_path = "/var/lib/mygame/assets";
 *     config.catalog_url = "https://cdn.example.com/v1/apps/com.example.game/production/catalog.json";
 *     config.trusted_key_path = "/usr/share/mygame/root.pub";
 *     backlot_manager *manager;
 *     if (backlot_manager_open(&config, &manager) != BACKLOT_OK) {
 *         fprintf(stderr, "%s\n", backlot_last_error_message());
 *         return 1;
 *     }
 *     if (backlot_ensure_local_availability(manager, "Levels", NULL, NULL) == BACKLOT_OK) {
 *         uint8_t *data; size_t length;
 *         if (backlot_contents(manager, "Levels/1.json", NULL, &data, &length) == BACKLOT_OK) {
 *             use(data, length);
 *             backlot_free(data);
 *         }
 *     }
 *     backlot_manager_close(manager);
 */
#ifndef BACKLOT_BACKLOT_H
#define BACKLOT_BACKLOT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this interface: raised when a function or a struct member is added. */
#define BACKLOT_ABI_VERSION 3

/* ---- Status codes ------------------------------------------------------------------------ */

/* What a call did: BACKLOT_OK or one of the codes below. The numbers never change. */
typedef int32_t backlot_status;

enum {
    BACKLOT_OK = 0,
    /* A NULL pointer where one is needed, a string that is not UTF-8, a value out of range. */
    BACKLOT_ERR_INVALID_ARGUMENT = 1,
    /* The handle was closed (backlot_manager_close), or belongs to no open manager. */
    BACKLOT_ERR_CLOSED_HANDLE = 2,
    /* An unexpected failure inside the library (a bug: please report the message). */
    BACKLOT_ERR_INTERNAL = 3,

    /* The codes of Backlot's errors (BacklotError.Code), one each. */
    BACKLOT_ERR_USAGE = 10,             /* a configuration value of the wrong shape (a catalog URL) */
    BACKLOT_ERR_INVALID_MANIFEST = 11,
    BACKLOT_ERR_INVALID_JSON = 12,
    BACKLOT_ERR_INVALID_PACK_ID = 13,
    BACKLOT_ERR_INVALID_SOURCE = 14,
    BACKLOT_ERR_INVALID_INPUT = 15,     /* a file is not what it must be (a key file, a container) */
    BACKLOT_ERR_CORRUPT_ARCHIVE = 16,   /* an archive or a chunk failed its SHA-256 */
    BACKLOT_ERR_IO = 17,                /* an operating-system call or a transfer failed */
    BACKLOT_ERR_ALREADY_EXISTS = 18,
    BACKLOT_ERR_LIBRARY = 19,           /* zstd, OpenSSL or libcurl failed */
    BACKLOT_ERR_CHECK_FAILED = 20,
    BACKLOT_ERR_UNTRUSTED = 21,         /* signed metadata failed verification */
    BACKLOT_ERR_CONFLICT = 22,
    BACKLOT_ERR_NOT_FOUND = 23,
    BACKLOT_ERR_FORBIDDEN = 24,
    BACKLOT_ERR_QUOTA_EXCEEDED = 25,
    BACKLOT_ERR_CANCELLED = 26,         /* backlot_cancel, or the handle was closed meanwhile */
    BACKLOT_ERR_STALE_CATALOG = 27,     /* the server's catalog is older than one already trusted */
    BACKLOT_ERR_UNAVAILABLE = 28,       /* a service cannot be reached now; try again later */
    BACKLOT_ERR_TLS = 29,               /* the server's certificate could not be verified */

    /* Apple's ManagedBackgroundAssetsError. */
    BACKLOT_ERR_ASSET_PACK_NOT_FOUND = 40,
    BACKLOT_ERR_FILE_NOT_FOUND = 41,

    /* Apple's BAErrorCode values, each at 1000 + Apple's number (BACKLOT_ERR_BA(101) is
       downloadNotScheduled). */
    BACKLOT_ERR_BA_BASE = 1000,
    BACKLOT_ERR_BA_DOWNLOAD_INVALID = 1000,
    BACKLOT_ERR_BA_CALL_FROM_EXTENSION_NOT_ALLOWED = 1050,
    BACKLOT_ERR_BA_CALL_FROM_INACTIVE_PROCESS_NOT_ALLOWED = 1051,
    BACKLOT_ERR_BA_CALLER_CONNECTION_NOT_ACCEPTED = 1055,
    BACKLOT_ERR_BA_CALLER_CONNECTION_INVALID = 1056,
    BACKLOT_ERR_BA_DOWNLOAD_ALREADY_SCHEDULED = 1100,
    BACKLOT_ERR_BA_DOWNLOAD_NOT_SCHEDULED = 1101,
    BACKLOT_ERR_BA_DOWNLOAD_FAILED_TO_START = 1102,
    BACKLOT_ERR_BA_DOWNLOAD_ALREADY_FAILED = 1103,
    BACKLOT_ERR_BA_DOWNLOAD_ESSENTIAL_DOWNLOAD_NOT_PERMITTED = 1109,
    BACKLOT_ERR_BA_DOWNLOAD_BACKGROUND_ACTIVITY_PROHIBITED = 1111,
    BACKLOT_ERR_BA_DOWNLOAD_WOULD_EXCEED_ALLOWANCE = 1112,
    BACKLOT_ERR_BA_DOWNLOAD_DOES_NOT_EXIST = 1113,
    BACKLOT_ERR_BA_SESSION_DOWNLOAD_DISALLOWED_BY_DOMAIN = 1202,
    BACKLOT_ERR_BA_SESSION_DOWNLOAD_DISALLOWED_BY_ALLOWANCE = 1203,
    BACKLOT_ERR_BA_SESSION_DOWNLOAD_ALLOWANCE_EXCEEDED = 1204,
    BACKLOT_ERR_BA_SESSION_DOWNLOAD_NOT_PERMITTED_BEFORE_APP_LAUNCH = 1206
};
#define BACKLOT_ERR_BA(apple_code) (BACKLOT_ERR_BA_BASE + (apple_code))

/* The last failure of the calling thread: its message, with what to do ("hint: …") on a second
   line when there is advice. Never NULL ("" before any failure); valid until the thread's next
   failing call. */
const char *backlot_last_error_message(void);

/* The status of the calling thread's last failure (BACKLOT_OK before any). */
backlot_status backlot_last_error_status(void);

/* The name of a status ("BACKLOT_ERR_UNTRUSTED"); "BACKLOT_ERR_UNKNOWN" for a number not listed.
   A static string: never freed. */
const char *backlot_status_name(backlot_status status);

/* Frees a buffer the library allocated (NULL does nothing). */
void backlot_free(void *buffer);

/* The library's version ("1.4.0"), a static string. */
const char *backlot_version(void);

/* The BACKLOT_ABI_VERSION the library was built with: a program (or a binding loading the
   library at run time) built against a newer header can check that what it needs is there. */
uint32_t backlot_abi_version(void);

/* ---- The manager ------------------------------------------------------------------------- */

/* Apple's AssetPackManager over one container: create it with backlot_manager_open. */
typedef struct backlot_manager backlot_manager;

typedef struct backlot_config {
    size_t size;                  /* set by backlot_config_init: sizeof(backlot_config) */
    const char *container_path;   /* the container folder (created when missing); required */
    const char *catalog_url;      /* https://HOST/…/v1/apps/APP/CHANNEL/catalog.json; required */
    const char *trusted_key_path; /* the repository's public key file (the server's root.pub); required */
    const char *ca_path;          /* a PEM CA file for the server (backlot serve's tls/ca.pem), or NULL */
    const char *app;              /* NULL: the APP of catalog_url; else it must be that */
    const char *channel;          /* NULL: the CHANNEL of catalog_url; else it must be that */
    uint64_t bandwidth_limit;     /* bytes per second per connection at most; 0: no limit */
    uint32_t stall_timeout;       /* seconds without progress before a request is retried; 0: 60 */
    int32_t retries;              /* attempts after the first for a failed request; -1: 4 */
    /* Added after the first release (a caller built before it passes a smaller size: 0 then). */
    int32_t no_reports;           /* 1: send no device report (docs/privacy.md); 0: send them */
    const char *device_profile;   /* what picks a pack's variant, "textureFormat=astc+etc2,deviceTier=high"
                                     (a key left out is detected; docs/variants.md), or NULL: detected */
    /* Added in ABI version 3: LAN peer caches (docs/peer-cache.md), asked for chunks before the
       origin; every chunk a peer sends is checked against the signed index. */
    const char *peers;            /* "http://HOST:PORT[,http://HOST:PORT…]" (at most 16), or NULL: none */
    int32_t discover_peers;       /* 1: also ask those advertised on the local link (Avahi); 0: not */
} backlot_config;

/* Fills the first `size` bytes of a configuration with its defaults (NULL strings, no limit, 60 s,
   4 retries) and sets config->size to `size`. Call it as backlot_config_init(&config). */
void backlot_config_init_size(backlot_config *config, size_t size);
static inline void backlot_config_init(backlot_config *config) { backlot_config_init_size(config, sizeof *config); }

/* Opens a manager. On success *out is the handle (close it with backlot_manager_close); on a
   failure *out is NULL. Nothing is downloaded yet. Errors: INVALID_ARGUMENT (a required member
   NULL, config->size smaller than the first release's), USAGE (not a catalog URL), INVALID_INPUT
   (a key file that is not a public key), IO (a key file that cannot be read, a container folder
   that cannot be made or opened). */
backlot_status backlot_manager_open(const backlot_config *config, backlot_manager **out);

/* Closes a manager: calls running on it on other threads end soon (downloads with
   BACKLOT_ERR_CANCELLED), later calls with the handle return BACKLOT_ERR_CLOSED_HANDLE. NULL or a
   closed handle does nothing. */
void backlot_manager_close(backlot_manager *manager);

/* The container's device identifier (for staged rollouts), into *out: free it with backlot_free. */
backlot_status backlot_device_id(backlot_manager *manager, char **out);

/* The device profile that picks the variant of a pack with variants this manager installs
   (config->device_profile over what was detected), as "textureFormat=astc+etc2,deviceTier=2",
   into *out: free it with backlot_free. */
backlot_status backlot_device_profile(backlot_manager *manager, char **out);

/* Progress of a download: bytes of the pack's files installed so far, and in all (the pack's
   install size: the catalog's figure until the pack's index is read, then the index's). Called on
   the thread that called backlot_ensure_local_availability, as chunks are installed (a chunk is
   about 1 MiB), and at least once a second while the call waits even when nothing moved (the same
   numbers again: a binding's chance to notice an interrupt), which it may call into (not to close). */
typedef void (*backlot_progress_fn)(void *context, uint64_t completed_bytes, uint64_t total_bytes);

/* Returns once the pack is installed and verified (Apple's ensureLocalAvailability(of:)): an
   installed release is used as it is; otherwise the catalog's current release is downloaded.
   Blocks. `progress` may be NULL; it is called as bytes are installed and once at the end with
   completed == total (0 and 0 when the pack was installed already). Errors: ASSET_PACK_NOT_FOUND, UNTRUSTED, STALE_CATALOG, TLS, IO,
   CORRUPT_ARCHIVE, CANCELLED (backlot_cancel from another thread, or the handle closed). */
backlot_status backlot_ensure_local_availability(
    backlot_manager *manager, const char *pack_id, backlot_progress_fn progress, void *context);

/* The same, but an installed release older than the catalog's is updated first
   (requireLatestVersion: true). */
backlot_status backlot_ensure_latest_availability(
    backlot_manager *manager, const char *pack_id, backlot_progress_fn progress, void *context);

/* What the last download of a pack through a manager did: where its bytes came from. */
typedef struct backlot_fetch_report {
    size_t size;              /* set by the caller: sizeof(backlot_fetch_report) */
    int64_t version;          /* the release installed */
    uint64_t origin_bytes;    /* bytes from the origin: the archive's header and index, delta frames, chunks */
    uint64_t peer_bytes;      /* bytes from LAN peer caches, each chunk checked against the signed index */
    uint64_t origin_chunks;   /* chunks downloaded whole from the origin */
    uint64_t peer_chunks;     /* chunks from peers */
    uint64_t reused_chunks;   /* chunks taken from the installed release */
    uint64_t linked_files;    /* files unchanged since the installed release, linked */
} backlot_fetch_report;

/* The last download of pack_id by this manager (backlot_ensure_*), into *report; set report->size
   to sizeof *report first (members past a smaller size are not written). Errors: NOT_FOUND when
   this manager has not downloaded that pack (one already installed downloads nothing). */
backlot_status backlot_last_fetch(backlot_manager *manager, const char *pack_id, backlot_fetch_report *report);

/* Cancels the running download of a pack, on any thread: its backlot_ensure_* call returns
   BACKLOT_ERR_CANCELLED and the installed release (if any) is kept; what arrived is kept for
   the next attempt. Returns BACKLOT_OK whether or not a download was running. */
backlot_status backlot_cancel(backlot_manager *manager, const char *pack_id);

/* Updates every installed pack the catalog has a newer release of, and removes those it no longer
   offers (Apple's checkForUpdates). *updating_ids (*count of them) names the packs updated: one
   block, free it with backlot_free (NULL when *count is 0). */
backlot_status backlot_check_for_updates(backlot_manager *manager, char ***updating_ids, size_t *count);

/* Removes an installed pack (its files go; a later ensure downloads it again). */
backlot_status backlot_remove(backlot_manager *manager, const char *pack_id);

/* A file of an installed pack, copied into *data (*length bytes; free it with backlot_free; a
   0-byte file gives a 1-byte buffer holding 0). `pack_id` NULL searches every installed pack, in
   the order of their IDs' bytes. Errors: FILE_NOT_FOUND, ASSET_PACK_NOT_FOUND, IO. */
backlot_status backlot_contents(
    backlot_manager *manager, const char *path, const char *pack_id, uint8_t **data, size_t *length);

/* A file of an installed pack, opened read-only into *fd (close it with close(2)): map it with
   mmap(2) to read a large file without a copy. Errors as backlot_contents. */
backlot_status backlot_descriptor(backlot_manager *manager, const char *path, const char *pack_id, int *fd);

/* Where a file of an installed pack is, into *out (free it with backlot_free). Errors as
   backlot_contents. */
backlot_status backlot_path(backlot_manager *manager, const char *path, const char *pack_id, char **out);

/* Apple's AssetPack.Status bits (an option set). */
enum {
    BACKLOT_PACK_DOWNLOAD_AVAILABLE = 1 << 0,
    BACKLOT_PACK_UPDATE_AVAILABLE = 1 << 1,
    BACKLOT_PACK_UP_TO_DATE = 1 << 2,
    BACKLOT_PACK_OUT_OF_DATE = 1 << 3,
    BACKLOT_PACK_OBSOLETE = 1 << 4,
    BACKLOT_PACK_DOWNLOADING = 1 << 5,
    BACKLOT_PACK_DOWNLOADED = 1 << 6
};

/* A pack the catalog offers this device (Apple's AssetPack). */
typedef struct backlot_pack_info {
    size_t size;          /* set by backlot_pack_info_init: sizeof(backlot_pack_info) */
    char *id;             /* owned by the struct: free with backlot_pack_info_clear */
    int64_t version;      /* the release's version */
    uint64_t download_size; /* bytes of its archive (what a first install downloads at most; the
                               install size, which progress counts, is the files' bytes) */
    uint32_t status;      /* BACKLOT_PACK_* bits */
} backlot_pack_info;

/* Fills the first `size` bytes with the initial state (id NULL) and sets info->size to `size`. */
void backlot_pack_info_init_size(backlot_pack_info *info, size_t size);
static inline void backlot_pack_info_init(backlot_pack_info *info) { backlot_pack_info_init_size(info, sizeof *info); }

/* Frees what a backlot_pack_info holds (not the struct itself) and sets it to its initial state. */
void backlot_pack_info_clear(backlot_pack_info *info);

/* The pack with this ID as the catalog offers it now, and its status against what is installed
   (Apple's assetPack(withID:) and status(ofAssetPackWithID:)). Reads the catalog. */
backlot_status backlot_asset_pack(backlot_manager *manager, const char *pack_id, backlot_pack_info *info);

/* The IDs of every pack the catalog offers this device, sorted (Apple's allAssetPacks): one
   block, free it with backlot_free. */
backlot_status backlot_all_asset_packs(backlot_manager *manager, char ***ids, size_t *count);

/* The IDs of the packs installed in the container, sorted (no network): one block. */
backlot_status backlot_installed_packs(backlot_manager *manager, char ***ids, size_t *count);

/* ---- Status updates (Apple's statusUpdates) ---------------------------------------------- */

enum {
    BACKLOT_UPDATE_BEGAN = 1,
    BACKLOT_UPDATE_DOWNLOADING = 2, /* sent again each time completed_bytes changes */
    BACKLOT_UPDATE_PAUSED = 3,      /* queued behind another process of the container */
    BACKLOT_UPDATE_FINISHED = 4,
    BACKLOT_UPDATE_FAILED = 5
};

typedef struct backlot_status_update {
    size_t size;              /* sizeof(backlot_status_update) of the library that sent it */
    int32_t kind;             /* BACKLOT_UPDATE_* */
    const char *pack_id;      /* valid during the call only */
    uint64_t completed_bytes; /* for DOWNLOADING and FINISHED */
    uint64_t total_bytes;
    backlot_status error;     /* for FAILED: the failure's status; else BACKLOT_OK */
    const char *error_message; /* for FAILED: its message; else ""; valid during the call only */
} backlot_status_update;

/* Called for each update, in order, on one thread of the library's per subscription that lives
   as long as the subscription. */
typedef void (*backlot_status_fn)(void *context, const backlot_status_update *update);

/* Subscribes to the updates of one pack's downloads (`pack_id`) or of every pack (NULL). *out is
   the subscription's number, for backlot_unsubscribe. */
backlot_status backlot_subscribe(
    backlot_manager *manager, const char *pack_id, backlot_status_fn callback, void *context, uint64_t *out);

/* Ends a subscription: once it returns, its callback is not called again (unless called from that
   very callback, which then returns normally). */
backlot_status backlot_unsubscribe(backlot_manager *manager, uint64_t subscription);

/* ---- URL downloads (Apple's BADownloadManager) ------------------------------------------- */

typedef struct backlot_url_download {
    size_t size;             /* set by backlot_url_download_init */
    const char *identifier;  /* unique in the container; required */
    const char *url;         /* https:// (or http:// to loopback); required */
    int64_t file_size;       /* the size the server will send, or -1 when unknown */
    int32_t essential;       /* nonzero: essential (before the app's first launch) */
    int64_t priority;        /* higher runs first; 0 is Apple's default */
} backlot_url_download;

/* Fills the first `size` bytes with the defaults (NULL strings, file_size -1, not essential,
   priority 0) and sets download->size to `size`. */
void backlot_url_download_init_size(backlot_url_download *download, size_t size);
static inline void backlot_url_download_init(backlot_url_download *download) {
    backlot_url_download_init_size(download, sizeof *download);
}

/* Schedules a download for the background agent (or this process) to run; its outcome goes to the
   delegate (backlot_set_download_delegate) or to the downloader extension. Errors:
   BACKLOT_ERR_BA(100) already scheduled, INVALID_ARGUMENT, … */
backlot_status backlot_schedule_download(backlot_manager *manager, const backlot_url_download *download);

/* Starts a download now, in this process (a scheduled one is promoted and goes on). */
backlot_status backlot_start_foreground_download(backlot_manager *manager, const backlot_url_download *download);

/* Cancels a scheduled or running download; what arrived is removed. BACKLOT_ERR_BA(101) when it
   is not scheduled. */
backlot_status backlot_cancel_download(backlot_manager *manager, const char *identifier);

/* The identifiers of the downloads scheduled or running, sorted: one block (backlot_free). */
backlot_status backlot_current_downloads(backlot_manager *manager, char ***identifiers, size_t *count);

/* What the app is told about its URL downloads (Apple's BADownloadManagerDelegate). Every member
   may be NULL. `finished` must move or copy the file before it returns: it is deleted afterwards. */
typedef struct backlot_download_delegate {
    size_t size; /* set by backlot_download_delegate_init */
    void (*began)(void *context, const char *identifier);
    void (*paused)(void *context, const char *identifier);
    void (*wrote)(void *context, const char *identifier, int64_t bytes_written, int64_t total_written,
                  int64_t total_expected);
    void (*failed)(void *context, const char *identifier, backlot_status error, const char *message);
    void (*finished)(void *context, const char *identifier, const char *file_path);
} backlot_download_delegate;

/* Fills the first `size` bytes with NULL members and sets delegate->size to `size`. */
void backlot_download_delegate_init_size(backlot_download_delegate *delegate, size_t size);
static inline void backlot_download_delegate_init(backlot_download_delegate *delegate) {
    backlot_download_delegate_init_size(delegate, sizeof *delegate);
}

/* Sets the delegate (copied) and its context; NULL removes it, and outcomes go to the downloader
   extension again. Once it returns (and once backlot_manager_close returns), no function of the
   previous delegate runs any more, so its context may be freed; called from within a delegate
   function, it does not wait for that one. */
backlot_status backlot_set_download_delegate(
    backlot_manager *manager, const backlot_download_delegate *delegate, void *context);

/* Runs `body` on the calling thread while holding the container's exclusive control of its
   downloads, shared by the app, its extension and the agent (Apple's withExclusiveControl). Waits
   at most `timeout` seconds (a negative timeout waits as long as it takes; 0 tries once):
   BACKLOT_ERR_UNAVAILABLE when not acquired by then. Returns what `body` returns otherwise (a
   status other than BACKLOT_OK is then the thread's last error, "the body returned …"). */
typedef backlot_status (*backlot_exclusive_fn)(void *context);
backlot_status backlot_with_exclusive_control(
    backlot_manager *manager, double timeout, backlot_exclusive_fn body, void *context);

#ifdef __cplusplus
}
#endif

#endif /* BACKLOT_BACKLOT_H */
