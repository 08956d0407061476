# Varnish as a caching edge in front of Backlot's published tree (docs/scaling.md, "The CDN
# edge"): the same rules as contrib/nginx/edge.conf, for Debian's varnish (7.x).
#
# Placeholders, replaced by whoever installs this file (the tests do it in Swift, VarnishEdge):
#   @ORIGIN_HOST@  address of the origin                        127.0.0.1
#   @ORIGIN_PORT@  its port                                     7480
#   @ORIGIN_PATH@  the tree's path at the origin, no trailing /  /backlot-tree  (bucket/prefix), or empty
# Run it with `varnishd -a 127.0.0.1:8080 -f edge.vcl -s malloc,1g` (or file storage for more).
#
# What is cached, and for how long (docs/protocol.md §1):
#   v1/packs/SHA256.pack, v1/deltas/SHA256.delta   immutable: a year. Varnish keeps whole objects (no
#                        slices): the first Range request of a miss fetches the whole archive once,
#                        streaming it, while every device that asks meanwhile waits on that one
#                        fetch (Varnish's waiting list: one origin request per object); ranges are
#                        then cut from the cached object.
#   v1/keys/root-N.json  immutable; a 404 (the next version, asked at every check) for 60 s
#   catalogs, root.json, Apple manifests: the max-age the origin sends (60 s, 300 s); then served
#                        stale for up to an hour while one background fetch revalidates them
#                        (grace: stale-while-revalidate), and while the origin fails (stale-if-error)
#   /api/ and anything but GET/HEAD: passed through, never cached
#   dot files: 404, as `backlot serve` answers
# Credentials and cookies a device sends are never forwarded: the tree is public.

vcl 4.1;

backend origin {
    .host = "@ORIGIN_HOST@";
    .port = "@ORIGIN_PORT@";
    .connect_timeout = 5s;
    .first_byte_timeout = 60s;
    .between_bytes_timeout = 30s;
}

sub vcl_recv {
    if (req.url ~ "/\.") {
        return (synth(404, "Not Found"));
    }
    if (req.url ~ "^/api/") {
        return (pass);
    }
    if (req.method != "GET" && req.method != "HEAD") {
        return (pass);
    }
    if (req.url !~ "^/v1/") {
        return (synth(404, "Not Found"));
    }
    unset req.http.Authorization;
    unset req.http.Cookie;
    # The query string never names another object of the tree.
    set req.url = regsub(req.url, "\?.*$", "");
    # What is never cached goes straight through (devices asking at once do not queue behind
    # each other on Varnish's waiting list).
    if (req.url !~ "^/v1/(packs/[0-9a-f]{64}\.pack|deltas/[0-9a-f]{64}\.delta|keys/root(-[0-9]+)?\.json|apps/.+/catalog\.json|apple/.+/manifest\.json)$") {
        return (pass);
    }
    return (hash);
}

# One object per path, whatever Host the device wrote (127.0.0.1, localhost, a CDN name): as
# nginx's edge keys its cache by $uri.
sub vcl_hash {
    hash_data(req.url);
    return (lookup);
}

sub vcl_backend_fetch {
    if (bereq.url ~ "^/v1/") {
        set bereq.url = "@ORIGIN_PATH@" + bereq.url;
    }
    set bereq.http.Host = "@ORIGIN_HOST@:@ORIGIN_PORT@";
}

sub vcl_backend_response {
    # An origin that fails while a stale copy exists: keep serving the stale copy (stale-if-error).
    if (beresp.status >= 500 && bereq.is_bgfetch) {
        return (abandon);
    }
    # S3 adds headers of its own: devices need none of them.
    unset beresp.http.x-amz-request-id;
    unset beresp.http.x-amz-id-2;
    unset beresp.http.x-rgw-object-type;
    unset beresp.http.Set-Cookie;
    if (bereq.url ~ "/v1/(packs/[0-9a-f]{64}\.pack|deltas/[0-9a-f]{64}\.delta)$") {
        if (beresp.status == 200) {
            set beresp.ttl = 365d;
            set beresp.do_stream = true;
        }
        return (deliver);
    }
    if (bereq.url ~ "/v1/keys/root-[0-9]+\.json$") {
        if (beresp.status == 200) {
            set beresp.ttl = 365d;
        } else if (beresp.status == 404) {
            set beresp.ttl = 60s;
        }
        return (deliver);
    }
    if (bereq.url ~ "/v1/(keys/root\.json|apps/.+/catalog\.json|apple/.+/manifest\.json)$") {
        if (beresp.status == 404) {
            set beresp.ttl = 60s;
        }
        # Served stale for up to an hour while one background fetch revalidates (and while the
        # origin fails), then kept a day for conditional revalidation.
        set beresp.grace = 1h;
        set beresp.keep = 1d;
        return (deliver);
    }
    # Not reached (vcl_recv passes the rest of the tree): cache nothing, as builtin.vcl would.
    set beresp.uncacheable = true;
    set beresp.ttl = 120s;
    return (deliver);
}

sub vcl_deliver {
    if (obj.hits > 0) {
        set resp.http.X-Cache-Status = "HIT";
    } else {
        set resp.http.X-Cache-Status = "MISS";
    }
    unset resp.http.Via;
    unset resp.http.X-Varnish;
}
