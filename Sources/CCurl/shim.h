// libcurl's setopt/getinfo are variadic, which Swift cannot call: fixed-arity wrappers.
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

static inline CURLcode ccurl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_str(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_ptr(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_write(CURL *h, curl_write_callback cb) { return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cb); }
static inline CURLcode ccurl_setopt_header(CURL *h, curl_write_callback cb) { return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, cb); }
static inline CURLcode ccurl_setopt_read(CURL *h, curl_read_callback cb) { return curl_easy_setopt(h, CURLOPT_READFUNCTION, cb); }
static inline CURLcode ccurl_setopt_xferinfo(CURL *h, curl_xferinfo_callback cb) { return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, cb); }
static inline CURLcode ccurl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode ccurl_getinfo_certinfo(CURL *h, struct curl_certinfo **v) { return curl_easy_getinfo(h, CURLINFO_CERTINFO, v); }
static inline CURLSHcode ccurl_share_setopt_long(CURLSH *s, CURLSHoption o, long v) { return curl_share_setopt(s, o, v); }
static inline CURLSHcode ccurl_share_setopt_ptr(CURLSH *s, CURLSHoption o, void *v) { return curl_share_setopt(s, o, v); }
static inline CURLSHcode ccurl_share_setopt_lock(CURLSH *s, curl_lock_function f) { return curl_share_setopt(s, CURLSHOPT_LOCKFUNC, f); }
static inline CURLSHcode ccurl_share_setopt_unlock(CURLSH *s, curl_unlock_function f) { return curl_share_setopt(s, CURLSHOPT_UNLOCKFUNC, f); }
