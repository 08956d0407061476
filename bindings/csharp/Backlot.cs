// Backlot.cs: the C# binding of libbacklot (include/backlot/backlot.h), in one file that a Unity
// project drops into Assets/Plugins (C# 7.3; no Span, no newer syntax) and that any Mono or .NET
// program compiles with it.
//
//   using (var manager = new Backlot.BacklotManager(container, catalogUrl, "root.pub", "ca.pem"))
//   {
//       manager.EnsureLocalAvailability("Levels", (done, total) => Console.WriteLine(done + "/" + total));
//       byte[] level = manager.Contents("Levels/1.json");
//   }
//
// Finding the library. [DllImport("backlot")] is resolved by the runtime: Mono and .NET on Linux
// try libbacklot.so (then backlot.so) through dlopen, so LD_LIBRARY_PATH, the rpath or
// /etc/ld.so.conf must reach it; macOS tries libbacklot.dylib; Unity loads the plugin it was given
// (Assets/Plugins/x86_64/libbacklot.so). On iOS (IL2CPP, static linking) the name is __Internal.
// Where only the versioned file is installed (libbacklot.so.0, no development symlink), tell Mono
// with a dllmap in the assembly's .config file (Program.exe.config, or Backlot.dll.config):
//
//   <configuration>
//     <dllmap dll="backlot" target="libbacklot.so.0" os="linux"/>
//     <dllmap dll="backlot" target="libbacklot.0.dylib" os="osx"/>
//   </configuration>
//
// Mono 6.8 (Debian 12's mono-devel) and the library's threads. Status updates and URL-download
// delegates are called on libbacklot's threads (libdispatch workers, which come and go), and a
// runtime attaches such a thread when it first calls managed code. Mono before 6.12 has two bugs
// when an attached native thread exits: with its default (hybrid) suspend, a GC that stops the
// world while such a thread exits deadlocks (mono/mono#20435), and shutdown hangs aborting such
// threads (mono/mono#18656). On Mono 6.8 run with MONO_THREADS_SUSPEND=coop (the tests do), and
// end the process with _exit once its work is done if it used Subscribe or SetDownloadDelegate.
// .NET (CoreCLR) and IL2CPP do not have these bugs; Unity's Mono fork has its own thread code.
//
// The rules of the C interface hold here as C# rules:
//  - A failing call throws BacklotException: its Status (BacklotStatus, the header's numbers),
//    StatusName (backlot_status_name) and LibraryMessage (backlot_last_error_message, read on the
//    failing thread right after the call).
//  - Strings go in and come out as UTF-8, marshalled by hand (not by the runtime's LPStr rules);
//    a string holding U+0000 or a lone surrogate is refused (InvalidArgument) rather than cut.
//  - Every buffer the library hands out is copied and freed with backlot_free; a list of strings
//    is one block, freed once.
//  - Callbacks go through static methods marked [MonoPInvokeCallback] (as IL2CPP requires), with a
//    GCHandle of the call's state as the context pointer. No exception crosses into native code:
//    a progress or exclusive-control callback's exception is caught, the call is cancelled or
//    ended, and the exception is rethrown (with its stack) once the blocking call returns. Status
//    updates and URL-download delegates run on the library's threads, so their exceptions go to the
//    handler given for them (onError / DownloadDelegate.Error) and are kept in Subscription.Error.
//  - A manager's handle is a number the library checks, never a pointer it follows: after Dispose
//    every call reaches the library and throws BacklotException with Status ClosedHandle.
//  - Every method may be called from any thread; a blocking call is cancelled by Cancel(packId)
//    or Dispose() from another thread.
//
// Outside Unity this file defines its own MonoPInvokeCallbackAttribute (IL2CPP recognises the
// attribute by its name); inside Unity it uses AOT.MonoPInvokeCallbackAttribute.

using System;
using System.Collections.Generic;
using System.IO;
using System.Runtime.ExceptionServices;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;
using Microsoft.Win32.SafeHandles;
#if UNITY_5_3_OR_NEWER
using AOT;
#endif

#if !UNITY_5_3_OR_NEWER
namespace Backlot.Interop
{
    /// <summary>Marks a static method that native code calls (Unity's AOT attribute, by name).</summary>
    [AttributeUsage(AttributeTargets.Method)]
    internal sealed class MonoPInvokeCallbackAttribute : Attribute
    {
        public MonoPInvokeCallbackAttribute(Type t) { }
    }
}
#endif

namespace Backlot
{
#if !UNITY_5_3_OR_NEWER
    using Backlot.Interop;
#endif

    /// <summary>What a libbacklot call did: the numbers of backlot.h, which never change.</summary>
    public enum BacklotStatus
    {
        Ok = 0,
        /// <summary>A NULL where a value is needed, a string that is not UTF-8, a value out of range.</summary>
        InvalidArgument = 1,
        /// <summary>The manager was disposed (closed), or the handle belongs to no open manager.</summary>
        ClosedHandle = 2,
        /// <summary>An unexpected failure inside the library (a bug: report the message).</summary>
        Internal = 3,

        Usage = 10,
        InvalidManifest = 11,
        InvalidJson = 12,
        InvalidPackId = 13,
        InvalidSource = 14,
        InvalidInput = 15,
        CorruptArchive = 16,
        Io = 17,
        AlreadyExists = 18,
        Library = 19,
        CheckFailed = 20,
        /// <summary>Signed metadata failed verification (a catalog signed by another key).</summary>
        Untrusted = 21,
        Conflict = 22,
        NotFound = 23,
        Forbidden = 24,
        QuotaExceeded = 25,
        /// <summary>Cancel, or the manager was disposed while the call ran.</summary>
        Cancelled = 26,
        StaleCatalog = 27,
        Unavailable = 28,
        Tls = 29,

        AssetPackNotFound = 40,
        FileNotFound = 41,

