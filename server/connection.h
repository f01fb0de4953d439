// The connections of `run --server`: cpp-httplib's Server with its connection loop replaced,
// so that hearth reads and writes each client's socket itself (server/connection.cpp).
//
// Why: cpp-httplib 0.11 bounds each header line (8 KiB) but neither the request line nor the
// number of header lines, so one connection sending short header lines without end made the
// server hold memory without end (~208 MB for 100 MB of headers). Its connection loop and its
// socket stream are compiled into the library and cannot be wrapped; its Server lets a
// subclass replace the loop (a virtual) and run each request through its parser
// (process_request, protected) on a Stream of the subclass's own. The Stream here counts the
// request line and the headers of every request on the connection (keep-alive ones too) and
// refuses the request with 431 past limits::kServerHeadBytes or kServerHeaderLines; it stops
// any body at the payload limit (cpp-httplib 0.11 kept a chunked body whole), and holds the
// whole request to the read timeout (which cpp-httplib applies to each read). Owning the
// socket also lets a handler ask whether its client has gone away (client_gone()).
//
// The loop relies on cpp-httplib's internals as they are from 0.11 (Debian 12's, what hearth is
// built and tested with) to 0.14; those versions do not define CPPHTTPLIB_VERSION_MINOR. Later
// ones (other systems, README "Build on your machine") change them, so there the server is
// cpp-httplib's own, with its own bounds, and client_gone() is always false (a non-streamed
// job whose client left runs to its end).
#pragma once
#include <httplib.h>

#include <string>

namespace hearth {

#if !defined(CPPHTTPLIB_VERSION_MINOR)
#define HEARTH_GUARDED_CONNECTIONS 1
class GuardedServer : public httplib::Server {
public:
    // --cors-origins: a refusal written here (413, 415, 400 on a parsed head) carries
    // Access-Control-Allow-Origin for a page let in, as the handlers' answers do, so that the
    // page reads the reason rather than a "network error".
    void set_cors_origins(const std::string& origins) { cors_origins_ = origins; }

private:
    bool process_and_close_socket(socket_t sock) override;
    std::string cors_origins_;
};
#else
class GuardedServer : public httplib::Server {
public:
    void set_cors_origins(const std::string&) {}  // cpp-httplib's own refusals: no CORS headers
};
#endif

// Whether the client of the request this thread is handling has closed its connection (or
// reset it). A handler that waits for a reply asks it, so that a client that gave up does not
// keep a slot generating. false on a thread that is not handling a request. A client that
// half-closes (shuts down its sending side and waits for the reply) counts as gone: HTTP
// clients do not do that.
bool client_gone();

}  // namespace hearth
