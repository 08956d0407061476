/*
 * wrapper_test: the C++ wrapper (include/backlot/backlot.hpp) against a real `backlot serve`, the
 * same checks as the C# binding's tests (bindings/csharp/tests/BacklotTests.cs).
 *
 *   g++ -std=c++17 -Wall -Wextra -Werror wrapper_test.cpp $(pkg-config --cflags --libs backlot) -o wrapper_test
 *   ./wrapper_test
 *
 * It reads BACKLOT_TEST_CATALOG_URL, BACKLOT_TEST_ROOT_PUB, BACKLOT_TEST_CA,
 * BACKLOT_TEST_WRONG_ROOT_PUB, BACKLOT_TEST_SOURCE (the folder the pack was made from) and
 * BACKLOT_TEST_PACK; a missing one is a failure naming it, unless BACKLOT_ALLOW_SKIP=1. Each check
 * prints "ok" or "FAIL" and why; the last line is "cpp: N passed, N failed"; the exit status is 0
 * only when every check passed. A check still running after BACKLOT_TEST_CHECK_TIMEOUT seconds
 * (120 by default) fails, and the program ends there (a deadlock must not hang CI).
 */
#include <backlot/backlot.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

std::atomic<int> passed{0};
std::atomic<int> failed{0};

// The watchdog: a check still running after BACKLOT_TEST_CHECK_TIMEOUT seconds (120 by default)
// is a failure (a deadlock, most likely), reported with the summary before the process ends.
std::mutex running_lock;
std::string running_check;
std::chrono::steady_clock::time_point running_since;

void start_watchdog() {
    const char *text = std::getenv("BACKLOT_TEST_CHECK_TIMEOUT");
    const int limit = text && std::atoi(text) > 0 ? std::atoi(text) : 120;
    std::thread([limit] {
        for (;;) {
            std::this_thread::sleep_for(std::chrono::seconds(1));
            std::lock_guard<std::mutex> guard(running_lock);
            if (running_check.empty()) continue;
            const auto seconds =
                std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - running_since).count();
            if (seconds < limit) continue;
            std::cout << "FAIL " << running_check << ": still running after " << seconds
                      << " s (a deadlock?); the process ends here" << std::endl;
            std::cout << "cpp: " << passed.load() << " passed, " << failed.load() + 1 << " failed" << std::endl;
            std::_Exit(1);
        }
    }).detach();
}

struct check_failed : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct boom : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void expect(bool condition, const std::string &what) {
    if (!condition) throw check_failed(what);
}

template <class Body> void check(const std::string &name, Body &&body) {
    {
        std::lock_guard<std::mutex> guard(running_lock);
        running_check = name;
        running_since = std::chrono::steady_clock::now();
    }
    struct done {
        ~done() {
            std::lock_guard<std::mutex> guard(running_lock);
            running_check.clear();
        }
    } finished;
    try {
        body();
        ++passed;
        std::cout << "ok   " << name << std::endl;
    } catch (const check_failed &e) {
        ++failed;
        std::cout << "FAIL " << name << ": " << e.what() << std::endl;
    } catch (const std::exception &e) {
        ++failed;
        std::cout << "FAIL " << name << ": unexpected exception: " << e.what() << std::endl;
    } catch (...) {
        ++failed;
        std::cout << "FAIL " << name << ": unexpected exception" << std::endl;
    }
}

template <class Body> backlot::error throws(Body &&body, backlot_status expected, const std::string &what) {
    try {
        body();
    } catch (const backlot::error &e) {
        expect(e.status() == expected, what + ": expected " + backlot::status_name(expected) + ", got " + e.what());
        expect(std::string(e.name()) == backlot::status_name(expected), what + ": name() is " + e.name());
        expect(!e.message().empty(), what + ": no message");
        expect(std::string(e.what()).find(e.message()) != std::string::npos, what + ": what() lacks the message");
        return e;
    }
    throw check_failed(what + ": no exception (expected " + backlot::status_name(expected) + ")");
}

std::vector<std::uint8_t> read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw check_failed("cannot read " + path);
    return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string env(const char *name) {
    const char *value = std::getenv(name);
    return value ? value : "";
}