        /// <summary>Apple's BAErrorCode values, each at 1000 + Apple's number (BACKLOT_ERR_BA(n)).</summary>
        BaBase = 1000,
        BaDownloadInvalid = 1000,
        BaCallFromExtensionNotAllowed = 1050,
        BaCallFromInactiveProcessNotAllowed = 1051,
        BaCallerConnectionNotAccepted = 1055,
        BaCallerConnectionInvalid = 1056,
        BaDownloadAlreadyScheduled = 1100,
        BaDownloadNotScheduled = 1101,
        BaDownloadFailedToStart = 1102,
        BaDownloadAlreadyFailed = 1103,
        BaDownloadEssentialDownloadNotPermitted = 1109,
        BaDownloadBackgroundActivityProhibited = 1111,
        BaDownloadWouldExceedAllowance = 1112,
        BaDownloadDoesNotExist = 1113,
        BaSessionDownloadDisallowedByDomain = 1202,
        BaSessionDownloadDisallowedByAllowance = 1203,
        BaSessionDownloadAllowanceExceeded = 1204,
        BaSessionDownloadNotPermittedBeforeAppLaunch = 1206,
    }

    /// <summary>A failure libbacklot reported (or this binding, for arguments it cannot pass).</summary>
    [Serializable]
    public sealed class BacklotException : Exception
    {
        /// <summary>The status, as the enum (a number the enum does not name keeps its value).</summary>
        public BacklotStatus Status { get; private set; }

        /// <summary>The status's number.</summary>
        public int StatusCode { get { return (int)Status; } }

        /// <summary>backlot_status_name of the status ("BACKLOT_ERR_UNTRUSTED").</summary>
        public string StatusName { get; private set; }

        /// <summary>The library's message (backlot_last_error_message), with its hint line if any.</summary>
        public string LibraryMessage { get; private set; }

        public BacklotException(BacklotStatus status, string libraryMessage)
            : base(Compose(status, libraryMessage))
        {
            Status = status;
            StatusName = BacklotLibrary.StatusName(status);
            LibraryMessage = libraryMessage ?? "";
        }

        private BacklotException(System.Runtime.Serialization.SerializationInfo info,
            System.Runtime.Serialization.StreamingContext context) : base(info, context) { }

        private static string Compose(BacklotStatus status, string message)
        {
            string name = BacklotLibrary.StatusName(status);
            return string.IsNullOrEmpty(message) ? name : name + ": " + message;
        }
    }

    /// <summary>Apple's AssetPack.Status bits.</summary>
    [Flags]
    public enum AssetPackStatus : uint
    {
        None = 0,
        DownloadAvailable = 1 << 0,
        UpdateAvailable = 1 << 1,
        UpToDate = 1 << 2,
        OutOfDate = 1 << 3,
        Obsolete = 1 << 4,
        Downloading = 1 << 5,
        Downloaded = 1 << 6,
    }

    /// <summary>A pack the catalog offers this device (Apple's AssetPack), with its status.</summary>
    public sealed class AssetPack
    {
        public string Id { get; private set; }
        public long Version { get; private set; }
        /// <summary>Bytes of its archive.</summary>
        public ulong DownloadSize { get; private set; }
        public AssetPackStatus Status { get; private set; }

        internal AssetPack(string id, long version, ulong downloadSize, AssetPackStatus status)
        {
            Id = id;
            Version = version;
            DownloadSize = downloadSize;
            Status = status;
        }

        public override string ToString()
        {
            return Id + " v" + Version + " (" + DownloadSize + " bytes, " + Status + ")";
        }
    }

    /// <summary>BACKLOT_UPDATE_*.</summary>
    public enum StatusUpdateKind
    {
        Began = 1,
        /// <summary>Sent again each time CompletedBytes changes.</summary>
        Downloading = 2,
        /// <summary>Queued behind another process of the container.</summary>
        Paused = 3,
        Finished = 4,
        Failed = 5,
    }

    /// <summary>One of Apple's statusUpdates: a copy, valid after the callback.</summary>
    public sealed class StatusUpdate
    {
        public StatusUpdateKind Kind { get; private set; }
        public string PackId { get; private set; }
        /// <summary>For Downloading and Finished.</summary>
        public ulong CompletedBytes { get; private set; }
        public ulong TotalBytes { get; private set; }
        /// <summary>For Failed: the failure's status; else Ok.</summary>
        public BacklotStatus Error { get; private set; }
        /// <summary>For Failed: its message; else "".</summary>
        public string ErrorMessage { get; private set; }

        internal StatusUpdate(StatusUpdateKind kind, string packId, ulong completed, ulong total,
            BacklotStatus error, string message)
        {
            Kind = kind;
            PackId = packId;
            CompletedBytes = completed;
            TotalBytes = total;
            Error = error;
            ErrorMessage = message ?? "";
        }

        public override string ToString()
        {
            string text = Kind + " " + PackId;
            if (Kind == StatusUpdateKind.Downloading || Kind == StatusUpdateKind.Finished)
                text += " " + CompletedBytes + "/" + TotalBytes;
            if (Kind == StatusUpdateKind.Failed)
                text += " " + BacklotLibrary.StatusName(Error) + ": " + ErrorMessage;
            return text;
        }
    }

    /// <summary>A subscription to status updates: Dispose ends it (no callback runs after Dispose
    /// returns, unless Dispose is called from the callback itself).</summary>
    public sealed class Subscription : IDisposable
    {
        internal readonly Action<StatusUpdate> Handler;
        internal readonly Action<Exception> OnError;
        private readonly BacklotManager owner;
        private GCHandle self;
        private ulong id;
        private int ended;
        private Exception error;

        /// <summary>The library's number of the subscription.</summary>
        public ulong Id { get { return id; } }

        /// <summary>The pack it follows, null for every pack.</summary>
        public string PackId { get; private set; }

        /// <summary>The first exception the handler threw (it is not passed to native code).</summary>
        public Exception Error { get { return Volatile.Read(ref error); } }

        internal Subscription(BacklotManager owner, string packId, Action<StatusUpdate> handler, Action<Exception> onError)
        {
            this.owner = owner;
            PackId = packId;
            Handler = handler;
            OnError = onError;
        }

        internal IntPtr Pin()
        {
            self = GCHandle.Alloc(this);
            return GCHandle.ToIntPtr(self);
        }

        internal void Opened(ulong number) { id = number; }

        internal void Record(Exception e) { Interlocked.CompareExchange(ref error, e, null); }

        /// <summary>Ends the subscription (unsubscribes; a disposed manager has ended it already).</summary>
        public void Dispose()
        {
            if (Interlocked.Exchange(ref ended, 1) != 0) return;
            owner.Unsubscribe(this, id);
            Release();
        }

