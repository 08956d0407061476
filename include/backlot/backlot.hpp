/*
 * backlot.hpp: a header-only C++17 wrapper over libbacklot's C interface (backlot.h), with the same
 * operations as RAII types: backlot::manager (move-only; closes its handle in its destructor),
 * backlot::subscription (unsubscribes in its destructor), backlot::file_descriptor (closes), and
 * backlot::error for every failure.
 *
 *     backlot::config config;
 *     config.container_path = "/var/lib/mygame/assets";
 *     config.catalog_url = "https://cdn.example.com/v1/apps/com.example.game/production/catalog.json";
 *     config.trusted_key_path = "/usr/share/mygame/root.pub";
 *     backlot::manager manager(config);
 *     manager.ensure_local_availability("Levels", [](std::uint64_t done, std::uint64_t total) { ... });
 *     std::vector<std::uint8_t> level = manager.contents("Levels/1.json");
 *
 * Build: g++ -std=c++17 app.cpp $(pkg-config --cflags --libs backlot)
 *
 * The rules of backlot.h, in C++ terms:
 *  - A failing call throws backlot::error: status() is the backlot_status, name() its
 *    backlot_status_name, message() the library's message (read on the failing thread right after
 *    the call), what() "NAME: message".
 *  - Every buffer the library hands out is owned by a std::unique_ptr whose deleter is
 *    backlot_free until it is copied into a std::string or std::vector (a string list is one block,
 *    freed once).
 *  - No exception crosses a C callback: what a progress or exclusive-control callback throws is
 *    caught in the trampoline (the download is cancelled), and rethrown once the blocking call
 *    returns. Status updates and URL-download delegates run on the library's threads: what they
 *    throw goes to the on_error handler given with them, and subscription::error() keeps the first.
 *  - A manager's handle is a number the library checks: after close() every call throws
 *    backlot::error with BACKLOT_ERR_CLOSED_HANDLE; a moved-from manager holds no handle and its
 *    calls throw BACKLOT_ERR_INVALID_ARGUMENT.
 *  - Strings go in as UTF-8, NUL-terminated: one holding a NUL byte is refused
 *    (BACKLOT_ERR_INVALID_ARGUMENT) rather than cut.
 *  - Every member function may be called from any thread.
 */
#ifndef BACKLOT_BACKLOT_HPP
#define BACKLOT_BACKLOT_HPP

#include <backlot/backlot.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <unistd.h>

namespace backlot {

/// A failure libbacklot reported (or this wrapper, for an argument it cannot pass).
class error : public std::runtime_error {
public:
    error(backlot_status status, std::string message)
        : std::runtime_error(compose(status, message)), status_(status), message_(std::move(message)) {}

    /// The status (BACKLOT_ERR_*).
    backlot_status status() const noexcept { return status_; }
    /// backlot_status_name of it ("BACKLOT_ERR_UNTRUSTED"): a static string.
    const char *name() const noexcept { return backlot_status_name(status_); }
    /// The library's message, with its "hint: …" line when there is one.
    const std::string &message() const noexcept { return message_; }

private:
    static std::string compose(backlot_status status, const std::string &message) {
        std::string text = backlot_status_name(status);
        if (!message.empty()) text += ": " + message;
        return text;
    }

