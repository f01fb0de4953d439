#include "server/connection.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstring>

#include "base/limits.h"
#include "base/printable.h"
#include "server/request.h"

namespace hearth {

#if defined(HEARTH_GUARDED_CONNECTIONS)

namespace {

using Clock = std::chrono::steady_clock;

#ifdef MSG_NOSIGNAL
constexpr int kSendFlags = MSG_NOSIGNAL;  // a client gone: the send fails instead of raising SIGPIPE
#else
constexpr int kSendFlags = 0;  // macOS: serve() ignores SIGPIPE for the whole process
#endif

// poll() for one event, retried when a signal interrupts it; whether the event came.
bool wait_for(int fd, short events, int timeout_ms) {
    pollfd p{fd, events, 0};
    for (;;) {
        const int r = poll(&p, 1, timeout_ms);
        if (r > 0) return true;
        if (r == 0 || errno != EINTR) return false;
    }
}

int to_ms(time_t sec, time_t usec) { return int(std::min<long long>((long long)sec * 1000 + usec / 1000, 1 << 30)); }

void address_of(const sockaddr_storage& a, socklen_t len, std::string& ip, int& port) {
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
        ip = host;
        port = std::atoi(serv);
    }
}

// One client's connection, read and written for cpp-httplib's request parser, which reads a
// request's head one byte at a time (hence the buffer). The buffer lives as long as the
// connection, so that bytes a client pipelined after one request start the next.
class Connection : public httplib::Stream {
public:
    Connection(int fd, int read_timeout_ms, int write_timeout_ms, uint64_t max_body, const std::string& cors_origins)
        : fd_(fd), read_ms_(read_timeout_ms), write_ms_(write_timeout_ms), max_body_(max_body), cors_origins_(cors_origins) {}

    // Waits for the next request's first byte: false when the connection stays idle for
    // idle_ms, the client closes it, or the server stops.
    bool wait_for_request(int idle_ms, const std::atomic<socket_t>& listening) {
        if (off_ < len_) return true;
        const auto until = Clock::now() + std::chrono::milliseconds(idle_ms);
        // Short waits, so that a server stopping does not wait for idle connections.
        while (listening != INVALID_SOCKET) {
            if (wait_for(fd_, POLLIN, 100)) return true;
            if (Clock::now() >= until) return false;
        }
        return false;
    }

    // A request starts: its head (request line and headers) must end within the limits and
    // within limits::kServerHeadSeconds, and the whole request, head and body, within the read
    // timeout (a client sending a byte now and then does not hold a thread for longer; the
    // connection threads are few, so a few slow heads would hold the server for --timeout).
    void begin_head() {
        in_head_ = true;
        head_bytes_ = 0;
        head_lines_ = 0;
        body_read_ = 0;
        body_length_ = 0;
        body_length_known_ = true;
        body_chunked_ = false;
        body_over_ = false;
        http10_ = false;
        allowed_origin_.clear();
        const auto now = Clock::now();
        deadline_ = now + std::chrono::milliseconds(read_ms_);
        head_deadline_ = now + std::chrono::milliseconds(head_ms());
    }
    // cpp-httplib has parsed the head; what follows (the body) has its own limit. Refused here,
    // before any of the body is read:
    //  - a compressed body: cpp-httplib inflates it with no bound (the payload limit holds the
    //    bytes sent: 200 KB of gzip grew the server by gigabytes), and OpenAI's clients do not
    //    compress requests;
    //  - a Content-Length that is not a number, or over the payload limit: cpp-httplib would
    //    wait for the whole body (or its read timeout) before answering.
    void end_head(const httplib::Request& req) {
        in_head_ = false;
        const std::string length = req.get_header_value("Content-Length");
        char* end = nullptr;
        errno = 0;
        body_length_ = length.empty() ? 0 : std::strtoull(length.c_str(), &end, 10);
        body_length_known_ = length.empty() || (end && *end == '\0' && std::isdigit((unsigned char)length[0]) && errno != ERANGE);
        body_chunked_ = req.get_header_value("Transfer-Encoding").find("chunked") != std::string::npos;
        http10_ = req.version == "HTTP/1.0";
        if (const std::string origin = req.get_header_value("Origin"); origin_allowed(origin, cors_origins_))
            allowed_origin_ = origin;
        const std::string encoding = req.get_header_value("Content-Encoding");
        if (!encoding.empty() && encoding != "identity")
            refuse(415, "the body is compressed (Content-Encoding: " + printable(encoding, 40) + "): send it uncompressed");
        else if (!body_length_known_)
            refuse(400, "the Content-Length header is not a number of bytes");
        else if (body_length_ > max_body_)
            refuse(413, "the request body is larger than " + std::to_string(max_body_ >> 20) + " MiB");
    }
    // Whether the request's head was parsed (end_head): a request line or header that
    // cpp-httplib could not read gets its 400, and the connection ends there, since where the
    // next request would start is unknown (reading on, a request hidden in the bad one's body
    // would be served).
    bool head_parsed() const { return !in_head_; }