        // Called once no callback can run any more (after backlot_unsubscribe or backlot_manager_close).
        internal void Release()
        {
            Interlocked.Exchange(ref ended, 1);
            lock (this)
            {
                if (self.IsAllocated) self.Free();
            }
        }
    }

    /// <summary>A URL download (Apple's BAURLDownload).</summary>
    public sealed class UrlDownload
    {
        /// <summary>Unique in the container; required.</summary>
        public string Identifier;
        /// <summary>https:// (or http:// to loopback); required.</summary>
        public string Url;
        /// <summary>The size the server will send, or -1 when unknown.</summary>
        public long FileSize = -1;
        /// <summary>Essential (before the app's first launch).</summary>
        public bool Essential;
        /// <summary>Higher runs first; 0 is Apple's default.</summary>
        public long Priority;

        public UrlDownload() { }

        public UrlDownload(string identifier, string url, long fileSize = -1, bool essential = false, long priority = 0)
        {
            Identifier = identifier;
            Url = url;
            FileSize = fileSize;
            Essential = essential;
            Priority = priority;
        }
    }

    /// <summary>What the app is told about its URL downloads (Apple's BADownloadManagerDelegate).
    /// Every member may be null. They run on a thread of the library's; Finished must move or copy
    /// the file before it returns. An exception one throws goes to Error (never to native code).</summary>
    public sealed class DownloadDelegate
    {
        public Action<string> Began;
        public Action<string> Paused;
        /// <summary>identifier, bytes written now, in all, expected in all.</summary>
        public Action<string, long, long, long> Wrote;
        public Action<string, BacklotException> Failed;
        /// <summary>identifier, the downloaded file's path (deleted once this returns).</summary>
        public Action<string, string> Finished;
        /// <summary>Told about an exception one of the members above threw.</summary>
        public Action<Exception> Error;
    }

    /// <summary>The library as a whole: version and status names.</summary>
    public static class BacklotLibrary
    {
        /// <summary>The library's version ("1.4.0").</summary>
        public static string Version { get { return Native.FromUtf8(Native.backlot_version()); } }

        /// <summary>The ABI version this binding was written against (BACKLOT_ABI_VERSION).</summary>
        public const int AbiVersion = 2;

        /// <summary>The BACKLOT_ABI_VERSION the loaded library was built with (backlot_abi_version).</summary>
        public static int LibraryAbiVersion { get { return (int)Native.backlot_abi_version(); } }

        /// <summary>backlot_status_name: "BACKLOT_ERR_UNKNOWN" for a number the library does not name.</summary>
        public static string StatusName(BacklotStatus status)
        {
            try
            {
                return Native.FromUtf8(Native.backlot_status_name((int)status));
            }
            catch (DllNotFoundException)
            {
                return "BACKLOT_STATUS_" + (int)status;
            }
            catch (EntryPointNotFoundException)
            {
                return "BACKLOT_STATUS_" + (int)status;
            }
        }

        public static string StatusName(int status) { return StatusName((BacklotStatus)status); }
    }

    /// <summary>Apple's AssetPackManager over one container, fed by a signed catalog
    /// (backlot_manager_open). Dispose it: it closes the handle, ends its subscriptions and
    /// cancels its downloads.</summary>
    public sealed class BacklotManager : IDisposable
    {
        private readonly IntPtr handle;
        private readonly object gate = new object();
        private readonly List<Subscription> subscriptions = new List<Subscription>();
        private readonly object delegateGate = new object();
        private IntPtr delegateContext; // a GCHandle of the DownloadDelegate the library holds, or Zero
        private int disposed;

        /// <summary>Opens a manager (nothing is downloaded yet).</summary>
        /// <param name="containerPath">The container folder (created when missing).</param>
        /// <param name="catalogUrl">https://HOST/…/v1/apps/APP/CHANNEL/catalog.json</param>
        /// <param name="trustedKeyPath">The repository's public key file (the server's root.pub).</param>
        /// <param name="caPath">A PEM CA file for the server, or null for the system's.</param>
        /// <param name="app">null: the APP of catalogUrl; else it must be that.</param>
        /// <param name="channel">null: the CHANNEL of catalogUrl; else it must be that.</param>
        /// <param name="bandwidthLimit">Bytes per second per connection at most; 0: no limit.</param>
        /// <param name="stallTimeoutSeconds">Seconds without progress before a retry; 0: 60.</param>
        /// <param name="retries">Attempts after the first for a failed request; -1: 4.</param>
        /// <param name="sendReports">false: the device sends no report of what it holds and how its installs end (docs/privacy.md).</param>
        /// <param name="deviceProfile">What picks a pack's variant ("textureFormat=astc,deviceTier=high"); null: detected.</param>
        public BacklotManager(string containerPath, string catalogUrl, string trustedKeyPath, string caPath = null,
            string app = null, string channel = null, ulong bandwidthLimit = 0, uint stallTimeoutSeconds = 0,
            int retries = -1, bool sendReports = true, string deviceProfile = null)
        {
            using (var strings = new NativeStrings())
            {
                var config = new Native.Config();
                Native.backlot_config_init(ref config);
                config.container_path = strings.Add(containerPath, "containerPath");
                config.catalog_url = strings.Add(catalogUrl, "catalogUrl");
                config.trusted_key_path = strings.Add(trustedKeyPath, "trustedKeyPath");
                config.ca_path = strings.Add(caPath, "caPath");
                config.app = strings.Add(app, "app");
                config.channel = strings.Add(channel, "channel");
                config.bandwidth_limit = bandwidthLimit;
                config.stall_timeout = stallTimeoutSeconds;
                config.retries = retries;
                // Reports of what the container holds and how its installs end (docs/privacy.md).
                config.no_reports = sendReports ? 0 : 1;
                config.device_profile = strings.Add(deviceProfile, "deviceProfile");
                IntPtr opened;
                Native.Check(Native.backlot_manager_open(ref config, out opened));
                handle = opened;
            }
        }

        ~BacklotManager()
        {
            // Only the handle: the library's table makes closing from the finalizer thread safe.
            Native.backlot_manager_close(handle);
        }