std::vector<std::string> cleanup;

std::string new_container(const std::string &name) {
    std::random_device random;
    std::string dir = (env("TMPDIR").empty() ? std::string("/tmp") : env("TMPDIR")) + "/backlot-cpp-" + name + "-" +
                      std::to_string(::getpid()) + "-" + std::to_string(random());
    cleanup.push_back(dir);
    return dir;
}

template <class Condition> bool wait_for(Condition &&condition, int milliseconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(milliseconds);
    while (!condition()) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

bool contains(const std::vector<std::string> &list, const std::string &item) {
    return std::find(list.begin(), list.end(), item) != list.end();
}

std::string describe(const backlot::status_update &u) {
    static const char *kinds[] = {"?", "BEGAN", "DOWNLOADING", "PAUSED", "FINISHED", "FAILED"};
    const int k = static_cast<int>(u.kind);
    std::ostringstream out;
    out << (k >= 1 && k <= 5 ? kinds[k] : "?") << " " << u.pack_id << " " << u.completed_bytes << "/" << u.total_bytes;
    return out.str();
}

struct recorder {
    std::mutex lock;
    std::vector<backlot::status_update> updates;

    void add(const backlot::status_update &u) {
        std::lock_guard<std::mutex> guard(lock);
        updates.push_back(u);
    }
    std::vector<backlot::status_update> of(const std::string &pack) {
        std::lock_guard<std::mutex> guard(lock);
        std::vector<backlot::status_update> out;
        for (auto &u : updates)
            if (u.pack_id == pack) out.push_back(u);
        return out;
    }
};

} // namespace