    // Whether the request was HTTP/1.0's: the connection ends after its response. cpp-httplib
    // keeps it when the client sends "Connection: Keep-Alive", but its response never says
    // "Connection: keep-alive", without which an HTTP/1.0 client takes the connection to end
    // (RFC 9112 C.2.2), and a streamed reply to it has no length: its end is the close.
    bool http10() const { return http10_; }

    // After a request: reads and drops what of its body the handler did not read (a request
    // answered before its body was read: 401, 503), so that the next request on the
    // connection starts where it begins. false when the connection cannot go on: the body is
    // chunked, of no clear length, larger than a body may be, or does not come.
    bool skip_unread_body() {
        if (refused_ || body_over_) return false;
        if (body_chunked_) return body_read_ > 0;  // cpp-httplib read it to its end, or failed
        if (!body_length_known_ || body_length_ > max_body_) return false;
        char buf[16384];
        while (body_read_ < body_length_) {
            const ssize_t n = read(buf, size_t(std::min<uint64_t>(sizeof buf, body_length_ - body_read_)));
            if (n <= 0) return false;
        }
        return true;
    }

    // Whether the connection ends with bytes of the client's unread: a request refused here
    // (closed after that), a head cpp-httplib could not parse, or a body not read to its end.
    bool unread() const {
        return refused_ || body_over_ || in_head_ ||
               (body_chunked_ ? body_read_ == 0 : !body_length_known_ || body_read_ < body_length_);
    }

    // Before closing a connection with bytes unread: stops sending, and reads and drops what the client
    // still sends for a moment, so that closing with its bytes unread (which resets the
    // connection) does not destroy the answer before the client reads it. Bounded in time and bytes.
    void linger() {
        shutdown(fd_, SHUT_WR);
        const auto until = Clock::now() + std::chrono::seconds(1);
        char buf[16384];
        for (uint64_t dropped = 0; dropped < 4 * limits::MiB;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
            if (left <= 0 || !wait_for(fd_, POLLIN, int(left))) break;
            const ssize_t n = recv(fd_, buf, sizeof buf, 0);
            if (n <= 0) break;
            dropped += uint64_t(n);
        }
    }

    // Whether the client closed or reset the connection. Bytes waiting to be read (a
    // pipelined request) mean it is still there.
    bool peer_closed() const {
        pollfd p{fd_, POLLIN, 0};
        if (poll(&p, 1, 0) <= 0) return false;
        if (p.revents & (POLLERR | POLLNVAL)) return true;
        char c;
        const ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0) return true;
        return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
    }

    bool is_readable() const override { return off_ < len_ || wait_for(fd_, POLLIN, read_ms_); }

    // cpp-httplib checks this before each chunk of a streamed reply: a client gone ends the
    // stream even before a write to it fails.
    bool is_writable() const override { return !refused_ && wait_for(fd_, POLLOUT, write_ms_) && !peer_closed(); }

    ssize_t read(char* ptr, size_t size) override {
        if (refused_) return -1;
        if (off_ == len_) {
            const auto until = in_head_ ? std::min(deadline_, head_deadline_) : deadline_;
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
            if (left <= 0 || !wait_for(fd_, POLLIN, int(left))) {
                if (in_head_)
                    return refuse(408, "the request's headers did not arrive within " + std::to_string(head_ms() / 1000) + " s");
                return -1;  // cpp-httplib answers 400
            }
            const ssize_t n = recv(fd_, buf_, sizeof buf_, 0);
            if (n <= 0) return n;
            off_ = 0;
            len_ = size_t(n);
        }
        const size_t n = std::min(size, len_ - off_);
        if (in_head_) {
            head_bytes_ += n;
            head_lines_ += size_t(std::count(buf_ + off_, buf_ + off_ + n, '\n'));
            // The request line and the blank line that ends the head are lines too.
            if (head_bytes_ > limits::kServerHeadBytes || head_lines_ > limits::kServerHeaderLines + 2)
                return refuse(431, "the request's headers are over the limit: at most " +
                                       std::to_string(limits::kServerHeaderLines) + " header lines and " +
                                       std::to_string(limits::kServerHeadBytes / limits::KiB) + " KiB with the request line");
        } else {
            // cpp-httplib 0.11 holds only a body with a Content-Length to its payload limit (and
            // reads all of a larger one before its 413); a chunked body, or one that ends when
            // the connection does, it keeps whole. As sent (chunked framing included), no body
            // is read past the limit: cpp-httplib then answers 413 or 400.
            if (body_read_ + n > max_body_) {
                body_over_ = true;
                return -1;
            }
            body_read_ += n;
        }
        std::memcpy(ptr, buf_ + off_, n);
        off_ += n;
        return ssize_t(n);
    }