        /// <summary>Closes the manager: calls running on other threads end soon (downloads with
        /// Cancelled), later calls throw BacklotException(ClosedHandle). Twice does nothing.</summary>
        public void Dispose()
        {
            if (Interlocked.Exchange(ref disposed, 1) != 0) return;
            Native.backlot_manager_close(handle);
            // Closing ended every subscription (no callback runs after it returns): free their handles.
            Subscription[] open;
            lock (gate)
            {
                open = subscriptions.ToArray();
                subscriptions.Clear();
            }
            foreach (var s in open) s.Release();
            // Closing also ended the delegate: no function of it runs once close returns.
            lock (delegateGate) FreeContext(ref delegateContext);
            GC.SuppressFinalize(this);
        }

        /// <summary>The container's device identifier (for staged rollouts).</summary>
        public string DeviceId
        {
            get
            {
                IntPtr text;
                Native.Check(Native.backlot_device_id(handle, out text));
                return Native.TakeString(text);
            }
        }

        /// <summary>The profile that picks the variant of a pack with variants this device installs
        /// ("textureFormat=astc+etc2,deviceTier=2"): the one given, else the one detected.</summary>
        public string DeviceProfile
        {
            get
            {
                IntPtr text;
                Native.Check(Native.backlot_device_profile(handle, out text));
                return Native.TakeString(text);
            }
        }

        /// <summary>Returns once the pack is installed and verified (Apple's ensureLocalAvailability);
        /// an installed release is used as it is. Blocks. progress(completed, total) runs on this
        /// thread as bytes arrive, and once at the end with completed == total; if it throws, the
        /// download is cancelled and the exception is rethrown here.</summary>
        public void EnsureLocalAvailability(string packId, Action<ulong, ulong> progress = null)
        {
            Ensure(packId, progress, false);
        }

        /// <summary>The same, but an installed release older than the catalog's is updated first.</summary>
        public void EnsureLatestAvailability(string packId, Action<ulong, ulong> progress = null)
        {
            Ensure(packId, progress, true);
        }

        private void Ensure(string packId, Action<ulong, ulong> progress, bool latest)
        {
            using (var strings = new NativeStrings())
            {
                IntPtr id = strings.Add(packId, "packId");
                var state = progress == null ? null : new ProgressState(handle, id, progress);
                GCHandle pinned = state == null ? default(GCHandle) : GCHandle.Alloc(state);
                int status;
                try
                {
                    IntPtr context = state == null ? IntPtr.Zero : GCHandle.ToIntPtr(pinned);
                    Native.ProgressFn fn = state == null ? null : Trampolines.Progress;
                    status = latest
                        ? Native.backlot_ensure_latest_availability(handle, id, fn, context)
                        : Native.backlot_ensure_local_availability(handle, id, fn, context);
                    if (status != 0) Native.ThrowLast(status);
                }
                finally
                {
                    if (pinned.IsAllocated) pinned.Free();
                    if (state != null && state.Error != null) ExceptionDispatchInfo.Capture(state.Error).Throw();
                }
            }
        }

        /// <summary>Cancels the running download of a pack (its Ensure call throws Cancelled; the
        /// installed release is kept). Any thread; fine when nothing runs.</summary>
        public void Cancel(string packId)
        {
            using (var strings = new NativeStrings())
                Native.Check(Native.backlot_cancel(handle, strings.Add(packId, "packId")));
        }

        /// <summary>Updates every installed pack the catalog has a newer release of and removes
        /// those it no longer offers (Apple's checkForUpdates): the IDs of the packs updated.</summary>
        public string[] CheckForUpdates()
        {
            IntPtr list;
            UIntPtr count;
            Native.Check(Native.backlot_check_for_updates(handle, out list, out count));
            return Native.TakeStringList(list, count);
        }

        /// <summary>Removes an installed pack (a later Ensure downloads it again).</summary>
        public void Remove(string packId)
        {
            using (var strings = new NativeStrings())
                Native.Check(Native.backlot_remove(handle, strings.Add(packId, "packId")));
        }

        /// <summary>A file of an installed pack, copied. packId null searches every installed pack.</summary>
        public byte[] Contents(string path, string packId = null)
        {
            using (var strings = new NativeStrings())
            {
                IntPtr data;
                UIntPtr length;
                Native.Check(Native.backlot_contents(handle, strings.Add(path, "path"), strings.Add(packId, "packId"),
                    out data, out length));
                try
                {
                    ulong size = length.ToUInt64();
                    if (size > int.MaxValue)
                        throw new BacklotException(BacklotStatus.Io, "the file is too large for a byte[] (" + size +
                            " bytes)\n  hint: read it with OpenFileStream");
                    var bytes = new byte[(int)size];
                    if (size > 0) Marshal.Copy(data, bytes, 0, (int)size);
                    return bytes;
                }
                finally
                {
                    Native.backlot_free(data);
                }
            }
        }

        /// <summary>A file of an installed pack opened read-only: a POSIX file descriptor that the
        /// caller closes (close(2)). See OpenFileStream for a Stream over one.</summary>
        public int Descriptor(string path, string packId = null)
        {
            using (var strings = new NativeStrings())
            {
                int fd;
                Native.Check(Native.backlot_descriptor(handle, strings.Add(path, "path"), strings.Add(packId, "packId"),
                    out fd));
                return fd;
            }
        }

        /// <summary>A read-only FileStream over a file of an installed pack, from backlot_descriptor:
        /// the same file even if an update replaces the pack meanwhile. On .NET (Core) it wraps the
        /// descriptor itself in a SafeFileHandle. Mono (and Unity's Mono) cannot adopt a native
        /// descriptor in a FileStream (it throws "Invalid handle"); there the stream is opened on
        /// /proc/self/fd/N (the same open file, on Linux) and the descriptor is closed.</summary>
        public FileStream OpenFileStream(string path, string packId = null)
        {
            int fd = Descriptor(path, packId);
            if (!Native.IsMono)
            {
                var safe = new SafeFileHandle(new IntPtr(fd), true);
                try
                {
                    return new FileStream(safe, FileAccess.Read);
                }
                catch
                {
                    safe.Dispose();
                    throw;
                }
            }
            try
            {
                string self = "/proc/self/fd/" + fd;
                if (!File.Exists(self))
                    return new FileStream(Path(path, packId), FileMode.Open, FileAccess.Read, FileShare.Read);
                return new FileStream(self, FileMode.Open, FileAccess.Read, FileShare.Read);
            }
            finally
            {
                Native.CloseDescriptor(fd);
            }
        }

