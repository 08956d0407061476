#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

// MHD_start_daemon and MHD_get_daemon_info are variadic, which Swift cannot call:
// fixed-arity wrappers that pass options as an MHD_OPTION_ARRAY.
static inline struct MHD_Daemon *cmhd_start(unsigned int flags, uint16_t port,
                                            MHD_AccessHandlerCallback handler, void *handler_cls,
                                            const struct MHD_OptionItem *options) {
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

static inline uint16_t cmhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

static inline const struct sockaddr *cmhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info ? info->client_addr : NULL;
}

// Connections open right now (summed over a thread pool's workers), 0 if unknown.
static inline unsigned int cmhd_current_connections(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}

// Percent-decoding of the request target (MHD_OPTION_UNESCAPE_CALLBACK) that leaves "%00" as it
// is: libmicrohttpd's own decoding writes a NUL byte into the C string, and everything after it
// (".pack", "/../../keys/…") would silently disappear from the path a handler sees.
static inline int cmhd_hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static size_t cmhd_unescape_keeping_nul(void *cls, struct MHD_Connection *connection, char *value) {
    (void)cls;
    (void)connection;
    char *read = value, *write = value;
    while (*read) {
        if (read[0] == '%') {
            int high = cmhd_hex_digit(read[1]);
            int low = high < 0 ? -1 : cmhd_hex_digit(read[2]);
            if (high >= 0 && low >= 0 && (high | low) != 0) {
                *write++ = (char)(high * 16 + low);
                read += 3;
                continue;
            }
        }
        *write++ = *read++;
    }
    *write = 0;
    return (size_t)(write - value);
}

static inline intptr_t cmhd_unescape_callback(void) { return (intptr_t)cmhd_unescape_keeping_nul; }

// A request target whose path holds an encoded "/", "\" or NUL ("%2F", "%5C", "%00", any case).
// Decoded, "%2F" would be a separator the router never saw ("/api%2Ftokens" routed as
// "/api/tokens"), "%5C" a separator to Windows-minded proxies and "%00" the end of the C string:
// such a request is answered 400 before it is routed. The check reads the target as the client
// sent it (MHD_OPTION_URI_LOG_CALLBACK runs before any decoding), the path only: the query is
// decoded as usual.
// The callback's answer marks such a request with a pointer that is never dereferenced (the
// value 1: no object lives there), which becomes the request's first `*con_cls`.
static inline void *cmhd_bad_target(void) { return (void *)(intptr_t)1; }

static inline int cmhd_target_has_encoded_separator(const char *uri) {
    if (uri == NULL) return 0;
    for (const char *p = uri; *p && *p != '?'; p++) {
        if (p[0] != '%' || p[1] == 0 || p[2] == 0) continue;
        int high = cmhd_hex_digit(p[1]), low = cmhd_hex_digit(p[2]);
        if (high < 0 || low < 0) continue;
        int byte = high * 16 + low;
        if (byte == '/' || byte == '\\' || byte == 0) return 1;
    }
    return 0;
}

static void *cmhd_uri_log(void *cls, const char *uri, struct MHD_Connection *connection) {
    (void)cls;
    (void)connection;
    return cmhd_target_has_encoded_separator(uri) ? cmhd_bad_target() : NULL;
}

static inline intptr_t cmhd_uri_log_callback(void) { return (intptr_t)cmhd_uri_log; }