    ssize_t write(const char* ptr, size_t size) override { return refused_ ? -1 : send_some(ptr, size); }

    void get_remote_ip_and_port(std::string& ip, int& port) const override {
        sockaddr_storage a{};
        socklen_t len = sizeof a;
        if (getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) address_of(a, len, ip, port);
    }
    void get_local_ip_and_port(std::string& ip, int& port) const override {
        sockaddr_storage a{};
        socklen_t len = sizeof a;
        if (getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) address_of(a, len, ip, port);
    }
    socket_t socket() const override { return fd_; }

private:
    // Answers the request here, in OpenAI's error shape, and fails every later read and write:
    // cpp-httplib's parser then gives up on the request (its own 400 goes nowhere) and the
    // connection is closed. -1, for read() to return.
    ssize_t refuse(int status, const std::string& message) {
        ApiError e;
        e.status = status;
        e.message = message;
        e.type = "invalid_request_error";
        const std::string body = error_body(e);
        const std::string reason = status == 431   ? "Request Header Fields Too Large"
                                   : status == 408 ? "Request Timeout"
                                   : status == 413 ? "Payload Too Large"
                                   : status == 415 ? "Unsupported Media Type"
                                                   : "Bad Request";
        const std::string response =
            "HTTP/1.1 " + std::to_string(status) + " " + reason +
            "\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: " + std::to_string(body.size()) +
            (allowed_origin_.empty() ? "" : "\r\nAccess-Control-Allow-Origin: " + allowed_origin_ + "\r\nVary: Origin") +
            "\r\nConnection: close\r\n\r\n" + body;
        for (size_t at = 0; at < response.size();) {
            const ssize_t n = send_some(response.data() + at, response.size() - at);
            if (n <= 0) break;
            at += size_t(n);
        }
        refused_ = true;
        return -1;
    }

    // Sends what the socket takes now, waiting for room up to the write timeout: never
    // blocks longer (a blocking send of more than there is room for would wait for a client
    // that stopped reading). The bytes sent, or -1.
    ssize_t send_some(const char* ptr, size_t size) const {
        const auto until = Clock::now() + std::chrono::milliseconds(write_ms_);
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
            if (left <= 0 || !wait_for(fd_, POLLOUT, int(left))) return -1;
            const ssize_t n = send(fd_, ptr, size, kSendFlags | MSG_DONTWAIT);
            if (n >= 0) return n;
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
        }
    }

    int head_ms() const { return std::min(read_ms_, limits::kServerHeadSeconds * 1000); }

    const int fd_, read_ms_, write_ms_;
    const uint64_t max_body_;
    const std::string& cors_origins_;  // the server's --cors-origins
    std::string allowed_origin_;       // the request's Origin, when --cors-origins lets it in
    char buf_[4096];
    size_t off_ = 0, len_ = 0;
    bool in_head_ = false;
    size_t head_bytes_ = 0, head_lines_ = 0;
    Clock::time_point deadline_, head_deadline_;
    uint64_t body_length_ = 0, body_read_ = 0;
    bool body_length_known_ = true, body_chunked_ = false, body_over_ = false, http10_ = false;
    bool refused_ = false;
};

// The connection this thread serves, for client_gone(): cpp-httplib calls the handlers on the
// thread that runs the connection's loop, and does not give them the socket.
thread_local Connection* t_connection = nullptr;

}  // namespace

bool GuardedServer::process_and_close_socket(socket_t sock) {
    Connection c(sock, to_ms(read_timeout_sec_, read_timeout_usec_), to_ms(write_timeout_sec_, write_timeout_usec_),
                 payload_max_length_, cors_origins_);
    // However this ends (an exception from the parser too): no handler sees the connection
    // after it, and the socket is closed.
    struct Ending {
        Connection& c;
        socket_t sock;
        ~Ending() {
            t_connection = nullptr;
            if (c.unread()) c.linger();
            shutdown(sock, SHUT_RDWR);
            close(sock);
        }
    } ending{c, sock};
    t_connection = &c;
    bool ok = false;
    // As cpp-httplib's loop does: up to keep_alive_max_count_ requests, the last answered
    // with "Connection: close"; each request's head is guarded, not only the first's.
    for (size_t left = keep_alive_max_count_; left > 0; left--) {
        if (!c.wait_for_request(to_ms(keep_alive_timeout_sec_, 0), svr_sock_)) break;
        c.begin_head();
        bool closed = false;
        ok = process_request(c, left == 1, closed, [&c](httplib::Request& req) { c.end_head(req); });
        if (!ok || closed || !c.head_parsed() || c.http10() || !c.skip_unread_body()) break;
    }
    return ok;
}

bool client_gone() { return t_connection && t_connection->peer_closed(); }

#else  // a later cpp-httplib: its own connection loop (server/connection.h)

bool client_gone() { return false; }

#endif

}  // namespace hearth