        /// <summary>Where a file of an installed pack is.</summary>
        public string Path(string path, string packId = null)
        {
            using (var strings = new NativeStrings())
            {
                IntPtr text;
                Native.Check(Native.backlot_path(handle, strings.Add(path, "path"), strings.Add(packId, "packId"),
                    out text));
                return Native.TakeString(text);
            }
        }

        /// <summary>The pack as the catalog offers it now, and its status against what is installed
        /// (Apple's assetPack(withID:) and status(ofAssetPackWithID:)). Reads the catalog.</summary>
        public AssetPack AssetPack(string packId)
        {
            using (var strings = new NativeStrings())
            {
                var info = new Native.PackInfo();
                Native.backlot_pack_info_init(ref info);
                try
                {
                    Native.Check(Native.backlot_asset_pack(handle, strings.Add(packId, "packId"), ref info));
                    return new AssetPack(Native.FromUtf8(info.id), info.version, info.download_size,
                        (AssetPackStatus)info.status);
                }
                finally
                {
                    Native.backlot_pack_info_clear(ref info);
                }
            }
        }

        /// <summary>The IDs of every pack the catalog offers this device, sorted (reads the catalog).</summary>
        public string[] AllAssetPacks()
        {
            IntPtr list;
            UIntPtr count;
            Native.Check(Native.backlot_all_asset_packs(handle, out list, out count));
            return Native.TakeStringList(list, count);
        }

        /// <summary>The IDs of the packs installed in the container, sorted (no network).</summary>
        public string[] InstalledPacks()
        {
            IntPtr list;
            UIntPtr count;
            Native.Check(Native.backlot_installed_packs(handle, out list, out count));
            return Native.TakeStringList(list, count);
        }

        /// <summary>Subscribes to the status updates of one pack (packId) or of every pack (null).
        /// handler runs on a thread of the library's, one update at a time, in order. An exception
        /// it throws is kept (Subscription.Error) and given to onError, never to native code.</summary>
        public Subscription Subscribe(Action<StatusUpdate> handler, string packId = null, Action<Exception> onError = null)
        {
            if (handler == null) throw new ArgumentNullException("handler");
            var subscription = new Subscription(this, packId, handler, onError);
            using (var strings = new NativeStrings())
            {
                IntPtr id = strings.Add(packId, "packId");
                IntPtr context = subscription.Pin();
                ulong number;
                int status = Native.backlot_subscribe(handle, id, Trampolines.Status, context, out number);
                if (status != 0)
                {
                    string message = Native.LastMessage();
                    subscription.Release();
                    throw new BacklotException((BacklotStatus)status, message);
                }
                subscription.Opened(number);
            }
            lock (gate)
            {
                if (disposed == 0)
                {
                    subscriptions.Add(subscription);
                    return subscription;
                }
            }
            // Disposed meanwhile: closing ended it.
            subscription.Release();
            return subscription;
        }

        internal void Unsubscribe(Subscription subscription, ulong number)
        {
            lock (gate) subscriptions.Remove(subscription);
            // A closed manager ended its subscriptions already; any other failure is a number the
            // library does not know, which leaves nothing to end either.
            Native.backlot_unsubscribe(handle, number);
        }

        /// <summary>Schedules a URL download for the background agent (or this process) to run.</summary>
        public void ScheduleDownload(UrlDownload download)
        {
            WithUrlDownload(download, (ref Native.UrlDownload d) => Native.backlot_schedule_download(handle, ref d));
        }

        /// <summary>Starts a URL download now, in this process (a scheduled one is promoted).</summary>
        public void StartForegroundDownload(UrlDownload download)
        {
            WithUrlDownload(download, (ref Native.UrlDownload d) => Native.backlot_start_foreground_download(handle, ref d));
        }

        private delegate int UrlDownloadCall(ref Native.UrlDownload download);

        private static void WithUrlDownload(UrlDownload download, UrlDownloadCall call)
        {
            if (download == null) throw new ArgumentNullException("download");
            using (var strings = new NativeStrings())
            {
                var d = new Native.UrlDownload();
                Native.backlot_url_download_init(ref d);
                d.identifier = strings.Add(download.Identifier, "Identifier");
                d.url = strings.Add(download.Url, "Url");
                d.file_size = download.FileSize;
                d.essential = download.Essential ? 1 : 0;
                d.priority = download.Priority;
                Native.Check(call(ref d));
            }
        }

        /// <summary>Cancels a scheduled or running URL download (BaDownloadNotScheduled when it is not).</summary>
        public void CancelDownload(string identifier)
        {
            using (var strings = new NativeStrings())
                Native.Check(Native.backlot_cancel_download(handle, strings.Add(identifier, "identifier")));
        }

        /// <summary>The identifiers of the URL downloads scheduled or running, sorted.</summary>
        public string[] CurrentDownloads()
        {
            IntPtr list;
            UIntPtr count;
            Native.Check(Native.backlot_current_downloads(handle, out list, out count));
            return Native.TakeStringList(list, count);
        }

        /// <summary>Sets what the app is told about its URL downloads; null removes it (outcomes go
        /// to the downloader extension again). Once it returns, no member of the previous delegate
        /// runs any more (except the one calling it, when called from a delegate member).</summary>
        public void SetDownloadDelegate(DownloadDelegate downloadDelegate)
        {
            lock (delegateGate)
            {
                if (downloadDelegate == null)
                {
                    Native.Check(Native.backlot_set_download_delegate(handle, IntPtr.Zero, IntPtr.Zero));
                    FreeContext(ref delegateContext);
                    return;
                }
                GCHandle pinned = GCHandle.Alloc(downloadDelegate);
                var functions = new Native.DownloadDelegateFns();
                Native.backlot_download_delegate_init(ref functions);
                functions.began = Trampolines.BeganPointer;
                functions.paused = Trampolines.PausedPointer;
                functions.wrote = Trampolines.WrotePointer;
                functions.failed = Trampolines.FailedPointer;
                functions.finished = Trampolines.FinishedPointer;
                IntPtr block = Marshal.AllocHGlobal(Marshal.SizeOf(typeof(Native.DownloadDelegateFns)));
                int status;
                try
                {
                    Marshal.StructureToPtr(functions, block, false);
                    status = Native.backlot_set_download_delegate(handle, block, GCHandle.ToIntPtr(pinned));
                }
                finally
                {
                    Marshal.FreeHGlobal(block);
                }
                if (status != 0)
                {
                    string message = Native.LastMessage();
                    pinned.Free();
                    throw new BacklotException((BacklotStatus)status, message);
                }
                FreeContext(ref delegateContext);
                delegateContext = GCHandle.ToIntPtr(pinned);
            }
        }

