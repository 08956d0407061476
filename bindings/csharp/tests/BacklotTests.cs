// BacklotTests: the C# binding (Backlot.cs) against a real `backlot serve`, as a console program
// (no test framework needed, Mono or .NET):
//
//   mcs -langversion:7.2 -out:.build/csharp/BacklotTests.exe bindings/csharp/Backlot.cs bindings/csharp/tests/BacklotTests.cs
//   MONO_THREADS_SUSPEND=coop mono .build/csharp/BacklotTests.exe
//
// (Mono 6.8's mcs knows C# up to 7.2, a subset of Unity's 7.3; MONO_THREADS_SUSPEND=coop avoids a
// deadlock of Mono 6.8's default suspend mode with native threads: see the top of Backlot.cs.)
//
// It reads BACKLOT_TEST_CATALOG_URL, BACKLOT_TEST_ROOT_PUB, BACKLOT_TEST_CA,
// BACKLOT_TEST_WRONG_ROOT_PUB, BACKLOT_TEST_SOURCE (the folder the pack was made from) and
// BACKLOT_TEST_PACK; a missing one is a failure naming it, unless BACKLOT_ALLOW_SKIP=1 (then the
// program says it skipped, and exits 0). libbacklot must be reachable as "backlot"
// (LD_LIBRARY_PATH). Each check prints "ok" or "FAIL" and why; the last line is
// "csharp: N passed, N failed"; the exit status is 0 only when every check passed. A check still
// running after BACKLOT_TEST_CHECK_TIMEOUT seconds (120 by default) fails, and the program ends.

using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text;
using System.Threading;
using Backlot;

internal static class BacklotTests
{
    private static int passed;
    private static int failed;

    private static string catalogUrl, rootPub, ca, wrongRootPub, source, pack;
    private static readonly List<string> cleanup = new List<string>();

    private sealed class CheckFailed : Exception
    {
        public CheckFailed(string message) : base(message) { }
    }

    private sealed class Boom : Exception
    {
        public Boom(string message) : base(message) { }
    }

    private static void Expect(bool condition, string what)
    {
        if (!condition) throw new CheckFailed(what);
    }

    // The watchdog: a check still running after BACKLOT_TEST_CHECK_TIMEOUT seconds (120 by
    // default) is a failure (a deadlock, most likely), reported with the summary before the
    // process ends.
    private static readonly object running = new object();
    private static string runningCheck;
    private static DateTime runningSince;

    private static void StartWatchdog()
    {
        int limit;
        if (!int.TryParse(Environment.GetEnvironmentVariable("BACKLOT_TEST_CHECK_TIMEOUT"), out limit) || limit <= 0)
            limit = 120;
        var thread = new Thread(() =>
        {
            for (;;)
            {
                Thread.Sleep(1000);
                lock (running)
                {
                    if (runningCheck == null) continue;
                    double seconds = (DateTime.UtcNow - runningSince).TotalSeconds;
                    if (seconds < limit) continue;
                    Console.WriteLine("FAIL " + runningCheck + ": still running after " + (int)seconds +
                                      " s (a deadlock?); the process ends here");
                    Console.WriteLine("csharp: " + passed + " passed, " + (failed + 1) + " failed");
                    Console.Out.Flush();
                    _exit(1);
                }
            }
        });
        thread.IsBackground = true;
        thread.Start();
    }

    private static void Check(string name, Action body)
    {
        lock (running)
        {
            runningCheck = name;
            runningSince = DateTime.UtcNow;
        }
        try
        {
            body();
            passed++;
            Console.WriteLine("ok   " + name);
        }
        catch (Exception e)
        {
            failed++;
            Console.WriteLine("FAIL " + name + ": " + (e is CheckFailed ? e.Message : e.ToString()));
        }
        finally
        {
            lock (running) runningCheck = null;
        }
    }

    private static BacklotException Throws(Action body, BacklotStatus expected, string what)
    {
        try
        {
            body();
        }
        catch (BacklotException e)
        {
            Expect(e.Status == expected, what + ": expected " + expected + ", got " + e.Status + " (" + e.Message + ")");
            Expect(e.StatusName == BacklotLibrary.StatusName(expected), what + ": StatusName is " + e.StatusName);
            Expect(!string.IsNullOrEmpty(e.LibraryMessage), what + ": no message");
            Expect(e.Message.Contains(e.LibraryMessage), what + ": Message lacks the library's message");
            return e;
        }
        throw new CheckFailed(what + ": no exception (expected " + expected + ")");
    }