int main() {
    const char *names[] = {"BACKLOT_TEST_CATALOG_URL", "BACKLOT_TEST_ROOT_PUB", "BACKLOT_TEST_CA",
                           "BACKLOT_TEST_WRONG_ROOT_PUB", "BACKLOT_TEST_SOURCE", "BACKLOT_TEST_PACK"};
    std::vector<std::string> missing;
    for (const char *n : names)
        if (env(n).empty()) missing.push_back(n);
    if (!missing.empty()) {
        if (env("BACKLOT_ALLOW_SKIP") == "1") {
            std::cout << "cpp: skipped: not set:";
            for (auto &n : missing) std::cout << " " << n;
            std::cout << std::endl;
            return 0;
        }
        for (auto &n : missing) std::cout << "FAIL environment: " << n << " is not set" << std::endl;
        std::cout << "cpp: 0 passed, " << missing.size() << " failed" << std::endl;
        return 1;
    }
    start_watchdog();
    const std::string catalog_url = env("BACKLOT_TEST_CATALOG_URL");
    const std::string root_pub = env("BACKLOT_TEST_ROOT_PUB");
    const std::string ca = env("BACKLOT_TEST_CA");
    const std::string wrong_root_pub = env("BACKLOT_TEST_WRONG_ROOT_PUB");
    const std::string source = env("BACKLOT_TEST_SOURCE");
    const std::string pack = env("BACKLOT_TEST_PACK");
    const std::string small = pack + "/1.txt";
    const std::string big = pack + "/big.bin";

    auto make_config = [&](const std::string &container, const std::string &key, std::uint64_t bandwidth) {
        backlot::config c;
        c.container_path = container;
        c.catalog_url = catalog_url;
        c.trusted_key_path = key;
        c.ca_path = ca;
        c.bandwidth_limit = bandwidth;
        return c;
    };

    std::vector<std::uint8_t> small_source, big_source;
    check("read the source files", [&] {
        small_source = read_file(source + "/" + small);
        big_source = read_file(source + "/" + big);
        expect(big_source.size() == 3000000, "big.bin is " + std::to_string(big_source.size()) + " bytes");
    });

    check("library version and status names", [&] {
        expect(!backlot::version().empty(), "empty version");
        expect(backlot::status_name(BACKLOT_ERR_UNTRUSTED) == "BACKLOT_ERR_UNTRUSTED", "UNTRUSTED's name");
        expect(backlot::status_name(BACKLOT_ERR_BA(101)) == "BACKLOT_ERR_BA_DOWNLOAD_NOT_SCHEDULED", "BA(101)'s name");
        expect(backlot::status_name(999) == "BACKLOT_ERR_UNKNOWN", "999's name");
    });

    const std::string container = new_container("main");
    std::optional<backlot::manager> manager;
    check("open a manager", [&] { manager.emplace(make_config(container, root_pub, 0)); });
    if (!manager) {
        std::cout << "cpp: " << passed << " passed, " << failed << " failed" << std::endl;
        return 1;
    }

    recorder all_updates, pack_updates;
    backlot::subscription all, one;
    check("subscribe", [&] {
        all = manager->subscribe([&](const backlot::status_update &u) { all_updates.add(u); });
        one = manager->subscribe([&](const backlot::status_update &u) { pack_updates.add(u); }, pack);
        expect(all && one && all.id() != one.id(), "subscription numbers");
    });

    check("install the pack, with progress", [&] {
        std::vector<std::pair<std::uint64_t, std::uint64_t>> progress;
        const auto caller = std::this_thread::get_id();
        bool on_caller = true;
        manager->ensure_local_availability(pack, [&](std::uint64_t done, std::uint64_t total) {
            if (std::this_thread::get_id() != caller) on_caller = false;
            progress.emplace_back(done, total);
        });
        expect(!progress.empty(), "no progress call");
        expect(progress.back().first == progress.back().second,
               "last progress " + std::to_string(progress.back().first) + " of " + std::to_string(progress.back().second));
        expect(progress.back().second >= big_source.size(), "last total " + std::to_string(progress.back().second));
        expect(on_caller, "progress ran on another thread");
    });

    check("contents match the source", [&] {
        expect(manager->contents(small, pack) == small_source, small + " differs");
        const auto text = manager->contents(small, pack);
        expect(std::string(text.begin(), text.end()) == "the first level\n", small + "'s text");
        expect(manager->contents(big) == big_source, big + " (searched in every pack) differs");
    });

    check("status updates: BEGAN ... FINISHED", [&] {
        auto finished = [&](recorder &r) {
            for (auto &u : r.of(pack))
                if (u.kind == backlot::update_kind::finished) return true;
            return false;
        };
        expect(wait_for([&] { return finished(all_updates) && finished(pack_updates); }, 10000), "no FINISHED in 10 s");
        for (recorder *r : {&all_updates, &pack_updates}) {
            auto list = r->of(pack);
            std::string seen;
            for (auto &u : list) seen += describe(u) + ", ";
            auto at = [&](backlot::update_kind k) {
                return std::find_if(list.begin(), list.end(), [k](auto &u) { return u.kind == k; }) - list.begin();
            };
            const auto began = at(backlot::update_kind::began), end = at(backlot::update_kind::finished);
            expect(began < static_cast<long>(list.size()), "no BEGAN: " + seen);
            expect(began < end, "BEGAN after FINISHED: " + seen);
            expect(at(backlot::update_kind::failed) == static_cast<long>(list.size()), "a FAILED update: " + seen);
            expect(list[end].completed_bytes == list[end].total_bytes && list[end].error == BACKLOT_OK,
                   "FINISHED " + describe(list[end]));
        }
        expect(!all.error() && !one.error(), "a handler threw");
    });

    check("descriptor (mmap) and path", [&] {
        backlot::file_descriptor fd = manager->descriptor(big, pack);
        expect(fd.get() >= 0, "descriptor " + std::to_string(fd.get()));
        struct stat st {};
        expect(::fstat(fd.get(), &st) == 0 && st.st_size == static_cast<off_t>(big_source.size()), "fstat size");
        void *map = ::mmap(nullptr, big_source.size(), PROT_READ, MAP_PRIVATE, fd.get(), 0);
        expect(map != MAP_FAILED, "mmap failed");
        const bool same = std::equal(big_source.begin(), big_source.end(), static_cast<const std::uint8_t *>(map));
        ::munmap(map, big_source.size());
        expect(same, "the mapped bytes differ");
        const std::string where = manager->path(small, pack);
        expect(read_file(where) == small_source, "the file at path() differs");
    });

    check("asset pack, catalog and container listings, device ID", [&] {
        const backlot::pack_info info = manager->asset_pack(pack);
        expect(info.id == pack, "id " + info.id);
        expect(info.download_size > 0, "download_size 0");
        expect(info.has(backlot::pack_status::downloaded), "status lacks downloaded: " + std::to_string(info.status));
        expect(contains(manager->all_asset_packs(), pack), "all_asset_packs lacks the pack");
        expect(manager->installed_packs() == std::vector<std::string>{pack}, "installed_packs");
        const std::string device = manager->device_id();
        expect(!device.empty() && device == manager->device_id(), "device ID '" + device + "'");
        const std::string profile = manager->device_profile();
        expect(profile.rfind("textureFormat=", 0) == 0 && profile.find(",deviceTier=") != std::string::npos,
               "device profile '" + profile + "'");
    });

    check("ensure latest and check for updates (nothing newer)", [&] {
        std::uint64_t last_done = 1, last_total = 0;
        manager->ensure_latest_availability(pack, [&](std::uint64_t d, std::uint64_t t) {
            last_done = d;
            last_total = t;
        });
        expect(last_done == last_total, "last progress");
        expect(manager->check_for_updates().empty(), "check_for_updates updated something");
        manager->ensure_local_availability(pack);
    });

    check("errors carry status, name and message", [&] {
        throws([&] { manager->contents("no/such/file.txt", pack); }, BACKLOT_ERR_FILE_NOT_FOUND, "a missing file");
        throws([&] { manager->ensure_local_availability("NoSuchPack"); }, BACKLOT_ERR_ASSET_PACK_NOT_FOUND,
               "a missing pack");
        throws([&] { manager->contents(small, std::string("a\0b", 3)); }, BACKLOT_ERR_INVALID_ARGUMENT, "a NUL byte");
        throws(
            [&] {
                auto c = make_config(new_container("bad"), root_pub, 0);
                c.catalog_url = "not a catalog url";
                backlot::manager bad(c);
            },
            BACKLOT_ERR_USAGE, "a bad catalog URL");
        throws([&] { backlot::manager bad(make_config("", root_pub, 0)); }, BACKLOT_ERR_INVALID_ARGUMENT,
               "an empty container path");
    });

    check("a refused catalog (another repository's key) throws UNTRUSTED", [&] {
        backlot::manager other(make_config(new_container("wrong"), wrong_root_pub, 0));
        auto e = throws([&] { other.ensure_local_availability(pack); }, BACKLOT_ERR_UNTRUSTED, "wrong key");
        expect(std::string(e.name()) == "BACKLOT_ERR_UNTRUSTED", "name");
        expect(e.message().size() > 10, "message '" + e.message() + "'");
        expect(other.installed_packs().empty(), "something was installed");
    });

    check("a progress callback's exception is rethrown after the call", [&] {
        manager->remove(pack);
        expect(manager->installed_packs().empty(), "not removed");
        try {
            manager->ensure_local_availability(pack, [](std::uint64_t, std::uint64_t) { throw boom("from progress"); });
            throw check_failed("no exception");
        } catch (const boom &e) {
            expect(std::string(e.what()) == "from progress", "message");
        }
        manager->ensure_local_availability(pack);
        expect(manager->contents(big, pack) == big_source, "reinstalled big.bin differs");
    });

    check("a subscription handler's exception is kept, not passed to the library", [&] {
        std::atomic<bool> told{false};
        backlot::subscription throwing = manager->subscribe(
            [](const backlot::status_update &) { throw boom("from handler"); }, pack,
            [&](std::exception_ptr) { told = true; });
        manager->remove(pack);
        manager->ensure_local_availability(pack);
        expect(wait_for([&] { return static_cast<bool>(throwing.error()); }, 10000), "no exception recorded");
        try {
            std::rethrow_exception(throwing.error());
        } catch (const boom &) {
        }
        expect(wait_for([&] { return told.load(); }, 1000), "on_error not told");
    });

    check("a subscription ended from its own callback", [&] {
        backlot::subscription self;
        std::atomic<int> calls{0};
        std::mutex lock;
        std::unique_lock<std::mutex> hold(lock);
        self = manager->subscribe(
            [&](const backlot::status_update &) {
                ++calls;
                std::lock_guard<std::mutex> guard(lock);
                self.reset();
            },
            pack);
        hold.unlock();
        manager->remove(pack);
        manager->ensure_local_availability(pack);
        expect(wait_for([&] { return calls.load() > 0; }, 10000), "no callback");
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        expect(calls.load() == 1, "called " + std::to_string(calls.load()) + " times after ending itself");
    });

    check("cancel a running download from its progress callback", [&] {
        backlot::manager slow(make_config(new_container("slow"), root_pub, 300000));
        bool cancelled = false;
        throws(
            [&] {
                slow.ensure_local_availability(pack, [&](std::uint64_t d, std::uint64_t t) {
                    if (!cancelled && d < t) {
                        cancelled = true;
                        slow.cancel(pack);
                    }
                });
            },
            BACKLOT_ERR_CANCELLED, "cancel");
        expect(cancelled, "no progress before the end");
        expect(slow.installed_packs().empty(), "installed anyway");
        slow.cancel(pack);
    });

    check("close while a download runs on another thread", [&] {
        backlot::manager slow(make_config(new_container("close"), root_pub, 300000));
        std::mutex lock;
        std::condition_variable cv;
        bool started = false;
        backlot_status outcome = BACKLOT_OK;
        std::thread worker([&] {
            try {
                slow.ensure_local_availability(pack, [&](std::uint64_t, std::uint64_t) {
                    std::lock_guard<std::mutex> guard(lock);
                    started = true;
                    cv.notify_all();
                });
            } catch (const backlot::error &e) {
                outcome = e.status();
            }
            std::lock_guard<std::mutex> guard(lock);
            started = true;
            cv.notify_all();
        });
        {
            std::unique_lock<std::mutex> guard(lock);
            cv.wait_for(guard, std::chrono::seconds(20), [&] { return started; });
        }
        slow.close();
        worker.join();
        expect(outcome == BACKLOT_ERR_CANCELLED || outcome == BACKLOT_ERR_CLOSED_HANDLE,
               std::string("outcome ") + backlot::status_name(outcome));
    });

    check("exclusive control", [&] {
        bool ran = false;
        manager->with_exclusive_control([&] { ran = true; });
        expect(ran, "the body did not run");
        expect(manager->with_exclusive_control([] { return 42; }, 5.0) == 42, "the body's value");
        expect(manager->with_exclusive_control([] { return std::string("text"); }) == "text", "a string value");
        try {
            manager->with_exclusive_control([]() -> int { throw boom("from body"); }, 0);
            throw check_failed("no exception");
        } catch (const boom &) {
        }
    });

    check("URL downloads: schedule, list, cancel", [&] {
        expect(manager->current_downloads().empty(), "downloads at the start");
        throws([&] { manager->cancel_download("not-scheduled"); }, BACKLOT_ERR_BA(101), "cancel unknown");
        backlot::url_download d;
        d.identifier = "cpp-scheduled";
        d.url = catalog_url.substr(0, catalog_url.rfind('/')) + "/nothing-here";
        manager->schedule_download(d);
        expect(contains(manager->current_downloads(), "cpp-scheduled"), "not listed");
        throws([&] { manager->schedule_download(d); }, BACKLOT_ERR_BA(100), "twice");
        manager->cancel_download("cpp-scheduled");
        expect(!contains(manager->current_downloads(), "cpp-scheduled"), "still listed");
        backlot::url_download empty;
        empty.url = catalog_url;
        throws([&] { manager->schedule_download(empty); }, BACKLOT_ERR_INVALID_ARGUMENT, "an empty identifier");
    });

    check("URL downloads: a foreground download reaches the delegate", [&] {
        std::mutex lock;
        std::condition_variable cv;
        bool done = false;
        std::vector<std::uint8_t> got;
        std::string failure;
        backlot::download_delegate d;
        d.finished = [&](const std::string &id, const std::string &file) {
            if (id != "cpp-catalog") return;
            auto bytes = read_file(file);
            std::lock_guard<std::mutex> guard(lock);
            got = std::move(bytes);
            done = true;
            cv.notify_all();
        };
        d.failed = [&](const std::string &id, const backlot::error &e) {
            if (id != "cpp-catalog") return;
            std::lock_guard<std::mutex> guard(lock);
            failure = e.what();
            done = true;
            cv.notify_all();
        };
        manager->set_download_delegate(std::move(d));
        backlot::url_download download;
        download.identifier = "cpp-catalog";
        download.url = catalog_url;
        manager->start_foreground_download(download);
        {
            std::unique_lock<std::mutex> guard(lock);
            cv.wait_for(guard, std::chrono::seconds(30), [&] { return done; });
        }
        manager->clear_download_delegate();
        std::lock_guard<std::mutex> guard(lock);
        expect(done, "no outcome within 30 s");
        expect(failure.empty(), "failed: " + failure);
        expect(std::string(got.begin(), got.end()).find("payload") != std::string::npos, "the downloaded catalog");
    });

    check("a moved-from manager refuses calls; a moved-to one works", [&] {
        backlot::manager moved = std::move(*manager);
        throws([&] { manager->installed_packs(); }, BACKLOT_ERR_INVALID_ARGUMENT, "moved-from");
        expect(moved.installed_packs() == std::vector<std::string>{pack}, "moved-to");
        *manager = std::move(moved);
        expect(manager->installed_packs() == std::vector<std::string>{pack}, "moved back");
    });

    check("use after close throws CLOSED_HANDLE", [&] {
        backlot::subscription sub = manager->subscribe([](const backlot::status_update &) {});
        manager->close();
        manager->close();
        throws([&] { manager->installed_packs(); }, BACKLOT_ERR_CLOSED_HANDLE, "installed_packs");
        throws([&] { manager->contents(small, pack); }, BACKLOT_ERR_CLOSED_HANDLE, "contents");
        throws([&] { manager->ensure_local_availability(pack, [](std::uint64_t, std::uint64_t) {}); },
               BACKLOT_ERR_CLOSED_HANDLE, "ensure");
        throws([&] { manager->subscribe([](const backlot::status_update &) {}); }, BACKLOT_ERR_CLOSED_HANDLE,
               "subscribe");
        throws([&] { manager->device_id(); }, BACKLOT_ERR_CLOSED_HANDLE, "device_id");
        sub.reset();
        all.reset();
        one.reset();
        manager.reset();
    });

    check("threads: calls on several threads at once", [&] {
        backlot::manager shared(make_config(container, root_pub, 0));
        std::mutex lock;
        std::vector<std::string> errors;
        std::vector<std::thread> threads;
        for (int i = 0; i < 4; ++i)
            threads.emplace_back([&, i] {
                for (int k = 0; k < 10; ++k) {
                    if (shared.contents(small, pack) != small_source) {
                        std::lock_guard<std::mutex> guard(lock);
                        errors.push_back("bytes");
                    }
                    const std::string name = "missing-" + std::to_string(i);
                    try {
                        shared.contents(name, pack);
                        std::lock_guard<std::mutex> guard(lock);
                        errors.push_back("no error");
                    } catch (const backlot::error &e) {
                        if (e.message().find(name) == std::string::npos) {
                            std::lock_guard<std::mutex> guard(lock);
                            errors.push_back(e.message());
                        }
                    }
                }
            });
        for (auto &t : threads) t.join();
        expect(errors.empty(), errors.empty() ? "" : errors.front());
    });

    for (const auto &dir : cleanup) {
        const std::string command = "rm -rf '" + dir + "'";
        if (std::system(command.c_str()) != 0) std::cerr << "could not remove " << dir << "\n";
    }
    std::cout << "cpp: " << passed << " passed, " << failed << " failed" << std::endl;
    return failed == 0 && passed > 0 ? 0 : 1;
}