        private static void FreeContext(ref IntPtr context)
        {
            if (context == IntPtr.Zero) return;
            GCHandle.FromIntPtr(context).Free();
            context = IntPtr.Zero;
        }

        /// <summary>Runs body holding the container's exclusive control of its URL downloads, shared
        /// by the app, its extension and the agent (Apple's withExclusiveControl). Waits at most
        /// timeoutSeconds (negative: as long as it takes; 0: tries once), then throws Unavailable.
        /// What body throws is rethrown here.</summary>
        public void WithExclusiveControl(Action body, double timeoutSeconds = -1)
        {
            if (body == null) throw new ArgumentNullException("body");
            WithExclusiveControl<object>(() => { body(); return null; }, timeoutSeconds);
        }

        /// <summary>The same, returning what body returns.</summary>
        public T WithExclusiveControl<T>(Func<T> body, double timeoutSeconds = -1)
        {
            if (body == null) throw new ArgumentNullException("body");
            T result = default(T);
            var state = new ExclusiveState(() => { result = body(); });
            GCHandle pinned = GCHandle.Alloc(state);
            int status;
            try
            {
                status = Native.backlot_with_exclusive_control(handle, timeoutSeconds, Trampolines.Exclusive,
                    GCHandle.ToIntPtr(pinned));
            }
            finally
            {
                pinned.Free();
            }
            if (state.Error != null) ExceptionDispatchInfo.Capture(state.Error).Throw();
            if (status != 0) Native.ThrowLast(status);
            return result;
        }

        // ---- Callback state and trampolines ------------------------------------------------

        internal sealed class ProgressState
        {
            internal readonly IntPtr Manager;
            internal readonly IntPtr PackId; // valid during the call (NativeStrings)
            internal readonly Action<ulong, ulong> Progress;
            internal Exception Error;

            internal ProgressState(IntPtr manager, IntPtr packId, Action<ulong, ulong> progress)
            {
                Manager = manager;
                PackId = packId;
                Progress = progress;
            }
        }

        internal sealed class ExclusiveState
        {
            internal readonly Action Body;
            internal Exception Error;

            internal ExclusiveState(Action body) { Body = body; }
        }

        internal static class Trampolines
        {
            // Kept in static fields: the runtime must not collect a delegate native code holds.
            internal static readonly Native.ProgressFn Progress = OnProgress;
            internal static readonly Native.StatusFn Status = OnStatus;
            internal static readonly Native.ExclusiveFn Exclusive = OnExclusive;
            private static readonly Native.IdFn Began = OnBegan;
            private static readonly Native.IdFn Paused = OnPaused;
            private static readonly Native.WroteFn Wrote = OnWrote;
            private static readonly Native.FailedFn Failed = OnFailed;
            private static readonly Native.FinishedFn Finished = OnFinished;
            internal static readonly IntPtr BeganPointer = Marshal.GetFunctionPointerForDelegate(Began);
            internal static readonly IntPtr PausedPointer = Marshal.GetFunctionPointerForDelegate(Paused);
            internal static readonly IntPtr WrotePointer = Marshal.GetFunctionPointerForDelegate(Wrote);
            internal static readonly IntPtr FailedPointer = Marshal.GetFunctionPointerForDelegate(Failed);
            internal static readonly IntPtr FinishedPointer = Marshal.GetFunctionPointerForDelegate(Finished);

            [MonoPInvokeCallback(typeof(Native.ProgressFn))]
            private static void OnProgress(IntPtr context, ulong completed, ulong total)
            {
                ProgressState state = null;
                try
                {
                    state = (ProgressState)GCHandle.FromIntPtr(context).Target;
                    if (state.Error != null) return;
                    state.Progress(completed, total);
                }
                catch (Exception e)
                {
                    if (state == null) return;
                    state.Error = e;
                    // End the download: the call returns Cancelled, and the exception is rethrown.
                    try { Native.backlot_cancel(state.Manager, state.PackId); } catch (Exception) { }
                }
            }

            [MonoPInvokeCallback(typeof(Native.StatusFn))]
            private static void OnStatus(IntPtr context, IntPtr update)
            {
                Subscription subscription = null;
                try
                {
                    subscription = (Subscription)GCHandle.FromIntPtr(context).Target;
                    if (subscription == null) return;
                    subscription.Handler(Native.ReadStatusUpdate(update));
                }
                catch (Exception e)
                {
                    if (subscription == null) return;
                    subscription.Record(e);
                    try { if (subscription.OnError != null) subscription.OnError(e); } catch (Exception) { }
                }
            }

            [MonoPInvokeCallback(typeof(Native.ExclusiveFn))]
            private static int OnExclusive(IntPtr context)
            {
                ExclusiveState state = null;
                try
                {
                    state = (ExclusiveState)GCHandle.FromIntPtr(context).Target;
                    state.Body();
                    return 0;
                }
                catch (Exception e)
                {
                    if (state != null) state.Error = e;
                    return (int)BacklotStatus.Cancelled;
                }
            }

            private static void Deliver(IntPtr context, Action<DownloadDelegate> call)
            {
                DownloadDelegate d = null;
                try
                {
                    if (context == IntPtr.Zero) return;
                    d = (DownloadDelegate)GCHandle.FromIntPtr(context).Target;
                    if (d != null) call(d);
                }
                catch (Exception e)
                {
                    try { if (d != null && d.Error != null) d.Error(e); } catch (Exception) { }
                }
            }