    backlot_status status_;
    std::string message_;
};

/// The library's version ("1.4.0").
inline std::string version() { return backlot_version(); }

/// The name of a status ("BACKLOT_ERR_UNKNOWN" for a number not listed).
inline std::string status_name(backlot_status status) { return backlot_status_name(status); }

namespace detail {

struct free_deleter {
    void operator()(void *buffer) const noexcept { backlot_free(buffer); }
};

template <class T> using owned = std::unique_ptr<T, free_deleter>;

/// Throws the calling thread's last failure unless `status` is BACKLOT_OK.
inline void check(backlot_status status) {
    if (status != BACKLOT_OK) throw error(status, backlot_last_error_message());
}

/// A C string for `text`, refusing a NUL inside (the library would see a shorter string).
inline const char *c_string(const std::string &text, const char *what) {
    if (text.find('\0') != std::string::npos)
        throw error(BACKLOT_ERR_INVALID_ARGUMENT,
                    std::string("invalid argument: ") + what + " holds a NUL byte, which a C string cannot carry");
    return text.c_str();
}

inline const char *c_string(const std::optional<std::string> &text, const char *what) {
    return text ? c_string(*text, what) : nullptr;
}

/// A string the library allocated: copied, then freed.
inline std::string take_string(char *text) {
    owned<char> owner(text);
    return text ? std::string(text) : std::string();
}

/// A list of strings the library allocated (one block): copied, then freed once.
inline std::vector<std::string> take_list(char **list, std::size_t count) {
    owned<char *> owner(list);
    std::vector<std::string> out;
    if (!list) return out;
    out.reserve(count);
    for (std::size_t i = 0; i < count; ++i) out.emplace_back(list[i] ? list[i] : "");
    return out;
}

} // namespace detail

/// What backlot_manager_open needs (backlot_config). Empty optionals are NULL.
struct config {
    std::string container_path;             ///< created when missing; required
    std::string catalog_url;                ///< https://HOST/…/v1/apps/APP/CHANNEL/catalog.json; required
    std::string trusted_key_path;           ///< the repository's public key file; required
    std::optional<std::string> ca_path;     ///< a PEM CA file for the server
    std::optional<std::string> app;         ///< must be the catalog URL's APP when given
    std::optional<std::string> channel;     ///< must be the catalog URL's CHANNEL when given
    std::uint64_t bandwidth_limit = 0;      ///< bytes per second per connection; 0: no limit
    std::uint32_t stall_timeout = 0;        ///< seconds without progress before a retry; 0: 60
    std::int32_t retries = -1;              ///< attempts after the first; -1: 4
    bool send_reports = true;               ///< false: no report of what the container holds (docs/privacy.md)
    std::optional<std::string> device_profile; ///< what picks a pack's variant ("textureFormat=astc,deviceTier=high")
};

/// Apple's AssetPack.Status bits (BACKLOT_PACK_*).
enum class pack_status : std::uint32_t {
    download_available = BACKLOT_PACK_DOWNLOAD_AVAILABLE,
    update_available = BACKLOT_PACK_UPDATE_AVAILABLE,
    up_to_date = BACKLOT_PACK_UP_TO_DATE,
    out_of_date = BACKLOT_PACK_OUT_OF_DATE,
    obsolete = BACKLOT_PACK_OBSOLETE,
    downloading = BACKLOT_PACK_DOWNLOADING,
    downloaded = BACKLOT_PACK_DOWNLOADED,
};

/// A pack the catalog offers this device (Apple's AssetPack), with its status (backlot_pack_info).
struct pack_info {
    std::string id;
    std::int64_t version = 0;
    std::uint64_t download_size = 0;
    std::uint32_t status = 0; ///< pack_status bits