    private static string NewContainer(string name)
    {
        string dir = Path.Combine(Path.GetTempPath(), "backlot-cs-" + name + "-" + Guid.NewGuid().ToString("N"));
        cleanup.Add(dir);
        return dir;
    }

    private static BacklotManager Open(string container, string key = null, ulong bandwidth = 0)
    {
        return new BacklotManager(container, catalogUrl, key ?? rootPub, ca, bandwidthLimit: bandwidth);
    }

    private static bool Same(byte[] a, byte[] b)
    {
        if (a == null || b == null || a.Length != b.Length) return false;
        for (int i = 0; i < a.Length; i++)
            if (a[i] != b[i]) return false;
        return true;
    }

    private static bool WaitFor(Func<bool> condition, int milliseconds)
    {
        var until = DateTime.UtcNow.AddMilliseconds(milliseconds);
        while (!condition())
        {
            if (DateTime.UtcNow > until) return false;
            Thread.Sleep(20);
        }
        return true;
    }

    private static int Main()
    {
        string[] names =
        {
            "BACKLOT_TEST_CATALOG_URL", "BACKLOT_TEST_ROOT_PUB", "BACKLOT_TEST_CA", "BACKLOT_TEST_WRONG_ROOT_PUB",
            "BACKLOT_TEST_SOURCE", "BACKLOT_TEST_PACK",
        };
        var missing = names.Where(n => string.IsNullOrEmpty(Environment.GetEnvironmentVariable(n))).ToList();
        if (missing.Count > 0)
        {
            if (Environment.GetEnvironmentVariable("BACKLOT_ALLOW_SKIP") == "1")
            {
                Console.WriteLine("csharp: skipped: not set: " + string.Join(", ", missing));
                return 0;
            }
            foreach (var n in missing) Console.WriteLine("FAIL environment: " + n + " is not set");
            Console.WriteLine("csharp: 0 passed, " + missing.Count + " failed");
            return 1;
        }
        StartWatchdog();
        catalogUrl = Environment.GetEnvironmentVariable("BACKLOT_TEST_CATALOG_URL");
        rootPub = Environment.GetEnvironmentVariable("BACKLOT_TEST_ROOT_PUB");
        ca = Environment.GetEnvironmentVariable("BACKLOT_TEST_CA");
        wrongRootPub = Environment.GetEnvironmentVariable("BACKLOT_TEST_WRONG_ROOT_PUB");
        source = Environment.GetEnvironmentVariable("BACKLOT_TEST_SOURCE");
        pack = Environment.GetEnvironmentVariable("BACKLOT_TEST_PACK");

        try
        {
            Run();
        }
        catch (Exception e)
        {
            failed++;
            Console.WriteLine("FAIL (outside a check): " + e);
        }
        foreach (var dir in cleanup)
        {
            try { if (Directory.Exists(dir)) Directory.Delete(dir, true); } catch (Exception) { }
        }
        Console.WriteLine("csharp: " + passed + " passed, " + failed + " failed");
        return End(failed == 0 && passed > 0 ? 0 : 1);
    }

    // Mono before 6.12 (Debian's 6.8) hangs at shutdown when a thread that native code created
    // called into managed code (libbacklot's status-update and delegate threads): its
    // mono_thread_manage tries to abort that thread while the thread detaches itself
    // (mono/mono#18656, #20435). The result is known and printed by now, so leave with _exit(2),
    // unless BACKLOT_TEST_NORMAL_EXIT=1 asks for the runtime's own shutdown.
    [System.Runtime.InteropServices.DllImport("libc", EntryPoint = "_exit")]
    private static extern void _exit(int status);

    private static int End(int status)
    {
        Console.Out.Flush();
        Console.Error.Flush();
        if (Type.GetType("Mono.Runtime") != null && Environment.GetEnvironmentVariable("BACKLOT_TEST_NORMAL_EXIT") != "1")
            _exit(status);
        return status;
    }