            [MonoPInvokeCallback(typeof(Native.IdFn))]
            private static void OnBegan(IntPtr context, IntPtr identifier)
            {
                try
                {
                    string id = Native.FromUtf8(identifier);
                    Deliver(context, d => { if (d.Began != null) d.Began(id); });
                }
                catch (Exception) { }
            }

            [MonoPInvokeCallback(typeof(Native.IdFn))]
            private static void OnPaused(IntPtr context, IntPtr identifier)
            {
                try
                {
                    string id = Native.FromUtf8(identifier);
                    Deliver(context, d => { if (d.Paused != null) d.Paused(id); });
                }
                catch (Exception) { }
            }

            [MonoPInvokeCallback(typeof(Native.WroteFn))]
            private static void OnWrote(IntPtr context, IntPtr identifier, long written, long totalWritten, long expected)
            {
                try
                {
                    string id = Native.FromUtf8(identifier);
                    Deliver(context, d => { if (d.Wrote != null) d.Wrote(id, written, totalWritten, expected); });
                }
                catch (Exception) { }
            }

            [MonoPInvokeCallback(typeof(Native.FailedFn))]
            private static void OnFailed(IntPtr context, IntPtr identifier, int error, IntPtr message)
            {
                try
                {
                    string id = Native.FromUtf8(identifier);
                    var exception = new BacklotException((BacklotStatus)error, Native.FromUtf8(message));
                    Deliver(context, d => { if (d.Failed != null) d.Failed(id, exception); });
                }
                catch (Exception) { }
            }

            [MonoPInvokeCallback(typeof(Native.FinishedFn))]
            private static void OnFinished(IntPtr context, IntPtr identifier, IntPtr filePath)
            {
                try
                {
                    string id = Native.FromUtf8(identifier);
                    string file = Native.FromUtf8(filePath);
                    Deliver(context, d => { if (d.Finished != null) d.Finished(id, file); });
                }
                catch (Exception) { }
            }
        }
    }

    /// <summary>UTF-8 copies of the strings of one call, freed when it ends.</summary>
    internal sealed class NativeStrings : IDisposable
    {
        private static readonly Encoding Strict = new UTF8Encoding(false, true);
        private readonly List<IntPtr> blocks = new List<IntPtr>();

        /// <summary>A NUL-terminated UTF-8 copy of text (IntPtr.Zero for null).</summary>
        internal IntPtr Add(string text, string what)
        {
            if (text == null) return IntPtr.Zero;
            if (text.IndexOf('\0') >= 0)
                throw new BacklotException(BacklotStatus.InvalidArgument,
                    "invalid argument: " + what + " holds a NUL character, which a C string cannot carry");
            byte[] bytes;
            try
            {
                bytes = Strict.GetBytes(text);
            }
            catch (EncoderFallbackException)
            {
                throw new BacklotException(BacklotStatus.InvalidArgument,
                    "invalid argument: " + what + " is not valid Unicode (a lone surrogate): it has no UTF-8 form");
            }
            IntPtr block = Marshal.AllocHGlobal(bytes.Length + 1);
            blocks.Add(block);
            Marshal.Copy(bytes, 0, block, bytes.Length);
            Marshal.WriteByte(block, bytes.Length, 0);
            return block;
        }

        public void Dispose()
        {
            foreach (var block in blocks) Marshal.FreeHGlobal(block);
            blocks.Clear();
        }
    }

    /// <summary>The C functions and structs of backlot.h, as they are.</summary>
    internal static class Native
    {
#if (UNITY_IOS || UNITY_TVOS || UNITY_WEBGL) && !UNITY_EDITOR
        internal const string Library = "__Internal";
#else
        internal const string Library = "backlot";
#endif

        internal static readonly bool IsMono = Type.GetType("Mono.Runtime") != null;

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate void ProgressFn(IntPtr context, ulong completedBytes, ulong totalBytes);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate void StatusFn(IntPtr context, IntPtr update);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate int ExclusiveFn(IntPtr context);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate void IdFn(IntPtr context, IntPtr identifier);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate void WroteFn(IntPtr context, IntPtr identifier, long bytesWritten, long totalWritten,
            long totalExpected);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate void FailedFn(IntPtr context, IntPtr identifier, int error, IntPtr message);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate void FinishedFn(IntPtr context, IntPtr identifier, IntPtr filePath);