    bool has(pack_status bit) const noexcept { return (status & static_cast<std::uint32_t>(bit)) != 0; }
};

/// BACKLOT_UPDATE_*.
enum class update_kind : std::int32_t {
    began = BACKLOT_UPDATE_BEGAN,
    downloading = BACKLOT_UPDATE_DOWNLOADING,
    paused = BACKLOT_UPDATE_PAUSED,
    finished = BACKLOT_UPDATE_FINISHED,
    failed = BACKLOT_UPDATE_FAILED,
};

/// One status update, copied (valid after the callback).
struct status_update {
    update_kind kind = update_kind::began;
    std::string pack_id;
    std::uint64_t completed_bytes = 0;
    std::uint64_t total_bytes = 0;
    backlot_status error = BACKLOT_OK; ///< for failed
    std::string error_message;         ///< for failed
};

/// A URL download (Apple's BAURLDownload).
struct url_download {
    std::string identifier;
    std::string url;
    std::int64_t file_size = -1;
    bool essential = false;
    std::int64_t priority = 0;
};

/// What the app is told about its URL downloads (Apple's BADownloadManagerDelegate). Every member
/// may be empty; they run on a thread of the library's; `finished` must move or copy the file
/// before it returns. What one throws goes to `on_error`.
struct download_delegate {
    std::function<void(const std::string &identifier)> began;
    std::function<void(const std::string &identifier)> paused;
    std::function<void(const std::string &identifier, std::int64_t bytes_written, std::int64_t total_written,
                       std::int64_t total_expected)>
        wrote;
    std::function<void(const std::string &identifier, const backlot::error &failure)> failed;
    std::function<void(const std::string &identifier, const std::string &file_path)> finished;
    std::function<void(std::exception_ptr)> on_error;
};

using progress_fn = std::function<void(std::uint64_t completed_bytes, std::uint64_t total_bytes)>;
using status_fn = std::function<void(const status_update &)>;
using error_fn = std::function<void(std::exception_ptr)>;

/// A read-only file descriptor (backlot_descriptor): closed in the destructor; move-only.
class file_descriptor {
public:
    file_descriptor() noexcept = default;
    explicit file_descriptor(int fd) noexcept : fd_(fd) {}
    file_descriptor(file_descriptor &&other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    file_descriptor &operator=(file_descriptor &&other) noexcept {
        if (this != &other) {
            reset();
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    file_descriptor(const file_descriptor &) = delete;
    file_descriptor &operator=(const file_descriptor &) = delete;
    ~file_descriptor() { reset(); }

    int get() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    /// Gives the descriptor up (the caller closes it).
    int release() noexcept { return std::exchange(fd_, -1); }
    void reset() noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_ = -1;
};

namespace detail {

/// One subscription's callback state: its address is the C context.
struct subscription_state {
    status_fn handler;
    error_fn on_error;
    std::mutex lock;
    std::exception_ptr first_error;
};

/// The subscription whose callback runs on this thread (so that ending it from its own callback
/// waits for the callback to return before the state goes).
inline thread_local subscription_state *in_callback = nullptr;
inline thread_local bool end_requested_in_callback = false;

inline void status_trampoline(void *context, const backlot_status_update *update) noexcept {
    auto *state = static_cast<subscription_state *>(context);
    if (!state || !update) return;
    subscription_state *outer = in_callback;
    in_callback = state;
    end_requested_in_callback = false;
    try {
        status_update copy;
        // Members past the sender's size keep their defaults (an older library's smaller struct).
        const std::size_t size = update->size;
        auto has = [size](std::size_t end) { return size >= end; };
        if (has(offsetof(backlot_status_update, kind) + sizeof update->kind))
            copy.kind = static_cast<update_kind>(update->kind);
        if (has(offsetof(backlot_status_update, pack_id) + sizeof update->pack_id) && update->pack_id)
            copy.pack_id = update->pack_id;
        if (has(offsetof(backlot_status_update, completed_bytes) + sizeof update->completed_bytes))
            copy.completed_bytes = update->completed_bytes;
        if (has(offsetof(backlot_status_update, total_bytes) + sizeof update->total_bytes))
            copy.total_bytes = update->total_bytes;
        if (has(offsetof(backlot_status_update, error) + sizeof update->error)) copy.error = update->error;
        if (has(offsetof(backlot_status_update, error_message) + sizeof update->error_message) &&
            update->error_message)
            copy.error_message = update->error_message;
        state->handler(copy);
    } catch (...) {
        std::exception_ptr e = std::current_exception();
        {
            std::lock_guard<std::mutex> guard(state->lock);
            if (!state->first_error) state->first_error = e;
        }
        if (state->on_error) {
            try {
                state->on_error(e);
            } catch (...) {
            }
        }
    }
    in_callback = outer;
    if (end_requested_in_callback) {
        // The subscription was ended from this very callback: its state goes now.
        end_requested_in_callback = false;
        delete state;
    }
}

/// The URL-download delegates, by number: the C context is the number. Once
/// backlot_set_download_delegate or backlot_manager_close returns, no function of the previous
/// delegate runs, except one that is itself calling set_download_delegate (the header does not
/// wait for that one): the shared_ptr a callback copies from here keeps its delegate alive until
/// it returns, even when it replaced itself.
class delegate_registry {
public:
    static delegate_registry &shared() {
        static delegate_registry *registry = new delegate_registry(); // never destroyed: callbacks may outlive main
        return *registry;
    }

    std::uintptr_t add(download_delegate d) {
        std::lock_guard<std::mutex> guard(lock_);
        const std::uintptr_t id = ++next_;
        all_[id] = std::make_shared<download_delegate>(std::move(d));
        return id;
    }

    void remove(std::uintptr_t id) {
        if (id == 0) return;
        std::shared_ptr<download_delegate> gone;
        std::lock_guard<std::mutex> guard(lock_);
        auto found = all_.find(id);
        if (found != all_.end()) {
            gone = std::move(found->second);
            all_.erase(found);
        }
    }

    std::shared_ptr<download_delegate> find(void *context) {
        std::lock_guard<std::mutex> guard(lock_);
        auto found = all_.find(reinterpret_cast<std::uintptr_t>(context));
        return found == all_.end() ? nullptr : found->second;
    }

private:
    std::mutex lock_;
    std::uintptr_t next_ = 0;
    std::map<std::uintptr_t, std::shared_ptr<download_delegate>> all_;
};

template <class Call> void deliver(void *context, Call &&call) noexcept {
    std::shared_ptr<download_delegate> d;
    try {
        d = delegate_registry::shared().find(context);
        if (d) call(*d);
    } catch (...) {
        if (d && d->on_error) {
            try {
                d->on_error(std::current_exception());
            } catch (...) {
            }
        }
    }
}

inline void began_trampoline(void *context, const char *identifier) noexcept {
    deliver(context, [&](download_delegate &d) {
        if (d.began) d.began(identifier ? identifier : "");
    });
}

inline void paused_trampoline(void *context, const char *identifier) noexcept {
    deliver(context, [&](download_delegate &d) {
        if (d.paused) d.paused(identifier ? identifier : "");
    });
}

inline void wrote_trampoline(void *context, const char *identifier, std::int64_t written, std::int64_t total,
                             std::int64_t expected) noexcept {
    deliver(context, [&](download_delegate &d) {
        if (d.wrote) d.wrote(identifier ? identifier : "", written, total, expected);
    });
}

inline void failed_trampoline(void *context, const char *identifier, backlot_status status,
                              const char *message) noexcept {
    deliver(context, [&](download_delegate &d) {
        if (d.failed) d.failed(identifier ? identifier : "", error(status, message ? message : ""));
    });
}

inline void finished_trampoline(void *context, const char *identifier, const char *path) noexcept {
    deliver(context, [&](download_delegate &d) {
        if (d.finished) d.finished(identifier ? identifier : "", path ? path : "");
    });
}

/// A blocking ensure call's progress state: its address is the C context.
struct progress_state {
    const progress_fn *progress;
    backlot_manager *manager;
    const char *pack_id;
    std::exception_ptr failure;
};

inline void progress_trampoline(void *context, std::uint64_t completed, std::uint64_t total) noexcept {
    auto *state = static_cast<progress_state *>(context);
    if (!state || state->failure) return;
    try {
        (*state->progress)(completed, total);
    } catch (...) {
        state->failure = std::current_exception();
        // End the download: the call returns BACKLOT_ERR_CANCELLED; the exception is rethrown.
        backlot_cancel(state->manager, state->pack_id);
    }
}

template <class F, class R> struct exclusive_state {
    explicit exclusive_state(F *b) noexcept : body(b) {}
    F *body;
    std::optional<R> result;
    std::exception_ptr failure;

    static backlot_status run(void *context) noexcept {
        auto *state = static_cast<exclusive_state *>(context);
        try {
            state->result.emplace((*state->body)());
            return BACKLOT_OK;
        } catch (...) {
            state->failure = std::current_exception();
            return BACKLOT_ERR_CANCELLED;
        }
    }
};

template <class F> struct exclusive_state<F, void> {
    explicit exclusive_state(F *b) noexcept : body(b) {}
    F *body;
    std::exception_ptr failure;

    static backlot_status run(void *context) noexcept {
        auto *state = static_cast<exclusive_state *>(context);
        try {
            (*state->body)();
            return BACKLOT_OK;
        } catch (...) {
            state->failure = std::current_exception();
            return BACKLOT_ERR_CANCELLED;
        }
    }
};

} // namespace detail

/// A subscription to status updates (backlot_subscribe): the destructor (or reset()) ends it; no
/// callback runs once that returns, unless it is called from the callback itself, which then
/// finishes normally. Move-only; it may outlive its manager (closing the manager ended it).
class subscription {
public:
    subscription() noexcept = default;
    subscription(subscription &&other) noexcept
        : manager_(std::exchange(other.manager_, nullptr)), id_(std::exchange(other.id_, 0)),
          state_(std::exchange(other.state_, nullptr)) {}
    subscription &operator=(subscription &&other) noexcept {
        if (this != &other) {
            reset();
            manager_ = std::exchange(other.manager_, nullptr);
            id_ = std::exchange(other.id_, 0);
            state_ = std::exchange(other.state_, nullptr);
        }
        return *this;
    }
    subscription(const subscription &) = delete;
    subscription &operator=(const subscription &) = delete;
    ~subscription() { reset(); }

    /// The library's number of the subscription (0 when empty).
    std::uint64_t id() const noexcept { return id_; }
    explicit operator bool() const noexcept { return state_ != nullptr; }

    /// The first exception the handler threw (never passed to the library), or null.
    std::exception_ptr error() const {
        if (!state_) return nullptr;
        std::lock_guard<std::mutex> guard(state_->lock);
        return state_->first_error;
    }

    /// Ends the subscription now.
    void reset() noexcept {
        if (!state_) return;
        // BACKLOT_ERR_CLOSED_HANDLE: closing the manager ended it already.
        backlot_unsubscribe(manager_, id_);
        if (detail::in_callback == state_)
            detail::end_requested_in_callback = true; // the trampoline deletes it on return
        else
            delete state_;
        state_ = nullptr;
        manager_ = nullptr;
        id_ = 0;
    }

private:
    friend class manager;
    subscription(backlot_manager *m, std::uint64_t id, detail::subscription_state *state) noexcept
        : manager_(m), id_(id), state_(state) {}

    backlot_manager *manager_ = nullptr;
    std::uint64_t id_ = 0;
    detail::subscription_state *state_ = nullptr;
};

/// Apple's AssetPackManager over one container (backlot_manager_open). Move-only; the destructor
/// closes it (running calls on other threads end with BACKLOT_ERR_CANCELLED).
class manager {
public:
    explicit manager(const config &c) {
        backlot_config native;
        backlot_config_init(&native);
        native.container_path = detail::c_string(c.container_path, "container_path");
        native.catalog_url = detail::c_string(c.catalog_url, "catalog_url");
        native.trusted_key_path = detail::c_string(c.trusted_key_path, "trusted_key_path");
        native.ca_path = detail::c_string(c.ca_path, "ca_path");
        native.app = detail::c_string(c.app, "app");
        native.channel = detail::c_string(c.channel, "channel");
        native.bandwidth_limit = c.bandwidth_limit;
        native.stall_timeout = c.stall_timeout;
        native.retries = c.retries;
        native.no_reports = c.send_reports ? 0 : 1;
        native.device_profile = detail::c_string(c.device_profile, "device_profile");
        detail::check(backlot_manager_open(&native, &handle_));
    }

    manager(manager &&other) noexcept
        : handle_(std::exchange(other.handle_, nullptr)), delegate_(std::exchange(other.delegate_, 0)) {}
    manager &operator=(manager &&other) noexcept {
        if (this != &other) {
            close();
            handle_ = std::exchange(other.handle_, nullptr);
            delegate_ = std::exchange(other.delegate_, 0);
        }
        return *this;
    }
    manager(const manager &) = delete;
    manager &operator=(const manager &) = delete;
    ~manager() { close(); }

    /// Closes the manager: later calls throw BACKLOT_ERR_CLOSED_HANDLE (the handle is kept, and
    /// the library refuses it). Twice does nothing.
    void close() noexcept {
        backlot_manager_close(handle_);
        detail::delegate_registry::shared().remove(std::exchange(delegate_, 0));
    }

    /// The C handle, for calls this wrapper does not have.
    backlot_manager *native_handle() const noexcept { return handle_; }

    /// The container's device identifier.
    std::string device_id() const {
        char *text = nullptr;
        detail::check(backlot_device_id(handle_, &text));
        return detail::take_string(text);
    }

    /// The profile that picks the variant of a pack with variants ("textureFormat=astc+etc2,deviceTier=2"):
    /// the configuration's, else the one detected.
    std::string device_profile() const {
        char *text = nullptr;
        detail::check(backlot_device_profile(handle_, &text));
        return detail::take_string(text);
    }

    /// Returns once the pack is installed and verified (Apple's ensureLocalAvailability). Blocks;
    /// `progress` runs on this thread; what it throws cancels the download and is rethrown here.
    void ensure_local_availability(const std::string &pack_id, const progress_fn &progress = {}) {
        ensure(pack_id, progress, false);
    }

    /// The same, but an installed release older than the catalog's is updated first.
    void ensure_latest_availability(const std::string &pack_id, const progress_fn &progress = {}) {
        ensure(pack_id, progress, true);
    }

    /// Cancels the running download of a pack (any thread; fine when none runs).
    void cancel(const std::string &pack_id) {
        detail::check(backlot_cancel(handle_, detail::c_string(pack_id, "pack_id")));
    }

    /// Apple's checkForUpdates: the IDs of the packs updated.
    std::vector<std::string> check_for_updates() {
        char **ids = nullptr;
        std::size_t count = 0;
        detail::check(backlot_check_for_updates(handle_, &ids, &count));
        return detail::take_list(ids, count);
    }

    /// Removes an installed pack.
    void remove(const std::string &pack_id) {
        detail::check(backlot_remove(handle_, detail::c_string(pack_id, "pack_id")));
    }

    /// A file of an installed pack, copied (no pack: every installed pack is searched).
    std::vector<std::uint8_t> contents(const std::string &path, const std::optional<std::string> &pack_id = {}) const {
        std::uint8_t *data = nullptr;
        std::size_t length = 0;
        detail::check(backlot_contents(handle_, detail::c_string(path, "path"), detail::c_string(pack_id, "pack_id"),
                                       &data, &length));
        detail::owned<std::uint8_t> owner(data);
        return std::vector<std::uint8_t>(data, data + length);
    }

    /// A file of an installed pack, opened read-only (map it with mmap(2)).
    file_descriptor descriptor(const std::string &path, const std::optional<std::string> &pack_id = {}) const {
        int fd = -1;
        detail::check(backlot_descriptor(handle_, detail::c_string(path, "path"),
                                         detail::c_string(pack_id, "pack_id"), &fd));
        return file_descriptor(fd);
    }

    /// Where a file of an installed pack is.
    std::string path(const std::string &path, const std::optional<std::string> &pack_id = {}) const {
        char *text = nullptr;
        detail::check(backlot_path(handle_, detail::c_string(path, "path"), detail::c_string(pack_id, "pack_id"),
                                   &text));
        return detail::take_string(text);
    }

    /// The pack as the catalog offers it now, and its status (reads the catalog).
    pack_info asset_pack(const std::string &pack_id) const {
        backlot_pack_info info;
        backlot_pack_info_init(&info);
        struct clear {
            backlot_pack_info *info;
            ~clear() { backlot_pack_info_clear(info); }
        } cleared{&info};
        detail::check(backlot_asset_pack(handle_, detail::c_string(pack_id, "pack_id"), &info));
        pack_info out;
        out.id = info.id ? info.id : "";
        out.version = info.version;
        out.download_size = info.download_size;
        out.status = info.status;
        return out;
    }

    /// The IDs of every pack the catalog offers this device, sorted.
    std::vector<std::string> all_asset_packs() const {
        char **ids = nullptr;
        std::size_t count = 0;
        detail::check(backlot_all_asset_packs(handle_, &ids, &count));
        return detail::take_list(ids, count);
    }

    /// The IDs of the packs installed in the container, sorted (no network).
    std::vector<std::string> installed_packs() const {
        char **ids = nullptr;
        std::size_t count = 0;
        detail::check(backlot_installed_packs(handle_, &ids, &count));
        return detail::take_list(ids, count);
    }

    /// Subscribes to the status updates of one pack (or of every pack: no pack_id). `handler` runs
    /// on a thread of the library's, one update at a time, in order.
    subscription subscribe(status_fn handler, const std::optional<std::string> &pack_id = {},
                           error_fn on_error = {}) {
        if (!handler) throw error(BACKLOT_ERR_INVALID_ARGUMENT, "invalid argument: the handler is empty");
        const char *id = detail::c_string(pack_id, "pack_id");
        auto state = std::make_unique<detail::subscription_state>();
        state->handler = std::move(handler);
        state->on_error = std::move(on_error);
        std::uint64_t number = 0;
        detail::check(backlot_subscribe(handle_, id, &detail::status_trampoline, state.get(), &number));
        return subscription(handle_, number, state.release());
    }

    /// Schedules a URL download for the background agent (or this process) to run.
    void schedule_download(const url_download &download) {
        with_download(download, [this](const backlot_url_download &d) { return backlot_schedule_download(handle_, &d); });
    }

    /// Starts a URL download now, in this process.
    void start_foreground_download(const url_download &download) {
        with_download(download,
                      [this](const backlot_url_download &d) { return backlot_start_foreground_download(handle_, &d); });
    }

    /// Cancels a scheduled or running URL download (BACKLOT_ERR_BA(101) when it is not scheduled).
    void cancel_download(const std::string &identifier) {
        detail::check(backlot_cancel_download(handle_, detail::c_string(identifier, "identifier")));
    }

    /// The identifiers of the URL downloads scheduled or running, sorted.
    std::vector<std::string> current_downloads() const {
        char **ids = nullptr;
        std::size_t count = 0;
        detail::check(backlot_current_downloads(handle_, &ids, &count));
        return detail::take_list(ids, count);
    }

    /// Sets what the app is told about its URL downloads.
    void set_download_delegate(download_delegate d) {
        auto &registry = detail::delegate_registry::shared();
        const std::uintptr_t id = registry.add(std::move(d));
        backlot_download_delegate functions;
        backlot_download_delegate_init(&functions);
        functions.began = &detail::began_trampoline;
        functions.paused = &detail::paused_trampoline;
        functions.wrote = &detail::wrote_trampoline;
        functions.failed = &detail::failed_trampoline;
        functions.finished = &detail::finished_trampoline;
        const backlot_status status =
            backlot_set_download_delegate(handle_, &functions, reinterpret_cast<void *>(id));
        if (status != BACKLOT_OK) {
            error failure(status, backlot_last_error_message());
            registry.remove(id);
            throw failure;
        }
        registry.remove(std::exchange(delegate_, id));
    }

    /// Removes the delegate (outcomes go to the downloader extension again).
    void clear_download_delegate() {
        detail::check(backlot_set_download_delegate(handle_, nullptr, nullptr));
        detail::delegate_registry::shared().remove(std::exchange(delegate_, 0));
    }

    /// Runs `body` holding the container's exclusive control of its URL downloads (Apple's
    /// withExclusiveControl), and returns what it returns. Waits at most `timeout` seconds
    /// (negative: as long as it takes; 0: tries once): BACKLOT_ERR_UNAVAILABLE when not acquired.
    /// What `body` throws is rethrown here.
    template <class F> std::invoke_result_t<F &> with_exclusive_control(F &&body, double timeout = -1.0) {
        using result = std::invoke_result_t<F &>;
        using state_type = detail::exclusive_state<std::remove_reference_t<F>, result>;
        state_type state(&body);
        const backlot_status status = backlot_with_exclusive_control(handle_, timeout, &state_type::run, &state);
        if (state.failure) std::rethrow_exception(state.failure);
        detail::check(status);
        if constexpr (!std::is_void_v<result>) return std::move(*state.result);
    }

private:
    void ensure(const std::string &pack_id, const progress_fn &progress, bool latest) {
        const char *id = detail::c_string(pack_id, "pack_id");
        detail::progress_state state{&progress, handle_, id, nullptr};
        backlot_progress_fn fn = progress ? &detail::progress_trampoline : nullptr;
        void *context = progress ? &state : nullptr;
        const backlot_status status = latest ? backlot_ensure_latest_availability(handle_, id, fn, context)
                                             : backlot_ensure_local_availability(handle_, id, fn, context);
        if (state.failure) std::rethrow_exception(state.failure);
        detail::check(status);
    }

    template <class Call> static void with_download(const url_download &download, Call &&call) {
        backlot_url_download d;
        backlot_url_download_init(&d);
        d.identifier = detail::c_string(download.identifier, "identifier");
        d.url = detail::c_string(download.url, "url");
        d.file_size = download.file_size;
        d.essential = download.essential ? 1 : 0;
        d.priority = download.priority;
        detail::check(call(d));
    }

    backlot_manager *handle_ = nullptr;
    std::uintptr_t delegate_ = 0;
};

} // namespace backlot

#endif // BACKLOT_BACKLOT_HPP