    private static void Run()
    {
        string small = pack + "/1.txt";
        string big = pack + "/big.bin";
        byte[] smallSource = File.ReadAllBytes(Path.Combine(source, small));
        byte[] bigSource = File.ReadAllBytes(Path.Combine(source, big));

        Check("library version and status names", () =>
        {
            Expect(!string.IsNullOrEmpty(BacklotLibrary.Version), "empty version");
            Expect(BacklotLibrary.StatusName(BacklotStatus.Untrusted) == "BACKLOT_ERR_UNTRUSTED", "Untrusted's name");
            Expect(BacklotLibrary.StatusName(BacklotStatus.Ok) == "BACKLOT_OK", "Ok's name");
            Expect(BacklotLibrary.StatusName(999) == "BACKLOT_ERR_UNKNOWN", "999's name");
            Expect(BacklotLibrary.StatusName(BacklotStatus.BaDownloadNotScheduled) ==
                   "BACKLOT_ERR_BA_DOWNLOAD_NOT_SCHEDULED", "1101's name");
            // Every member of the enum is a status the library names, under the same name.
            foreach (BacklotStatus s in Enum.GetValues(typeof(BacklotStatus)))
            {
                string name = BacklotLibrary.StatusName(s);
                Expect(name != "BACKLOT_ERR_UNKNOWN", (int)s + " (" + s + ") is unknown to the library");
                string member = Enum.GetName(typeof(BacklotStatus), s);
                string expected = Snake(member);
                bool matches = Enum.GetNames(typeof(BacklotStatus))
                    .Where(n => (int)Enum.Parse(typeof(BacklotStatus), n) == (int)s)
                    .Any(n => Snake(n) == name);
                Expect(matches, (int)s + ": the library's name " + name + " is none of the enum's (" + expected + ")");
            }
        });

        string container = NewContainer("main");
        BacklotManager manager = null;
        Check("open a manager", () => { manager = Open(container); });
        if (manager == null) return;

        var updates = new List<StatusUpdate>();
        var packUpdates = new List<StatusUpdate>();
        Subscription all = null, one = null;
        Check("subscribe", () =>
        {
            all = manager.Subscribe(u => { lock (updates) updates.Add(u); });
            one = manager.Subscribe(u => { lock (packUpdates) packUpdates.Add(u); }, pack);
            Expect(all.Id != one.Id && all.Id != 0, "subscription numbers " + all.Id + ", " + one.Id);
        });

        var progress = new List<KeyValuePair<ulong, ulong>>();
        int callingThread = Thread.CurrentThread.ManagedThreadId;
        bool progressOnCaller = true;
        Check("install the pack, with progress", () =>
        {
            manager.EnsureLocalAvailability(pack, (done, total) =>
            {
                if (Thread.CurrentThread.ManagedThreadId != callingThread) progressOnCaller = false;
                progress.Add(new KeyValuePair<ulong, ulong>(done, total));
            });
            Expect(progress.Count > 0, "no progress call");
            var last = progress[progress.Count - 1];
            Expect(last.Key == last.Value, "last progress " + last.Key + " of " + last.Value);
            Expect(last.Value >= (ulong)bigSource.Length, "last total " + last.Value + " for a 3 MB pack");
            Expect(progressOnCaller, "progress ran on another thread");
        });

        Check("contents match the source", () =>
        {
            Expect(Same(manager.Contents(small, pack), smallSource), small + " differs");
            Expect(Encoding.UTF8.GetString(manager.Contents(small, pack)) == "the first level\n", small + "'s text");
            Expect(Same(manager.Contents(big), bigSource), big + " (searched in every pack) differs");
        });

        Check("status updates: BEGAN … FINISHED", () =>
        {
            Func<List<StatusUpdate>, bool> done = list =>
            {
                lock (list) return list.Any(u => u.PackId == pack && u.Kind == StatusUpdateKind.Finished);
            };
            Expect(WaitFor(() => done(updates) && done(packUpdates), 10000),
                "no FINISHED within 10 s; got: " + string.Join(", ", updates.Select(u => u.ToString())));
            foreach (var list in new[] { updates, packUpdates })
            {
                List<StatusUpdate> copy;
                lock (list) copy = list.Where(u => u.PackId == pack).ToList();
                int began = copy.FindIndex(u => u.Kind == StatusUpdateKind.Began);
                int finished = copy.FindIndex(u => u.Kind == StatusUpdateKind.Finished);
                Expect(began >= 0, "no BEGAN: " + string.Join(", ", copy.Select(u => u.ToString())));
                Expect(began < finished, "BEGAN after FINISHED");
                Expect(!copy.Any(u => u.Kind == StatusUpdateKind.Failed), "a FAILED update");
                var f = copy[finished];
                Expect(f.CompletedBytes == f.TotalBytes && f.Error == BacklotStatus.Ok,
                    "FINISHED " + f.CompletedBytes + "/" + f.TotalBytes);
            }
            Expect(all.Error == null && one.Error == null, "a handler threw");
        });

        Check("descriptor, FileStream and path", () =>
        {
            int fd = manager.Descriptor(small, pack);
            Expect(fd >= 0, "descriptor " + fd);
            CloseFd(fd);
            using (var stream = manager.OpenFileStream(big, pack))
            {
                var read = new MemoryStream();
                stream.CopyTo(read);
                Expect(Same(read.ToArray(), bigSource), "the FileStream's bytes differ");
            }
            string where = manager.Path(small, pack);
            Expect(File.Exists(where), where + " does not exist");
            Expect(Same(File.ReadAllBytes(where), smallSource), "the file at Path differs");
        });

        Check("asset pack, catalog and container listings, device ID", () =>
        {
            var info = manager.AssetPack(pack);
            Expect(info.Id == pack, "Id " + info.Id);
            Expect(info.DownloadSize > 0, "DownloadSize 0");
            Expect((info.Status & AssetPackStatus.Downloaded) != 0, "Status " + info.Status + " lacks Downloaded");
            Expect(manager.AllAssetPacks().Contains(pack), "AllAssetPacks lacks " + pack);
            Expect(manager.InstalledPacks().SequenceEqual(new[] { pack }), "InstalledPacks: " +
                string.Join(",", manager.InstalledPacks()));
            string device = manager.DeviceId;
            Expect(!string.IsNullOrEmpty(device) && device == manager.DeviceId, "device ID '" + device + "'");
            Expect(manager.DeviceProfile.StartsWith("textureFormat=") && manager.DeviceProfile.Contains(",deviceTier="),
                "device profile '" + manager.DeviceProfile + "'");
        });

        Check("ensure latest and check for updates (nothing newer)", () =>
        {
            ulong lastDone = 1, lastTotal = 0;
            manager.EnsureLatestAvailability(pack, (d, t) => { lastDone = d; lastTotal = t; });
            Expect(lastDone == lastTotal, "last progress " + lastDone + " of " + lastTotal);
            Expect(manager.CheckForUpdates().Length == 0, "CheckForUpdates updated something");
            manager.EnsureLocalAvailability(pack); // installed: returns at once, no progress given
        });

        Check("errors carry status, name and message", () =>
        {
            Throws(() => manager.Contents("no/such/file.txt", pack), BacklotStatus.FileNotFound, "a missing file");
            Throws(() => manager.EnsureLocalAvailability("NoSuchPack"), BacklotStatus.AssetPackNotFound, "a missing pack");
            Throws(() => manager.Contents(small, "a\0b"), BacklotStatus.InvalidArgument, "a NUL in a string");
            Throws(() => manager.Contents(null), BacklotStatus.InvalidArgument, "a null path");
            Throws(() => new BacklotManager(NewContainer("bad"), "not a catalog url", rootPub, ca),
                BacklotStatus.Usage, "a bad catalog URL");
            Throws(() => new BacklotManager(null, catalogUrl, rootPub, ca), BacklotStatus.InvalidArgument,
                "a null container");
        });

        Check("a refused catalog (another repository's key) throws Untrusted", () =>
        {
            using (var other = Open(NewContainer("wrong"), wrongRootPub))
            {
                var e = Throws(() => other.EnsureLocalAvailability(pack), BacklotStatus.Untrusted, "wrong key");
                Expect(e.StatusName == "BACKLOT_ERR_UNTRUSTED", "StatusName " + e.StatusName);
                Expect(e.LibraryMessage.Length > 10, "message '" + e.LibraryMessage + "'");
                Expect(other.InstalledPacks().Length == 0, "something was installed");
            }
        });

        Check("a progress callback's exception is rethrown after the call", () =>
        {
            manager.Remove(pack);
            Expect(manager.InstalledPacks().Length == 0, "not removed");
            try
            {
                manager.EnsureLocalAvailability(pack, (d, t) => { throw new Boom("from progress"); });
                throw new CheckFailed("no exception");
            }
            catch (Boom e)
            {
                Expect(e.Message == "from progress", "message");
                Expect(e.StackTrace != null && e.StackTrace.Contains("BacklotTests"), "stack trace lost: " + e.StackTrace);
            }
            // The library is fine, and installs it again (resuming what arrived).
            manager.EnsureLocalAvailability(pack);
            Expect(Same(manager.Contents(big, pack), bigSource), "reinstalled big.bin differs");
        });

        Check("a subscription handler's exception is kept, not passed to native code", () =>
        {
            Exception told = null;
            using (var throwing = manager.Subscribe(u => { throw new Boom("from handler"); }, pack, e => told = e))
            {
                manager.Remove(pack);
                manager.EnsureLocalAvailability(pack);
                Expect(WaitFor(() => throwing.Error != null, 10000), "no exception recorded");
                Expect(throwing.Error is Boom, "recorded " + throwing.Error);
                Expect(WaitFor(() => told != null, 1000) && told is Boom, "onError not told");
            }
        });

        Check("a subscription disposed from its own handler", () =>
        {
            int calls = 0;
            Subscription self = null;
            var gate = new object();
            lock (gate)
            {
                self = manager.Subscribe(u =>
                {
                    Interlocked.Increment(ref calls);
                    lock (gate) self.Dispose();
                }, pack);
            }
            manager.Remove(pack);
            manager.EnsureLocalAvailability(pack);
            Expect(WaitFor(() => Volatile.Read(ref calls) > 0, 10000), "no callback");
            Thread.Sleep(300);
            Expect(Volatile.Read(ref calls) == 1, "called " + calls + " times after disposing itself");
            Expect(self.Error == null, "the handler threw: " + self.Error);
        });

        Check("cancel a running download from its progress callback", () =>
        {
            using (var slow = Open(NewContainer("slow"), null, 300000))
            {
                bool cancelled = false;
                Throws(() => slow.EnsureLocalAvailability(pack, (d, t) =>
                {
                    if (!cancelled && d < t) { cancelled = true; slow.Cancel(pack); }
                }), BacklotStatus.Cancelled, "cancel");
                Expect(cancelled, "no progress before the end");
                Expect(slow.InstalledPacks().Length == 0, "installed anyway");
                slow.Cancel(pack); // nothing running: fine
            }
        });

        Check("dispose while a download runs on another thread", () =>
        {
            var slow = Open(NewContainer("close"), null, 300000);
            Exception outcome = null;
            var started = new ManualResetEvent(false);
            var thread = new Thread(() =>
            {
                try { slow.EnsureLocalAvailability(pack, (d, t) => started.Set()); }
                catch (Exception e) { outcome = e; }
                started.Set();
            });
            thread.Start();
            Expect(started.WaitOne(20000), "no progress within 20 s");
            slow.Dispose();
            Expect(thread.Join(20000), "the download did not end within 20 s of Dispose");
            var b = outcome as BacklotException;
            Expect(b != null && (b.Status == BacklotStatus.Cancelled || b.Status == BacklotStatus.ClosedHandle),
                "outcome: " + outcome);
        });

        Check("exclusive control", () =>
        {
            bool ran = false;
            manager.WithExclusiveControl(() => { ran = true; });
            Expect(ran, "the body did not run");
            Expect(manager.WithExclusiveControl(() => 42, 5.0) == 42, "the body's value");
            try
            {
                manager.WithExclusiveControl(() => { throw new Boom("from body"); }, 0);
                throw new CheckFailed("no exception");
            }
            catch (Boom)
            {
            }
        });

        Check("URL downloads: schedule, list, cancel", () =>
        {
            Expect(manager.CurrentDownloads().Length == 0, "downloads at the start");
            Throws(() => manager.CancelDownload("not-scheduled"), BacklotStatus.BaDownloadNotScheduled, "cancel unknown");
            // Scheduled for the agent (none runs here): it stays scheduled until cancelled.
            var download = new UrlDownload("cs-scheduled", catalogUrl.Replace("catalog.json", "nothing-here"));
            manager.ScheduleDownload(download);
            Expect(manager.CurrentDownloads().Contains("cs-scheduled"), "not listed");
            Throws(() => manager.ScheduleDownload(download), BacklotStatus.BaDownloadAlreadyScheduled, "twice");
            manager.CancelDownload("cs-scheduled");
            Expect(!manager.CurrentDownloads().Contains("cs-scheduled"), "still listed after cancel");
            Throws(() => manager.ScheduleDownload(new UrlDownload("", catalogUrl)), BacklotStatus.InvalidArgument,
                "an empty identifier");
        });

        Check("URL downloads: a foreground download reaches the delegate", () =>
        {
            byte[] got = null;
            string failure = null;
            var finished = new ManualResetEvent(false);
            var wrote = 0L;
            manager.SetDownloadDelegate(new DownloadDelegate
            {
                Wrote = (id, n, total, expected) => Interlocked.Exchange(ref wrote, total),
                Finished = (id, file) =>
                {
                    if (id == "cs-catalog") { got = File.ReadAllBytes(file); finished.Set(); }
                },
                Failed = (id, e) =>
                {
                    if (id == "cs-catalog") { failure = e.Message; finished.Set(); }
                },
            });
            try
            {
                manager.StartForegroundDownload(new UrlDownload("cs-catalog", catalogUrl));
                Expect(finished.WaitOne(30000), "no outcome within 30 s");
                Expect(failure == null, "failed: " + failure);
                Expect(got != null && got.Length > 0 && Encoding.UTF8.GetString(got).Contains("payload"),
                    "the downloaded catalog (" + (got == null ? -1 : got.Length) + " bytes)");
            }
            finally
            {
                manager.SetDownloadDelegate(null);
            }
        });

        Check("use after Dispose throws ClosedHandle", () =>
        {
            var sub = manager.Subscribe(u => { });
            manager.Dispose();
            manager.Dispose(); // twice: nothing
            Throws(() => manager.InstalledPacks(), BacklotStatus.ClosedHandle, "InstalledPacks");
            Throws(() => manager.Contents(small, pack), BacklotStatus.ClosedHandle, "Contents");
            Throws(() => manager.EnsureLocalAvailability(pack, (d, t) => { }), BacklotStatus.ClosedHandle, "Ensure");
            Throws(() => manager.Subscribe(u => { }), BacklotStatus.ClosedHandle, "Subscribe");
            Throws(() => { var unused = manager.DeviceId; }, BacklotStatus.ClosedHandle, "DeviceId");
            sub.Dispose(); // after the manager: nothing
            all.Dispose();
            one.Dispose();
        });

        Check("threads: calls on several threads at once", () =>
        {
            using (var shared = Open(container))
            {
                var errors = new List<string>();
                var threads = Enumerable.Range(0, 4).Select(i => new Thread(() =>
                {
                    try
                    {
                        for (int k = 0; k < 10; k++)
                        {
                            if (!Same(shared.Contents(small, pack), smallSource)) lock (errors) errors.Add("bytes");
                            try { shared.Contents("missing-" + i, pack); lock (errors) errors.Add("no error"); }
                            catch (BacklotException e)
                            {
                                // The message is the thread's own failure.
                                if (!e.LibraryMessage.Contains("missing-" + i)) lock (errors) errors.Add(e.LibraryMessage);
                            }
                        }
                    }
                    catch (Exception e) { lock (errors) errors.Add(e.ToString()); }
                })).ToList();
                threads.ForEach(t => t.Start());
                threads.ForEach(t => t.Join());
                Expect(errors.Count == 0, string.Join("; ", errors.Distinct()));
            }
        });
    }

    // BACKLOT_ERR_… from an enum member's name: BaDownloadNotScheduled → BACKLOT_ERR_BA_DOWNLOAD_NOT_SCHEDULED.
    private static string Snake(string member)
    {
        if (member == "Ok") return "BACKLOT_OK";
        var text = new StringBuilder("BACKLOT_ERR_");
        for (int i = 0; i < member.Length; i++)
        {
            if (i > 0 && char.IsUpper(member[i])) text.Append('_');
            text.Append(char.ToUpperInvariant(member[i]));
        }
        return text.ToString();
    }

    [System.Runtime.InteropServices.DllImport("__Internal", EntryPoint = "close")]
    private static extern int close(int fd);

    private static void CloseFd(int fd) { close(fd); }
}