        [StructLayout(LayoutKind.Sequential)]
        internal struct Config
        {
            internal UIntPtr size;
            internal IntPtr container_path;
            internal IntPtr catalog_url;
            internal IntPtr trusted_key_path;
            internal IntPtr ca_path;
            internal IntPtr app;
            internal IntPtr channel;
            internal ulong bandwidth_limit;
            internal uint stall_timeout;
            internal int retries;
            internal int no_reports;
            internal IntPtr device_profile;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct PackInfo
        {
            internal UIntPtr size;
            internal IntPtr id;
            internal long version;
            internal ulong download_size;
            internal uint status;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct StatusUpdateNative
        {
            internal UIntPtr size;
            internal int kind;
            internal IntPtr pack_id;
            internal ulong completed_bytes;
            internal ulong total_bytes;
            internal int error;
            internal IntPtr error_message;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct UrlDownload
        {
            internal UIntPtr size;
            internal IntPtr identifier;
            internal IntPtr url;
            internal long file_size;
            internal int essential;
            internal long priority;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct DownloadDelegateFns
        {
            internal UIntPtr size;
            internal IntPtr began;
            internal IntPtr paused;
            internal IntPtr wrote;
            internal IntPtr failed;
            internal IntPtr finished;
        }

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr backlot_last_error_message();

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_last_error_status();

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr backlot_status_name(int status);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void backlot_free(IntPtr buffer);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr backlot_version();

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern uint backlot_abi_version();

        // The _init functions of the header are inline: they call these with the caller's size.
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void backlot_config_init_size(ref Config config, UIntPtr size);

        internal static void backlot_config_init(ref Config config)
        {
            backlot_config_init_size(ref config, SizeOf<Config>());
        }

        internal static UIntPtr SizeOf<T>() where T : struct
        {
            return new UIntPtr((uint)Marshal.SizeOf(typeof(T)));
        }

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_manager_open(ref Config config, out IntPtr manager);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void backlot_manager_close(IntPtr manager);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_device_id(IntPtr manager, out IntPtr text);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_device_profile(IntPtr manager, out IntPtr text);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_ensure_local_availability(IntPtr manager, IntPtr packId, ProgressFn progress,
            IntPtr context);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_ensure_latest_availability(IntPtr manager, IntPtr packId, ProgressFn progress,
            IntPtr context);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_cancel(IntPtr manager, IntPtr packId);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_check_for_updates(IntPtr manager, out IntPtr ids, out UIntPtr count);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_remove(IntPtr manager, IntPtr packId);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_contents(IntPtr manager, IntPtr path, IntPtr packId, out IntPtr data,
            out UIntPtr length);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_descriptor(IntPtr manager, IntPtr path, IntPtr packId, out int fd);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_path(IntPtr manager, IntPtr path, IntPtr packId, out IntPtr text);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void backlot_pack_info_init_size(ref PackInfo info, UIntPtr size);

        internal static void backlot_pack_info_init(ref PackInfo info)
        {
            backlot_pack_info_init_size(ref info, SizeOf<PackInfo>());
        }

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void backlot_pack_info_clear(ref PackInfo info);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_asset_pack(IntPtr manager, IntPtr packId, ref PackInfo info);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_all_asset_packs(IntPtr manager, out IntPtr ids, out UIntPtr count);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_installed_packs(IntPtr manager, out IntPtr ids, out UIntPtr count);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_subscribe(IntPtr manager, IntPtr packId, StatusFn callback, IntPtr context,
            out ulong subscription);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_unsubscribe(IntPtr manager, ulong subscription);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void backlot_url_download_init_size(ref UrlDownload download, UIntPtr size);

        internal static void backlot_url_download_init(ref UrlDownload download)
        {
            backlot_url_download_init_size(ref download, SizeOf<UrlDownload>());
        }

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_schedule_download(IntPtr manager, ref UrlDownload download);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_start_foreground_download(IntPtr manager, ref UrlDownload download);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_cancel_download(IntPtr manager, IntPtr identifier);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_current_downloads(IntPtr manager, out IntPtr ids, out UIntPtr count);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void backlot_download_delegate_init_size(ref DownloadDelegateFns functions, UIntPtr size);

        internal static void backlot_download_delegate_init(ref DownloadDelegateFns functions)
        {
            backlot_download_delegate_init_size(ref functions, SizeOf<DownloadDelegateFns>());
        }

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_set_download_delegate(IntPtr manager, IntPtr functions, IntPtr context);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int backlot_with_exclusive_control(IntPtr manager, double timeout, ExclusiveFn body,
            IntPtr context);

        // close(2), for a descriptor Mono cannot adopt. "__Internal" is the process's own symbols
        // (libc is among them) for Mono and IL2CPP alike.
        [DllImport("__Internal", EntryPoint = "close")]
        private static extern int close_internal(int fd);

        [DllImport("libc", EntryPoint = "close")]
        private static extern int close_libc(int fd);

        internal static void CloseDescriptor(int fd)
        {
            try
            {
                close_internal(fd);
            }
            catch (Exception)
            {
                try { close_libc(fd); } catch (Exception) { }
            }
        }

        /// <summary>Throws the calling thread's last failure unless status is BACKLOT_OK.</summary>
        internal static void Check(int status)
        {
            if (status != 0) ThrowLast(status);
        }

        internal static void ThrowLast(int status)
        {
            throw new BacklotException((BacklotStatus)status, LastMessage());
        }

        internal static string LastMessage() { return FromUtf8(backlot_last_error_message()); }

        /// <summary>A NUL-terminated UTF-8 string (null for NULL), not freed.</summary>
        internal static string FromUtf8(IntPtr text)
        {
            if (text == IntPtr.Zero) return null;
            int length = 0;
            while (Marshal.ReadByte(text, length) != 0) length++;
            if (length == 0) return "";
            var bytes = new byte[length];
            Marshal.Copy(text, bytes, 0, length);
            return Encoding.UTF8.GetString(bytes);
        }

        /// <summary>A string the library allocated: copied, then freed.</summary>
        internal static string TakeString(IntPtr text)
        {
            try
            {
                return FromUtf8(text);
            }
            finally
            {
                backlot_free(text);
            }
        }

        /// <summary>A list of strings the library allocated (one block): copied, then freed once.</summary>
        internal static string[] TakeStringList(IntPtr list, UIntPtr count)
        {
            try
            {
                ulong n = count.ToUInt64();
                if (list == IntPtr.Zero || n == 0) return new string[0];
                var strings = new string[checked((int)n)];
                for (int i = 0; i < strings.Length; i++)
                    strings[i] = FromUtf8(Marshal.ReadIntPtr(list, i * IntPtr.Size));
                return strings;
            }
            finally
            {
                backlot_free(list);
            }
        }

        /// <summary>A backlot_status_update, copied (as much of it as the sending library's size has).</summary>
        internal static StatusUpdate ReadStatusUpdate(IntPtr pointer)
        {
            int ours = Marshal.SizeOf(typeof(StatusUpdateNative));
            long theirs = (long)Marshal.ReadIntPtr(pointer).ToInt64();
            StatusUpdateNative u;
            if (theirs >= ours)
            {
                u = (StatusUpdateNative)Marshal.PtrToStructure(pointer, typeof(StatusUpdateNative));
            }
            else
            {
                // An older library's smaller struct: the members past its size keep their defaults.
                IntPtr copy = Marshal.AllocHGlobal(ours);
                try
                {
                    for (int i = 0; i < ours; i++) Marshal.WriteByte(copy, i, 0);
                    var bytes = new byte[Math.Max(0, theirs)];
                    Marshal.Copy(pointer, bytes, 0, bytes.Length);
                    Marshal.Copy(bytes, 0, copy, bytes.Length);
                    u = (StatusUpdateNative)Marshal.PtrToStructure(copy, typeof(StatusUpdateNative));
                }
                finally
                {
                    Marshal.FreeHGlobal(copy);
                }
            }
            return new StatusUpdate((StatusUpdateKind)u.kind, FromUtf8(u.pack_id), u.completed_bytes, u.total_bytes,
                (BacklotStatus)u.error, FromUtf8(u.error_message));
        }
    }
}
