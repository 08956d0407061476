// libpq, PostgreSQL's client library (Debian libpq-dev: /usr/include/postgresql/libpq-fe.h).
#include <libpq-fe.h>
