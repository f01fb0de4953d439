// `run --server` as a client meets it over raw HTTP: each test starts the server on a free
// loopback port with the default model, sends requests through a plain socket (no HTTP
// library, so that malformed and hostile requests go out exactly as written), and stops it
// with SIGTERM, which must end it with exit code 0. The official openai npm client's test
// (tests/server/openai_client_test.mjs) runs here too, against a server with an API key.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <sentencepiece_processor.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "base/limits.h"
#include "tests/test_helpers.h"

using namespace hearth;

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (bind(fd, (sockaddr*)&a, sizeof a) != 0 || getsockname(fd, (sockaddr*)&a, &len) != 0) {
        close(fd);
        return 0;
    }
    close(fd);
    return ntohs(a.sin_port);
}

int connect_to(int port, double timeout_s = 60) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(uint16_t(port));
    timeval tv{long(timeout_s), 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (sockaddr*)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

bool send_all(int fd, const std::string& s) {
    for (size_t at = 0; at < s.size();) {
        const ssize_t n = send(fd, s.data() + at, s.size() - at, MSG_NOSIGNAL);
        if (n <= 0) return false;
        at += size_t(n);
    }
    return true;
}

std::string request_text(const std::string& method, const std::string& path, const std::string& body,
                         const std::string& headers = "") {
    return method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + headers +
           (method == "POST" ? "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" : "") +
           "\r\n" + body;
}

struct Response {
    int status = 0;
    std::string headers, body;  // the body de-chunked
    json j() const {
        try {
            return json::parse(body);
        } catch (...) {
            return json();
        }
    }
};

std::string dechunk(const std::string& s) {
    std::string out;
    for (size_t at = 0; at < s.size();) {
        const size_t eol = s.find("\r\n", at);
        if (eol == std::string::npos) break;
        const size_t n = std::strtoul(s.substr(at, eol - at).c_str(), nullptr, 16);
        if (n == 0) break;
        out += s.substr(eol + 2, n);
        at = eol + 2 + n + 2;
    }
    return out;
}

Response parse_response(const std::string& raw) {
    Response r;
    const size_t end = raw.find("\r\n\r\n");
    if (raw.compare(0, 9, "HTTP/1.1 ") != 0 || end == std::string::npos) return r;
    r.status = std::atoi(raw.c_str() + 9);
    r.headers = raw.substr(0, end);
    r.body = raw.substr(end + 4);
    if (r.headers.find("Transfer-Encoding: chunked") != std::string::npos) r.body = dechunk(r.body);
    return r;
}

// Whether `raw` holds a whole response: its headers and the body they announce.
bool complete_response(const std::string& raw) {
    const size_t end = raw.find("\r\n\r\n");
    if (end == std::string::npos) return false;
    const std::string headers = raw.substr(0, end);
    const size_t cl = headers.find("Content-Length: ");
    if (cl != std::string::npos) return raw.size() >= end + 4 + std::strtoul(headers.c_str() + cl + 16, nullptr, 10);
    if (headers.find("Transfer-Encoding: chunked") != std::string::npos) return raw.compare(raw.size() - 5, 5, "0\r\n\r\n") == 0;
    return false;
}

// Sends raw bytes and reads the response: to its announced end, or until the server closes
// (a malformed request may leave the connection open, waiting for the next one).
Response raw_exchange(int port, const std::string& raw_request) {
    const int fd = connect_to(port);
    if (fd < 0) return {};
    send_all(fd, raw_request);
    std::string raw;
    char buf[65536];
    for (ssize_t n; !complete_response(raw) && (n = recv(fd, buf, sizeof buf, 0)) > 0;) raw.append(buf, size_t(n));
    close(fd);
    return parse_response(raw);
}

Response http(int port, const std::string& method, const std::string& path, const std::string& body = "",
              const std::string& headers = "") {
    return raw_exchange(port, request_text(method, path, body, headers));
}

// A response header's value ("" when absent); names are case-insensitive (RFC 9110 5.1).
std::string header_of(const Response& r, const std::string& name) {
    std::string lower_headers = r.headers, lower_name = name;
    for (char& c : lower_headers) c = char(std::tolower((unsigned char)c));
    for (char& c : lower_name) c = char(std::tolower((unsigned char)c));
    const size_t at = lower_headers.find("\r\n" + lower_name + ":");
    if (at == std::string::npos) return "";
    const size_t begin = r.headers.find_first_not_of(' ', at + 3 + name.size());
    const size_t end = r.headers.find("\r\n", begin);
    return r.headers.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// Whether a comma-separated header value lists `item` (case-insensitive, as header and method
// tokens compare in CORS-preflight checks).
bool lists(const std::string& value, const std::string& item) {
    std::string v = value, i = item;
    for (char& c : v) c = char(std::tolower((unsigned char)c));
    for (char& c : i) c = char(std::tolower((unsigned char)c));
    size_t at = 0;
    while (at <= v.size()) {
        size_t end = v.find(',', at);
        if (end == std::string::npos) end = v.size();
        std::string part = v.substr(at, end - at);
        part.erase(0, part.find_first_not_of(' '));
        part.erase(part.find_last_not_of(' ') + 1);
        if (part == i) return true;
        at = end + 1;
    }
    return false;
}

// An error in OpenAI's shape: {"error": {"message": "...", "type": "...", "param", "code"}}.
void check_error_shape(const Response& r, int status, const std::string& param = "") {
    INFO("HTTP " << r.status << ": " << r.body);
    CHECK(r.status == status);
    const json j = r.j();
    REQUIRE(j.is_object());
    REQUIRE(j.contains("error"));
    CHECK(j["error"]["message"].is_string());
    CHECK(!j["error"]["message"].get<std::string>().empty());
    CHECK(j["error"]["type"].is_string());
    CHECK(j["error"].contains("param"));
    CHECK(j["error"].contains("code"));
    if (!param.empty()) CHECK(j["error"]["param"] == param);
}

class Server {
public:
    explicit Server(const std::string& args, const std::string& model = "models/tiny-shakespeare.hearth") : port_(free_port()) {
        log_ = "build/tests/server-" + std::to_string(port_) + ".log";
        const std::string cmd =
            with_programs_of_build("exec ./run " + model + " --server --port " + std::to_string(port_) + " " + args);
        pid_ = fork();
        if (pid_ == 0) {
            const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            execl("/bin/sh", "sh", "-c", cmd.c_str(), (char*)nullptr);
            _exit(127);
        }
        // Ready when /health says 200 (it says 503 while the model loads).
        const auto t = Clock::now();
        while (seconds_since(t) < 60) {
            if (http(port_, "GET", "/health").status == 200) {
                ready_ = true;
                break;
            }
            int status;
            if (waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }
    ~Server() { stop(); }
    int port() const { return port_; }
    pid_t pid() const { return pid_; }  // run's own: the shell execs it
    bool ready() const { return ready_; }
    std::string log() const { return read_text(log_); }
    // SIGTERM; the exit code, or -1 when it did not exit within the time.
    int stop(double timeout_s = 30) {
        if (pid_ <= 0) return exit_code_;
        kill(pid_, SIGTERM);
        const auto t = Clock::now();
        int status = 0;
        while (waitpid(pid_, &status, WNOHANG) == 0) {
            if (seconds_since(t) > timeout_s) {
                kill(pid_, SIGKILL);
                waitpid(pid_, &status, 0);
                pid_ = -1;
                return exit_code_ = -1;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        pid_ = -1;
        return exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }

private:
    int port_;
    pid_t pid_ = -1;
    bool ready_ = false;
    int exit_code_ = -1;
    std::string log_;
};

std::string completion_body(const std::string& prompt, int max_tokens, const std::string& extra = "") {
    return json{{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}}.dump().insert(1, extra);
}

std::string text_of(const Response& r) {
    const json j = r.j();
    if (!j.is_object() || !j.contains("choices")) return "<no reply: HTTP " + std::to_string(r.status) + " " + r.body + ">";
    const json& c = j["choices"][0];
    return c.contains("text") ? c["text"].get<std::string>() : c["message"]["content"].get<std::string>();
}

// A streamed request read until `events` data: events have come; the socket stays open.
int open_stream(int port, const std::string& path, const std::string& body, int events) {
    const int fd = connect_to(port, 30);
    if (fd < 0 || !send_all(fd, request_text("POST", path, body))) return -1;
    std::string raw;
    char buf[4096];
    size_t seen = 0;
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) {
        raw.append(buf, size_t(n));
        for (size_t at = raw.find("data: ", seen); at != std::string::npos; at = raw.find("data: ", at + 1)) {
            seen = at + 1;
            if (--events == 0) return fd;
        }
    }
    close(fd);
    return -1;
}

// The server's resident memory, in KiB (Linux's /proc; 0 where there is none).
long rss_kib(pid_t pid) {
    const std::string status = read_text("/proc/" + std::to_string(pid) + "/status");
    const size_t at = status.find("VmRSS:");
    return at == std::string::npos ? 0 : std::atol(status.c_str() + at + 6);
}

// Reads one response from a connection that stays open.
Response read_one(int fd) {
    std::string raw;
    char buf[4096];
    for (ssize_t n; !complete_response(raw) && (n = recv(fd, buf, sizeof buf, 0)) > 0;) raw.append(buf, size_t(n));
    return parse_response(raw);
}

// Reads until the server closes the connection (or the socket's timeout).
std::string read_to_close(int fd) {
    std::string raw;
    char buf[65536];
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) raw.append(buf, size_t(n));
    return raw;
}

}  // namespace

TEST_CASE(
    "server http: a request's head over the limits is 431 on every request of a connection, and costs no unbounded memory") {
    Server s("-np 1 -c 512 --timeout 2");
    REQUIRE(s.ready());
    const int p = s.port();
    const long rss_before = rss_kib(s.pid());

    // Many short header lines, well under the byte limit: 431 in OpenAI's shape.
    std::string many;
    for (size_t i = 0; i <= limits::kServerHeaderLines; i++) many += "X-H" + std::to_string(i) + ": v\r\n";
    check_error_shape(http(p, "GET", "/health", "", many), 431);
    // Up to the limit they are served (the request's own lines count too).
    std::string fewer;
    for (size_t i = 0; i + 4 < limits::kServerHeaderLines; i++) fewer += "X-H" + std::to_string(i) + ": v\r\n";
    CHECK(http(p, "GET", "/health", "", fewer).status == 200);
    // Long header lines under cpp-httplib's 8 KiB each, over the head's bytes together.
    std::string long_lines;
    for (size_t i = 0; i * 8000 <= limits::kServerHeadBytes; i++)
        long_lines += "X-L" + std::to_string(i) + ": " + std::string(8000, 'v') + "\r\n";
    check_error_shape(http(p, "GET", "/health", "", long_lines), 431);

    // The second request of a keep-alive connection is held to the same limits.
    {
        const int fd = connect_to(p, 10);
        REQUIRE(fd >= 0);
        REQUIRE(send_all(fd, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
        CHECK(read_one(fd).status == 200);
        send_all(fd, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + many + "\r\n");
        const Response second = parse_response(read_to_close(fd));
        close(fd);
        check_error_shape(second, 431);
    }

    // A flood: a request line, then header lines without end (cpp-httplib 0.11 alone kept
    // them all: ~208 MB of memory for 100 MB). The server answers 431 and closes once the head
    // is over the limit; the client's sending fails long before it has sent everything.
    for (const std::string start :
         {"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n", "GET /"}) {  // header lines; one endless request line
        const int fd = connect_to(p, 10);
        REQUIRE(fd >= 0);
        timeval tv{10, 0};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        const auto t = Clock::now();
        send_all(fd, start);
        std::string chunk;
        while (chunk.size() < 65536) chunk += start.size() > 5 ? "X-A: b\r\n" : "aaaaaaaa";
        uint64_t sent = 0;
        while (sent < 64 * limits::MiB && send_all(fd, chunk)) sent += chunk.size();
        const Response r = parse_response(read_to_close(fd));
        close(fd);
        INFO("sent " << (sent >> 10) << " KiB in " << seconds_since(t) << " s; HTTP " << r.status);
        CHECK(sent < 16 * limits::MiB);
        CHECK(seconds_since(t) < 10);
        CHECK((r.status == 431 || r.status == 0));  // the answer, or a reset that overtook it
    }

    // A head that comes a little at a time must be whole within the read timeout (--timeout 2).
    {
        const int fd = connect_to(p, 10);
        REQUIRE(fd >= 0);
        const auto t = Clock::now();
        send_all(fd, "GET /health HTTP/1.1\r\n");
        std::string raw;
        for (int i = 0; i < 20 && send_all(fd, "X: y\r\n"); i++) {
            std::this_thread::sleep_for(std::chrono::milliseconds(250));
            if (seconds_since(t) > 2.5) break;
        }
        const Response r = parse_response(read_to_close(fd));
        close(fd);
        CHECK(r.status == 408);
        CHECK(seconds_since(t) < 5);
    }

    // ...and it still serves, in bounded memory.
    CHECK(http(p, "GET", "/health").status == 200);
    CHECK(http(p, "POST", "/v1/completions", completion_body("ROMEO:", 4)).status == 200);
    const long rss_after = rss_kib(s.pid());
    MESSAGE("server RSS " << rss_before << " KiB before the header floods, " << rss_after << " KiB after");
    CHECK(rss_after < rss_before + 32 * 1024);
    CHECK(s.stop() == 0);
}

TEST_CASE("server http: a chunked body is held to the body limit, and a request's body to the read timeout") {
    Server s("-np 1 -c 512 --timeout 2");
    REQUIRE(s.ready());
    const int p = s.port();
    const long rss_before = rss_kib(s.pid());
    const std::string head =
        "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n";
    // A small chunked body is read as any other.
    const std::string body = completion_body("ROMEO:", 4);
    char size[16];
    std::snprintf(size, sizeof size, "%zx", body.size());
    CHECK(raw_exchange(p, head + "Connection: close\r\n\r\n" + size + "\r\n" + body + "\r\n0\r\n\r\n").status == 200);
    // One without end (cpp-httplib 0.11 alone kept all of it: 200 MB sent, 217 MB of memory)
    // is refused once it passes the body limit.
    {
        const int fd = connect_to(p, 10);
        REQUIRE(fd >= 0);
        timeval tv{10, 0};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        const auto t = Clock::now();
        send_all(fd, head + "\r\n");
        const std::string chunk = "10000\r\n" + std::string(65536, ' ') + "\r\n";
        uint64_t sent = 0;
        while (sent < 128 * limits::MiB && send_all(fd, chunk)) sent += chunk.size();
        const Response r = parse_response(read_to_close(fd));
        close(fd);
        INFO("sent " << (sent >> 10) << " KiB in " << seconds_since(t) << " s; HTTP " << r.status);
        CHECK(sent < limits::kServerBodyBytes + 32 * limits::MiB);
        CHECK((r.status == 400 || r.status == 413 || r.status == 0));
        CHECK(seconds_since(t) < 10);
    }
    // A body that comes a byte now and then must be whole within the read timeout.
    {
        const int fd = connect_to(p, 10);
        REQUIRE(fd >= 0);
        const auto t = Clock::now();
        send_all(
            fd,
            "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n");
        for (int i = 0; i < 20 && seconds_since(t) < 3 && send_all(fd, " "); i++)
            std::this_thread::sleep_for(std::chrono::milliseconds(250));
        const Response r = parse_response(read_to_close(fd));
        close(fd);
        CHECK(r.status == 400);
        CHECK(seconds_since(t) < 5);
    }
    CHECK(http(p, "GET", "/health").status == 200);
    const long rss_after = rss_kib(s.pid());
    MESSAGE("server RSS " << rss_before << " KiB before the endless chunked body, " << rss_after << " KiB after");
    // The body read up to its 8 MiB limit grew a string by doubling, and AddressSanitizer's
    // quarantine keeps freed blocks: tens of MB, not the 128 MiB sent.
    CHECK(rss_after < rss_before + 64 * 1024);
    CHECK(s.stop() == 0);
}

TEST_CASE("server http: a client that goes away before its non-streamed reply frees its slot") {
    Server s("-np 1 -c 4096");
    REQUIRE(s.ready());
    const int p = s.port();
    // Without the disconnect this would generate until the slot's context is full.
    const std::string endless = json{{"prompt", "ROMEO:"}, {"ignore_eos", true}, {"temperature", 0}}.dump();
    const int fd = connect_to(p, 30);
    REQUIRE(fd >= 0);
    REQUIRE(send_all(fd, request_text("POST", "/v1/completions", endless)));
    auto busy = [&] {
        const json slots = http(p, "GET", "/slots").j();
        return slots.is_array() && !slots.empty() && slots[0]["is_processing"] == true;
    };
    const auto t_start = Clock::now();
    while (!busy() && seconds_since(t_start) < 10) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(busy());
    const auto t = Clock::now();
    close(fd);
    while (busy() && seconds_since(t) < 10) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(!busy());
    CHECK(seconds_since(t) < 2);
    // It ended because its client left, not at the context's end.
    const std::string log = s.log();
    INFO(log);
    CHECK(log.find("slot 0: completion, prompt") != std::string::npos);
    CHECK(log.find("ended: the client went away") != std::string::npos);
    CHECK(log.find("ended: length") == std::string::npos);
    // The next request is served at once.
    CHECK(http(p, "POST", "/v1/completions", completion_body("ROMEO:", 4)).status == 200);
    CHECK(s.stop() == 0);
}

TEST_CASE("server http: a completion's prompt may be token ids, checked against the vocabulary") {
    Server s("-np 1 -c 512");
    REQUIRE(s.ready());
    const int p = s.port();
    // The ids /tokenize gives (with BOS, as a text prompt gets) continue as the text does.
    const json ids = http(p, "POST", "/tokenize", json{{"content", "ROMEO:"}, {"add_special", true}}.dump()).j()["tokens"];
    REQUIRE(ids.is_array());
    const Response by_text = http(p, "POST", "/v1/completions", completion_body("ROMEO:", 12));
    const Response by_ids =
        http(p, "POST", "/v1/completions", json{{"prompt", ids}, {"max_tokens", 12}, {"temperature", 0}}.dump());
    REQUIRE(by_ids.status == 200);
    CHECK(text_of(by_ids) == text_of(by_text));
    CHECK(by_ids.j()["usage"]["prompt_tokens"] == ids.size());
    check_error_shape(http(p, "POST", "/v1/completions", R"({"prompt":[1, 99999]})"), 400, "prompt");
    check_error_shape(http(p, "POST", "/v1/completions", R"({"prompt":[1, -2]})"), 400, "prompt");
    CHECK(s.stop() == 0);
}

TEST_CASE("server http: malformed requests get OpenAI-shaped errors and the server keeps serving") {
    Server s("-np 2 -c 2048");
    REQUIRE(s.ready());
    const int p = s.port();
    check_error_shape(http(p, "POST", "/v1/chat/completions", "{\"messages\": [{\"role\": \"user\""), 400);  // cut short
    check_error_shape(http(p, "POST", "/v1/chat/completions", "not json at all"), 400);
    check_error_shape(http(p, "POST", "/v1/chat/completions", "[]"), 400);
    check_error_shape(http(p, "POST", "/v1/chat/completions", R"({"messages":"hello"})"), 400, "messages");
    check_error_shape(
        http(p, "POST", "/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}],"temperature":"hot"})"), 400,
        "temperature");
    check_error_shape(http(p, "POST", "/v1/completions", R"({"prompt":"hi","max_tokens":-3})"), 400, "max_tokens");
    check_error_shape(http(p, "POST", "/v1/completions", R"({"prompt":["a","b"]})"), 400, "prompt");
    // Invalid UTF-8 in a string: a lone 0xff byte, and a truncated 3-byte sequence.
    check_error_shape(http(p, "POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"a\xff\"}]}"), 400);
    check_error_shape(http(p, "POST", "/v1/completions", "{\"prompt\":\"\xe2\x82\"}"), 400);
    // Unsupported parameters, named; with stream: true the error still comes before any event.
    check_error_shape(http(p, "POST", "/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}],"n":2})"), 400,
                      "n");
    Response n2 = http(p, "POST", "/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}],"n":2,"stream":true})");
    check_error_shape(n2, 400, "n");
    CHECK(n2.headers.find("text/event-stream") == std::string::npos);
    // A prompt longer than a slot's context (2048 / 2 = 1024 tokens): 400 before any event.
    std::string longer;
    for (int i = 0; i < 3000; i++) longer += "word ";
    Response lg = http(p, "POST", "/v1/completions", json{{"prompt", longer}, {"stream", true}}.dump());
    check_error_shape(lg, 400, "prompt");
    CHECK(lg.j()["error"]["code"] == "context_length_exceeded");
    // An unknown path: 404. A known path asked with another method: 405 with an Allow header
    // naming the methods the path takes (RFC 9110 15.5.6, 10.2.1), as OPTIONS names them for
    // each path (9.3.7): a path served by GET answers HEAD too, every path OPTIONS.
    check_error_shape(http(p, "GET", "/v2/nothing"), 404);
    // Whether an Allow header lists exactly these methods, in any order.
    auto allows = [](const std::string& value, std::vector<std::string> methods) {
        size_t items = 1 + std::count(value.begin(), value.end(), ',');
        for (const std::string& m : methods)
            if (!lists(value, m)) return false;
        return items == methods.size();
    };
    Response wrong_method = http(p, "GET", "/v1/chat/completions");
    check_error_shape(wrong_method, 405);
    CHECK(allows(header_of(wrong_method, "Allow"), {"POST", "OPTIONS"}));
    wrong_method = http(p, "POST", "/health", "{}");
    check_error_shape(wrong_method, 405);
    CHECK(allows(header_of(wrong_method, "Allow"), {"GET", "HEAD", "OPTIONS"}));
    for (const auto& [path, methods] :
         std::vector<std::pair<std::string, std::vector<std::string>>>{{"/v1/chat/completions", {"POST", "OPTIONS"}},
                                                                       {"/completions", {"POST", "OPTIONS"}},
                                                                       {"/tokenize", {"POST", "OPTIONS"}},
                                                                       {"/v1/models", {"GET", "HEAD", "OPTIONS"}},
                                                                       {"/v1/models/some-model", {"GET", "HEAD", "OPTIONS"}},
                                                                       {"/health", {"GET", "HEAD", "OPTIONS"}},
                                                                       {"/", {"GET", "HEAD", "OPTIONS"}}}) {
        INFO(path);
        const Response o = http(p, "OPTIONS", path);
        CHECK(o.status == 204);
        CHECK(allows(header_of(o, "Allow"), methods));
        // What the Allow header lists is what the path answers.
        if (methods[0] == "GET") CHECK(raw_exchange(p, request_text("HEAD", path, "")).status != 405);
    }
    // A preflight is told the path's methods too.
    const Response pre =
        http(p, "OPTIONS", "/v1/models", "", "Origin: http://localhost:5173\r\nAccess-Control-Request-Method: GET\r\n");
    CHECK(allows(header_of(pre, "Access-Control-Allow-Methods"), {"GET", "HEAD", "OPTIONS"}));
    check_error_shape(http(p, "OPTIONS", "/v2/nothing"), 404);
    CHECK(allows(header_of(raw_exchange(p, "OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"), "Allow"),
                 {"GET", "HEAD", "POST", "OPTIONS"}));
    // A JSON body of 40 KB sent as a form (curl -d's type): cpp-httplib's 8 KiB limit for forms,
    // said as such (it said "larger than 8 MiB").
    Response form = http(p, "POST", "/v1/completions", json{{"prompt", std::string(40000, 'a')}}.dump(),
                         "Content-Type: application/x-www-form-urlencoded\r\n");
    check_error_shape(form, 413);
    CHECK(form.body.find("application/json") != std::string::npos);
    // A body over the limit: 413, answered from its Content-Length (server/connection.cpp).
    check_error_shape(raw_exchange(p, request_text("POST", "/v1/completions", std::string(limits::kServerBodyBytes + 1, ' '))),
                      413);
    // A header line over cpp-httplib's 8 KiB is refused without an answer or with 400.
    Response big_header = raw_exchange(
        p, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(limits::kServerHeaderLineBytes + 100, 'a') +
               "\r\nConnection: close\r\n\r\n");
    CHECK((big_header.status == 0 || big_header.status == 400));
    // A request line that is not HTTP.
    CHECK(raw_exchange(p, "HELLO\r\n\r\n").status != 200);
    // ...and after all that it still answers.
    Response ok = http(p, "POST", "/v1/completions", completion_body("ROMEO:", 4));
    CHECK(ok.status == 200);
    CHECK(ok.j()["usage"]["completion_tokens"].get<int>() <= 4);
    Response health = http(p, "GET", "/health");
    CHECK(health.status == 200);
    CHECK(health.j()["status"] == "ok");
    CHECK(s.stop() == 0);
}

TEST_CASE(
    "server http: a request that cannot be read ends its connection; bodies and prompts it cannot take are refused before they are "
    "read") {
    // --timeout 30: an answer that waited for the body or the read timeout would be late.
    Server s("-np 1 -c 512 --timeout 30");
    REQUIRE(s.ready());
    const int p = s.port();
    // A request line cpp-httplib cannot parse (HTTP/1.2, an unknown method): one 400, and the
    // connection ends; the lines after it, a request hidden in its "body" among them, are not
    // served (they were, as requests of their own, before).
    const std::string hidden = request_text("POST", "/v1/completions", completion_body("ROMEO:", 2));
    for (const std::string line : {"POST /tokenize HTTP/1.2", "post /tokenize HTTP/1.1", "FOO / HTTP/1.1"}) {
        const int fd = connect_to(p, 10);
        REQUIRE(fd >= 0);
        const auto t = Clock::now();
        send_all(fd, line + "\r\nHost: 127.0.0.1\r\nContent-Length: " + std::to_string(hidden.size()) + "\r\n\r\n" + hidden);
        const std::string raw = read_to_close(fd);
        close(fd);
        INFO(line << ": " << raw);
        size_t responses = 0;
        for (size_t at = raw.find("HTTP/1.1 "); at != std::string::npos; at = raw.find("HTTP/1.1 ", at + 1)) responses++;
        CHECK(responses == 1);
        CHECK(parse_response(raw).status == 400);
        CHECK(raw.find("\"choices\"") == std::string::npos);
        CHECK(seconds_since(t) < 5);
    }
    // A compressed body: 415 at once (cpp-httplib would inflate it with no bound: 200 KB of
    // gzip grew the server by gigabytes). The bytes need not be gzip: nothing of them is read.
    {
        const auto t = Clock::now();
        check_error_shape(http(p, "POST", "/v1/completions", std::string(4096, 'x'), "Content-Encoding: gzip\r\n"), 415);
        check_error_shape(http(p, "POST", "/v1/completions", std::string(4096, 'x'), "Content-Encoding: br\r\n"), 415);
        CHECK(seconds_since(t) < 5);
    }
    // A Content-Length that is not a number, or over the body limit: answered before the body
    // (which never comes here), not at the read timeout.
    for (const std::string& length : {std::string("-5"), std::string("99999999999999999999"), std::string("12abc"),
                                      std::to_string(limits::kServerBodyBytes + 1)}) {
        const auto t = Clock::now();
        const Response r = raw_exchange(p,
                                        "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                        "Content-Length: " +
                                            length + "\r\n\r\n{\"prompt\":\"a\"}");
        INFO("Content-Length: " << length);
        check_error_shape(r, length.size() > 12 || length[0] == '-' || length.back() == 'c' ? 400 : 413);
        CHECK(seconds_since(t) < 5);
    }
    // A head that trickles in is 408 at limits::kServerHeadSeconds, not at --timeout (30 here).
    {
        const int fd = connect_to(p, 40);
        REQUIRE(fd >= 0);
        const auto t = Clock::now();
        send_all(fd, "GET /health HTTP/1.1\r\n");
        for (int i = 0; i < 60 && send_all(fd, "X: y\r\n"); i++) {
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
            if (seconds_since(t) > limits::kServerHeadSeconds + 3) break;
        }
        const Response r = parse_response(read_to_close(fd));
        close(fd);
        CHECK(r.status == 408);
        CHECK(seconds_since(t) < limits::kServerHeadSeconds + 5);
    }
    // A prompt of more than 64 bytes a token of the slot's context (512): refused before it is
    // tokenized (it took ~230 bytes of memory per byte, to be refused after that).
    {
        const auto t = Clock::now();
        const std::string text(4 * limits::MiB, 'a');
        Response r = http(p, "POST", "/v1/completions", json{{"prompt", text}}.dump());
        check_error_shape(r, 400, "prompt");
        CHECK(r.j()["error"]["code"] == "context_length_exceeded");
        CHECK(r.body.find("too long to be tokenized") != std::string::npos);
        json messages = json::array();
        for (int i = 0; i < 5; i++)  // alternating, as a dialog must
            messages.push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", std::string(limits::MiB, 'b')}});
        r = http(p, "POST", "/v1/chat/completions", json{{"messages", messages}}.dump());
        check_error_shape(r, 400, "messages");
        CHECK(r.body.find("too long to be tokenized") != std::string::npos);
        CHECK(seconds_since(t) < 5);
    }
    CHECK(http(p, "POST", "/v1/completions", completion_body("ROMEO:", 2)).status == 200);
    // A second server on the port this one listens on is refused (cpp-httplib's SO_REUSEPORT let
    // it start, and the two shared the requests).
    // (timeout: a second server that started would serve until stopped)
    const CommandResult second =
        run_command("timeout 30 ./run models/tiny-shakespeare.hearth --server --port " + std::to_string(p));
    CHECK(second.exit_code == 1);
    CHECK(second.err.find("cannot listen") != std::string::npos);
    CHECK(s.stop() == 0);
}

TEST_CASE("server http: greedy completions equal run --temp 0, alone or four at once") {
    Server s("-np 4 -c 4096");
    REQUIRE(s.ready());
    const int p = s.port();
    // The same prompt text through `run -p` without drafts (the server drafts, by default): it
    // prints the prompt, the generated text and a newline.
    for (const std::string prompt : {"ROMEO:", "First Citizen:\nWe are accounted poor"}) {
        CommandResult r = run_command("./run models/tiny-shakespeare.hearth --temp 0 --draft 0 -n 40 -p '" + prompt + "'");
        REQUIRE(r.exit_code == 0);
        Response c = http(p, "POST", "/v1/completions", completion_body(prompt, 40));
        REQUIRE(c.status == 200);
        CHECK(prompt + text_of(c) + "\n" == r.out);
    }
    // Four requests, each alone, then all four at once (two chats, two completions).
    const std::vector<std::pair<std::string, std::string>> reqs = {
        {"/v1/completions", completion_body("KING HENRY:", 48)},
        {"/v1/completions", completion_body("To be, or not to be", 48)},
        {"/v1/chat/completions",
         json{{"messages", {{{"role", "user"}, {"content", "Speak of the king."}}}}, {"max_tokens", 48}, {"temperature", 0}}
             .dump()},
        {"/v1/chat/completions",
         json{{"messages",
               {{{"role", "system"}, {"content", "Thou art a player."}}, {{"role", "user"}, {"content", "What news?"}}}},
              {"max_tokens", 48},
              {"temperature", 0}}
             .dump()},
    };
    std::vector<std::string> alone;
    for (const auto& [path, body] : reqs) alone.push_back(text_of(http(p, "POST", path, body)));
    std::vector<std::string> together(reqs.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < reqs.size(); i++)
        threads.emplace_back([&, i] { together[i] = text_of(http(p, "POST", reqs[i].first, reqs[i].second)); });
    for (std::thread& t : threads) t.join();
    for (size_t i = 0; i < reqs.size(); i++) {
        INFO("request " << i);
        CHECK(!alone[i].empty());
        CHECK(together[i] == alone[i]);
    }
    // The two completions, batched and drafted, are what run prints alone without drafts.
    for (size_t i = 0; i < 2; i++) {
        const std::string prompt = json::parse(reqs[i].second)["prompt"];
        CommandResult r = run_command("./run models/tiny-shakespeare.hearth --temp 0 --draft 0 -n 48 -p '" + prompt + "'");
        REQUIRE(r.exit_code == 0);
        CHECK(prompt + together[i] + "\n" == r.out);
    }
    // They were served at once: the log shows four slots used, and steps that evaluated all
    // four together (continuous batching: one pass over the weights for every slot's token).
    const std::string log = s.log();
    for (int slot = 0; slot < 4; slot++) CHECK(log.find("slot " + std::to_string(slot) + ":") != std::string::npos);
    CHECK(log.find("batched with up to 3 other slots") != std::string::npos);
    CHECK(s.stop() == 0);
}

TEST_CASE("server http: a request that arrives while another generates starts at the next step, batched with it") {
    Server s("-np 2 -c 32768");
    REQUIRE(s.ready());
    const int p = s.port();
    // A stream that would generate until its context (16384 positions, seconds) is full.
    const std::string endless = json{{"prompt", "ROMEO:"}, {"stream", true}, {"ignore_eos", true}, {"temperature", 0}}.dump();
    const int fd = open_stream(p, "/v1/completions", endless, 3);
    REQUIRE(fd >= 0);
    // The second request is served while the first goes on, not after it: its reply is what it
    // is alone (run, without drafts), and its log line says its steps were the first's too.
    const std::string prompt = "To be, or not to be";
    Response c = http(p, "POST", "/v1/completions", completion_body(prompt, 32));
    REQUIRE(c.status == 200);
    CommandResult r = run_command("./run models/tiny-shakespeare.hearth --temp 0 --draft 0 -n 32 -p '" + prompt + "'");
    REQUIRE(r.exit_code == 0);
    CHECK(prompt + text_of(c) + "\n" == r.out);
    const json slots = http(p, "GET", "/slots").j();
    REQUIRE(slots.is_array());
    CHECK(slots[0]["is_processing"] == true);  // the first is still generating
    close(fd);
    CHECK(s.stop() == 0);
    const std::string log = s.log();
    INFO(log);
    const size_t at = log.find(", 32 generated");
    REQUIRE(at != std::string::npos);
    const std::string line = log.substr(at, log.find('\n', at) - at);
    CHECK(line.find("batched with up to 1 other slots") != std::string::npos);
}

TEST_CASE("server http: /tokenize and /detokenize agree with run --tokenize") {
    Server s("-np 1 -c 512");
    REQUIRE(s.ready());
    const std::string text = "Hello world, my lord.";
    CommandResult r = run_command("./run models/tiny-shakespeare.hearth --tokenize -p '" + text + "'");
    REQUIRE(r.exit_code == 0);
    Response t = http(s.port(), "POST", "/tokenize", json{{"content", text}}.dump());
    REQUIRE(t.status == 200);
    const json tokens = t.j()["tokens"];
    REQUIRE(tokens.is_array());
    std::string ids;
    for (const json& id : tokens) ids += (ids.empty() ? "" : ",") + std::to_string(id.get<int>());
    CHECK(ids + "\n" == r.out);
    Response d = http(s.port(), "POST", "/detokenize", json{{"tokens", tokens}}.dump());
    REQUIRE(d.status == 200);
    // The first piece keeps its leading space, as llama-server's /detokenize gives it (below).
    CHECK(d.j()["content"] == " " + text);
    check_error_shape(http(s.port(), "POST", "/detokenize", R"({"tokens":[99999]})"), 400, "tokens");
    CHECK(s.stop() == 0);
}

// The expected values are llama-server's answers (llama.cpp b10587) for the same vocabulary: the
// default model written as GGUF (quantize models/tiny-shakespeare.hearth ts.gguf keep) and served
// with llama-server -m ts.gguf. Its /tokenize parses special tokens' texts by default
// (parse_special), gives each id's piece with with_pieces (bytes that are no whole UTF-8 as a
// list of byte values), and its /detokenize joins the tokens' pieces as they are: control
// tokens' texts, the first piece's leading space; invalid UTF-8 is U+FFFD in the JSON.
TEST_CASE("server http: /tokenize's parse_special and with_pieces, and /detokenize, answer as llama-server does") {
    Server s("-np 1 -c 512");
    REQUIRE(s.ready());
    auto post = [&](const char* path, const std::string& body) {
        const Response r = http(s.port(), "POST", path, body);
        INFO(path << " " << body << ": HTTP " << r.status << " " << r.body);
        REQUIRE(r.status == 200);
        return r.body;
    };
    CHECK(post("/tokenize", R"({"content":"<s>Hi</s> \u00e9","add_special":true,"with_pieces":true})") ==
          R"({"tokens":[{"id":1,"piece":"<s>"},{"id":1,"piece":"<s>"},{"id":329,"piece":" H"},{"id":969,"piece":"i"},)"
          R"({"id":2,"piece":"</s>"},{"id":960,"piece":" "},{"id":960,"piece":" "},{"id":198,"piece":[195]},)"
          R"({"id":172,"piece":[169]}]})");
    CHECK(post("/tokenize", R"({"content":"<s>Hi</s> \u00e9","parse_special":false})") ==
          R"({"tokens":[960,63,966,65,1000,969,63,50,966,65,960,198,172]})");
    CHECK(post("/tokenize", R"({"content":"<unk>x"})") == R"({"tokens":[0,960,1015]})");
    // Mixed content: texts and ids in order, BOS only before a first text.
    CHECK(post("/tokenize", R"({"content":[5,"Hi"],"add_special":true})") == R"({"tokens":[5,329,969]})");
    CHECK(post("/tokenize", R"({"content":["Hi",5,"yo"],"add_special":true})") == R"({"tokens":[1,329,969,5,286,963]})");
    CHECK(post("/tokenize", R"({"content":["<s>Hi",5],"add_special":true,"with_pieces":true})") ==
          R"({"tokens":[{"id":1,"piece":"<s>"},{"id":1,"piece":"<s>"},{"id":329,"piece":" H"},{"id":969,"piece":"i"},)"
          R"({"id":5,"piece":"\u0002"}]})");
    check_error_shape(http(s.port(), "POST", "/tokenize", R"({"content":["Hi",99999]})"), 400, "content");
    CHECK(post("/detokenize", R"({"tokens":[1,329,969,2,960,198,172]})") == "{\"content\":\"<s> Hi</s> \xC3\xA9\"}");
    CHECK(post("/detokenize", R"({"tokens":[329,435,963]})") == R"({"content":" Hello"})");
    CHECK(post("/detokenize", R"({"tokens":[198,65,172]})") == "{\"content\":\"\xEF\xBF\xBD>\xEF\xBF\xBD\"}");
    CHECK(post("/detokenize", R"({"tokens":[0,3]})") == R"({"content":"<unk>\u0000"})");
    CHECK(s.stop() == 0);
}

TEST_CASE("server http: a client that goes away mid-stream frees its slot; a full queue is 503; SIGTERM ends streams") {
    Server s("-np 1 -c 32768 --timeout 5");
    REQUIRE(s.ready());
    const int p = s.port();
    // Without the disconnect this would generate until the context is full (~32000 tokens: with
    // drafts the default model runs at thousands of tokens a second, and 4000 were over before
    // the queue below had filled).
    const std::string endless = json{{"prompt", "ROMEO:"}, {"stream", true}, {"ignore_eos", true}, {"temperature", 0}}.dump();
    const auto t_open = Clock::now();
    int fd = open_stream(p, "/v1/completions", endless, 3);
    REQUIRE(fd >= 0);

    // The one slot is busy: kServerQueuedJobs requests wait, and one more is refused with 503.
    std::vector<int> queued;
    const std::string small = request_text("POST", "/v1/completions", completion_body("To be", 1));
    for (size_t i = 0; i < limits::kServerQueuedJobs; i++) {
        const int q = connect_to(p);
        REQUIRE(q >= 0);
        send_all(q, small);
        queued.push_back(q);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    const Response full = http(p, "POST", "/v1/completions", completion_body("To be", 1));
    check_error_shape(full, 503);
    // RFC 9110 15.6.4: a 503 may say when to come back (Retry-After, in seconds), which the
    // openai clients' retries follow rather than their own backoff.
    const std::string retry_after = header_of(full, "Retry-After");
    CHECK(!retry_after.empty());
    CHECK(retry_after.find_first_not_of("0123456789") == std::string::npos);

    // The client goes away: the slot is freed at once and the queue drains.
    const auto t = Clock::now();
    close(fd);
    for (int q : queued) {
        std::string raw;
        char buf[4096];
        for (ssize_t n; !complete_response(raw) && (n = recv(q, buf, sizeof buf, 0)) > 0;) raw.append(buf, size_t(n));
        close(q);
        CHECK(parse_response(raw).status == 200);
    }
    Response after = http(p, "POST", "/v1/completions", completion_body("ROMEO:", 4));
    CHECK(after.status == 200);
    const double waited = seconds_since(t);
    CHECK(waited < 10);
    const json slots = http(p, "GET", "/slots").j();
    REQUIRE(slots.is_array());
    CHECK(slots[0]["is_processing"] == false);
    // The endless job ended because its client left, long before the context was full.
    const std::string log = s.log();
    const size_t gone = log.find("ended: the client went away");
    REQUIRE(gone != std::string::npos);
    const size_t line = log.rfind("slot 0:", gone);
    REQUIRE(line != std::string::npos);
    // "N generated, S s, ended: ...": the job ended within moments of the close, and had been
    // generating all along until then.
    const double job_seconds = std::atof(log.c_str() + log.rfind(", ", gone - 4) + 2);
    const double closed_at = std::chrono::duration<double>(t - t_open).count();
    INFO(log.substr(line, gone - line) << "; the client closed at " << closed_at << " s");
    CHECK(job_seconds >= closed_at - 0.05);
    CHECK(job_seconds < closed_at + 2.0);

    // SIGTERM while a stream runs: the stream ends and the server exits 0.
    fd = open_stream(p, "/v1/completions", endless, 2);
    REQUIRE(fd >= 0);
    const auto t_stop = Clock::now();
    CHECK(s.stop() == 0);
    CHECK(seconds_since(t_stop) < 10);
    close(fd);
}

// An HTTP/1.0 client (ApacheBench, old proxies, `curl -0`) knows no chunked transfer coding:
// RFC 9112 6.1 forbids sending it Transfer-Encoding, so a streamed reply is the events
// themselves, its end the connection's close (RFC 9112 6.3, item 8).
TEST_CASE("server http: an HTTP/1.0 client gets a streamed reply without chunked coding, ended by the close") {
    Server s("-np 1 -c 512");
    REQUIRE(s.ready());
    const int p = s.port();
    // Also when it asks to keep the connection (HTTP/1.0's Keep-Alive, RFC 9112 C.2.2): a reply
    // whose end is the close cannot leave the connection open.
    for (const std::string connection : {"", "Connection: Keep-Alive\r\n"})
        for (const bool chat : {false, true}) {
            INFO(connection << (chat ? "chat" : "completion"));
            const std::string body = chat ? R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"stream":true})"
                                          : completion_body("ROMEO:", 4, R"("stream":true,)");
            const int fd = connect_to(p, 30);
            REQUIRE(fd >= 0);
            const auto t = Clock::now();
            send_all(fd, std::string("POST ") + (chat ? "/v1/chat/completions" : "/v1/completions") +
                             " HTTP/1.0\r\nHost: 127.0.0.1\r\n" + connection +
                             "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                             body);
            const std::string raw = read_to_close(fd);
            CHECK(seconds_since(t) < 3);  // closed at the reply's end, not at the keep-alive timeout (5 s)
            close(fd);
            const size_t end = raw.find("\r\n\r\n");
            REQUIRE(end != std::string::npos);
            Response r;
            r.status = std::atoi(raw.c_str() + 9);
            r.headers = raw.substr(0, end);
            const std::string events = raw.substr(end + 4);
            INFO(raw);
            CHECK(r.status == 200);
            CHECK(header_of(r, "Transfer-Encoding").empty());
            CHECK(header_of(r, "Content-Type") == "text/event-stream");
            // Nothing but events: each "data: ...\n\n", the last [DONE].
            CHECK(events.rfind("data: ", 0) == 0);
            CHECK(events.size() >= 14);
            CHECK(events.compare(events.size() - 14, 14, "data: [DONE]\n\n") == 0);
            size_t n = 0;
            for (size_t at = 0; at < events.size(); n++) {
                const size_t next = events.find("\n\n", at);
                REQUIRE(next != std::string::npos);
                const std::string event = events.substr(at, next - at);
                CHECK(event.rfind("data: ", 0) == 0);
                if (event != "data: [DONE]") CHECK(json::parse(event.substr(6), nullptr, false).is_object());
                at = next + 2;
            }
            CHECK(n >= 3);
        }
    // HTTP/1.1 clients still get chunks.
    const Response chunked = http(p, "POST", "/v1/completions", completion_body("ROMEO:", 2, R"("stream":true,)"));
    CHECK(header_of(chunked, "Transfer-Encoding") == "chunked");
    CHECK(s.stop() == 0);
}

// A stream that waits (for a slot, or for a long prompt to be read) sends nothing for a while,
// and proxies drop a connection idle that long (nginx's proxy_read_timeout: 60 s). The
// event-stream standard (WHATWG HTML, "Server-sent events", authoring notes) advises a comment
// line every 15 s or so; clients ignore comments (the openai package's decoder, the page's).
TEST_CASE("server http: a stream waiting for a slot sends an event-stream comment every 15 s, so proxies keep it") {
    Server s("-np 1 -c 32768");
    REQUIRE(s.ready());
    const int p = s.port();
    // The one slot generates for far longer than the wait below (~30000 tokens).
    const std::string endless = json{{"prompt", "ROMEO:"}, {"stream", true}, {"ignore_eos", true}, {"temperature", 0}}.dump();
    const int busy = open_stream(p, "/v1/completions", endless, 2);
    REQUIRE(busy >= 0);
    const int fd = connect_to(p, 30);
    REQUIRE(fd >= 0);
    send_all(fd, request_text("POST", "/v1/completions", completion_body("ROMEO:", 2, R"("stream":true,)")));
    const auto t = Clock::now();
    std::string raw;
    char buf[4096];
    while (seconds_since(t) < limits::kServerStreamIdleSeconds + 3 && raw.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        raw.append(buf, size_t(n));
    }
    REQUIRE(raw.find("\r\n\r\n") != std::string::npos);
    // Waits past the interval for the stream's first bytes after the headers.
    timeval tv{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string body;
    while (seconds_since(t) < limits::kServerStreamIdleSeconds + 3 && body.find('\n') == std::string::npos) {
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n > 0) body.append(buf, size_t(n));
    }
    const double waited = seconds_since(t);
    INFO(raw << body);
    // The slot was busy all along: the endless job had not ended.
    CHECK(http(p, "GET", "/slots").j()[0]["is_processing"] == true);
    const std::string text = dechunk(body + "\r\n");
    CHECK(text.rfind(":", 0) == 0);  // a comment line, no event
    CHECK(waited >= limits::kServerStreamIdleSeconds - 1);
    // The waiting stream is served once the slot is free, and ends as a stream does.
    close(busy);
    tv = timeval{30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const std::string rest = body + read_to_close(fd);
    close(fd);
    CHECK(dechunk(rest).find("data: [DONE]\n\n") != std::string::npos);
    CHECK(s.stop() == 0);
}

// What a page on another origin sees, by the Fetch standard's CORS protocol: a request it
// sends with Authorization or a JSON Content-Type is preceded by a preflight (OPTIONS, with
// Access-Control-Request-Method/-Headers and no credentials), which must answer with an ok
// status (200-299), Access-Control-Allow-Origin matching the page's origin (or *), the method
// in Access-Control-Allow-Methods and each requested header in Access-Control-Allow-Headers,
// Authorization by name (a * never covers it). The page then reads a response only when it
// carries Access-Control-Allow-Origin for its origin; one that depends on the Origin says
// Vary: Origin (Fetch, "CORS protocol and HTTP caches"). hearth's default lets pages on this
// machine's loopback names in, as llama-server's --cors-origins localhost does, and no
// others: any web page the user visits could otherwise drive the server; --cors-origins
// names others (or * for all, llama-server's default).
TEST_CASE("server http: a page on another origin gets CORS answers: loopback origins by default, others by --cors-origins") {
    // The headers the official openai client sends from a browser (dangerouslyAllowBrowser).
    const std::string asked_headers = "authorization,content-type,x-stainless-arch,x-stainless-lang,x-stainless-retry-count";
    auto preflight = [&](int port, const std::string& path, const std::string& origin) {
        return http(port, "OPTIONS", path, "",
                    "Origin: " + origin +
                        "\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: " + asked_headers + "\r\n");
    };
    auto check_allowed_preflight = [&](const Response& r, const std::string& origin) {
        INFO(origin << ": HTTP " << r.status << "\n" << r.headers);
        CHECK(r.status >= 200);
        CHECK(r.status <= 299);
        const std::string allow_origin = header_of(r, "Access-Control-Allow-Origin");
        CHECK((allow_origin == origin || allow_origin == "*"));
        CHECK(lists(header_of(r, "Access-Control-Allow-Methods"), "POST"));
        for (const char* h : {"authorization", "content-type", "x-stainless-arch", "x-stainless-lang", "x-stainless-retry-count"})
            CHECK(lists(header_of(r, "Access-Control-Allow-Headers"), h));
    };

    {
        Server s("-np 1 -c 512 --api-key sesame");
        REQUIRE(s.ready());
        const int p = s.port();
        // A preflight carries no key, and must pass before the request that carries one.
        for (const std::string origin :
             {"http://localhost:5173", "http://127.0.0.1:3000", "http://[::1]:8000", "https://localhost"}) {
            check_allowed_preflight(preflight(p, "/v1/chat/completions", origin), origin);
            const Response r = http(p, "POST", "/v1/completions", completion_body("ROMEO:", 2),
                                    "Origin: " + origin + "\r\nAuthorization: Bearer sesame\r\n");
            INFO(r.headers);
            CHECK(r.status == 200);
            CHECK(header_of(r, "Access-Control-Allow-Origin") == origin);
            CHECK(lists(header_of(r, "Vary"), "Origin"));
        }
        // And a refusal written before any handler runs (server/connection.cpp): a body over the
        // limit is 413 from its Content-Length, which the page reads rather than a "network error".
        const Response too_big =
            raw_exchange(p,
                         "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://localhost:5173\r\n"
                         "Content-Type: application/json\r\nContent-Length: " +
                             std::to_string(limits::kServerBodyBytes + 1) + "\r\n\r\n");
        CHECK(too_big.status == 413);
        CHECK(header_of(too_big, "Access-Control-Allow-Origin") == "http://localhost:5173");
        const Response too_big_elsewhere =
            raw_exchange(p,
                         "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://evil.example\r\n"
                         "Content-Type: application/json\r\nContent-Length: " +
                             std::to_string(limits::kServerBodyBytes + 1) + "\r\n\r\n");
        CHECK(too_big_elsewhere.status == 413);
        CHECK(header_of(too_big_elsewhere, "Access-Control-Allow-Origin").empty());
        // The page can read a 401 too (the client then says the key is wrong, not "network error").
        const Response unauthorized = http(p, "GET", "/v1/models", "", "Origin: http://localhost:5173\r\n");
        CHECK(unauthorized.status == 401);
        CHECK(header_of(unauthorized, "Access-Control-Allow-Origin") == "http://localhost:5173");
        // A streamed reply carries it as well.
        const Response streamed = http(p, "POST", "/v1/completions", completion_body("ROMEO:", 2, R"("stream":true,)"),
                                       "Origin: http://localhost:5173\r\nAuthorization: Bearer sesame\r\n");
        CHECK(streamed.status == 200);
        CHECK(header_of(streamed, "Access-Control-Allow-Origin") == "http://localhost:5173");

        // A page may send a POST without a preflight when its body's type is one a form can
        // send (Fetch's CORS-safelisted Content-Types: text/plain, application/x-www-form-
        // urlencoded, multipart/form-data): such a request from another site's page, which would
        // make the server generate though the page cannot read the reply, is refused before any
        // work. The same from an origin let in, or with no Origin (curl -d), is served.
        {
            Server open_server("-np 1 -c 512");
            REQUIRE(open_server.ready());
            const int q = open_server.port();
            for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"}) {
                INFO(type);
                const std::string body = completion_body("ROMEO:", 2);
                auto post = [&](const std::string& origin) {
                    return raw_exchange(q, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
                                               (origin.empty() ? "" : "Origin: " + origin + "\r\n") + "Content-Type: " + type +
                                               "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
                };
                check_error_shape(post("http://evil.example"), 403);
                check_error_shape(post("null"), 403);
                // (cpp-httplib reads a multipart body as form parts, so JSON sent as one is 400 whoever sends it.)
                if (std::string(type).rfind("multipart/", 0) == 0) continue;
                CHECK(post("http://localhost:5173").status == 200);
                CHECK(post("").status == 200);
            }
            // No job but the four served ran: one log line each.
            const std::string log = open_server.log();
            size_t jobs = 0;
            for (size_t at = log.find(" generated"); at != std::string::npos; at = log.find(" generated", at + 1)) jobs++;
            CHECK(jobs == 4);
            CHECK(open_server.stop() == 0);
        }

        // Another site's page: neither its preflight nor its request is let through.
        for (const std::string origin : {"http://evil.example", "http://localhost.evil.example", "null"}) {
            INFO(origin);
            const Response pre = preflight(p, "/v1/chat/completions", origin);
            CHECK(header_of(pre, "Access-Control-Allow-Origin").empty());
            const Response r = http(p, "GET", "/v1/models", "", "Origin: " + origin + "\r\nAuthorization: Bearer sesame\r\n");
            CHECK(header_of(r, "Access-Control-Allow-Origin").empty());
        }
        CHECK(s.stop() == 0);
    }
    {
        Server s("-np 1 -c 512 --cors-origins https://app.example,http://tools.example:8443");
        REQUIRE(s.ready());
        const int p = s.port();
        for (const std::string origin : {"https://app.example", "http://tools.example:8443"})
            check_allowed_preflight(preflight(p, "/v1/completions", origin), origin);
        for (const std::string origin : {"http://app.example", "http://localhost:5173", "https://app.example:444"})
            CHECK(header_of(preflight(p, "/v1/completions", origin), "Access-Control-Allow-Origin").empty());
        CHECK(s.stop() == 0);
    }
    {
        Server s("-np 1 -c 512 --cors-origins '*'");
        REQUIRE(s.ready());
        const int p = s.port();
        check_allowed_preflight(preflight(p, "/v1/chat/completions", "http://anywhere.example"), "http://anywhere.example");
        const Response r = http(p, "GET", "/v1/models", "", "Origin: http://anywhere.example\r\n");
        CHECK(r.status == 200);
        const std::string allow_origin = header_of(r, "Access-Control-Allow-Origin");
        CHECK((allow_origin == "*" || allow_origin == "http://anywhere.example"));
        CHECK(s.stop() == 0);
    }
}

// DNS rebinding: a page on evil.example, its name then pointed at 127.0.0.1, calls the server as
// its own origin and sends "Host: evil.example[:port]". Expected answers: Ollama's
// allowedHostsMiddleware (a server on a loopback address answers 403 to a Host that is no
// loopback name, before any handler; on a non-loopback address it does not check), RFC 9112 3.2
// (an HTTP/1.1 request without Host, or with two, is a 400), RFC 6761 6.3 and RFC 6890 for the
// loopback names.
TEST_CASE("server http: a server on loopback refuses a Host that is no loopback name, against DNS rebinding") {
    auto with_host = [](int port, const std::string& method, const std::string& path, const std::string& host,
                        const std::string& extra = "", const std::string& version = "HTTP/1.1") {
        const std::string body = method == "POST" ? completion_body("ROMEO:", 2) : "";
        return raw_exchange(
            port,
            method + " " + path + " " + version + "\r\n" + (host.empty() ? "" : "Host: " + host + "\r\n") +
                "Connection: close\r\n" + extra +
                (method == "POST" ? "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n"
                                  : "") +
                "\r\n" + body);
    };
    {
        Server s("-np 1 -c 512");
        REQUIRE(s.ready());
        const int p = s.port();
        const std::string port = std::to_string(p);
        for (const std::string& host :
             std::vector<std::string>{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST", "app.localhost:" + port,
                                      "127.0.0.2:" + port, "[::1]:" + port, "127.0.0.1"}) {
            INFO(host);
            CHECK(with_host(p, "GET", "/v1/models", host).status == 200);
        }
        // Every path and method: the chat page, a preflight from an origin let in, a completion.
        for (const std::string& host :
             std::vector<std::string>{"evil.example:" + port, "evil.example", "localhost.evil.example:" + port,
                                      "127.0.0.1.evil.example", "192.168.1.5:" + port, "localhost:" + port + "x"}) {
            INFO(host);
            check_error_shape(with_host(p, "GET", "/v1/models", host), 403);
            check_error_shape(with_host(p, "GET", "/", host), 403);
            check_error_shape(with_host(p, "GET", "/health", host), 403);
            check_error_shape(with_host(p, "POST", "/v1/completions", host), 403);
            const Response pre = with_host(p, "OPTIONS", "/v1/chat/completions", host,
                                           "Origin: http://localhost:5173\r\nAccess-Control-Request-Method: POST\r\n");
            CHECK(pre.status == 403);
            CHECK(header_of(pre, "Access-Control-Allow-Methods").empty());
        }
        // No job ran for the refused completions.
        CHECK(s.log().find(" generated") == std::string::npos);
        // An HTTP/1.0 request may have no Host: let in (no browser sends one without). An
        // HTTP/1.1 one must have exactly one.
        CHECK(with_host(p, "GET", "/v1/models", "", "", "HTTP/1.0").status == 200);
        check_error_shape(with_host(p, "GET", "/v1/models", "evil.example", "", "HTTP/1.0"), 403);
        check_error_shape(with_host(p, "GET", "/v1/models", ""), 400);
        check_error_shape(with_host(p, "GET", "/v1/models", "127.0.0.1", "Host: 127.0.0.1\r\n"), 400);
        CHECK(with_host(p, "POST", "/v1/completions", "localhost:" + port).status == 200);
        CHECK(s.stop() == 0);
    }
    {
        // --allowed-hosts names more hosts: a name, an address, ".NAME" for a name and those under it.
        Server s("-np 1 -c 512 --allowed-hosts 'my.lan, 10.0.0.7,.example.com'");
        REQUIRE(s.ready());
        const int p = s.port();
        for (const std::string host :
             {"my.lan:8080", "MY.LAN", "10.0.0.7:80", "example.com", "a.b.example.com:443", "localhost"}) {
            INFO(host);
            CHECK(with_host(p, "GET", "/v1/models", host).status == 200);
        }
        for (const std::string host : {"evil.example", "a.my.lan", "badexample.com", "10.0.0.8"}) {
            INFO(host);
            check_error_shape(with_host(p, "GET", "/v1/models", host), 403);
        }
        CHECK(s.stop() == 0);
    }
    {
        Server s("-np 1 -c 512 --allowed-hosts '*'");
        REQUIRE(s.ready());
        CHECK(with_host(s.port(), "GET", "/v1/models", "evil.example:8080").status == 200);
        CHECK(s.stop() == 0);
    }
    {
        // On 0.0.0.0 the names clients use are not known: no check, as Ollama's; with
        // --allowed-hosts, the same check as on loopback.
        Server s("-np 1 -c 512 --host 0.0.0.0");
        REQUIRE(s.ready());
        CHECK(with_host(s.port(), "GET", "/v1/models", "evil.example:8080").status == 200);
        CHECK(s.stop() == 0);
        Server t("-np 1 -c 512 --host 0.0.0.0 --allowed-hosts my.lan");
        REQUIRE(t.ready());
        CHECK(with_host(t.port(), "GET", "/v1/models", "my.lan:8080").status == 200);
        CHECK(with_host(t.port(), "GET", "/v1/models", "127.0.0.1").status == 200);
        check_error_shape(with_host(t.port(), "GET", "/v1/models", "evil.example:8080"), 403);
        CHECK(t.stop() == 0);
    }
}

TEST_CASE("server http: --api-key, and the official openai client's test") {
    Server s("-np 2 -c 4096 --api-key sesame");
    REQUIRE(s.ready());
    const int p = s.port();
    check_error_shape(http(p, "GET", "/v1/models"), 401);
    check_error_shape(http(p, "GET", "/v1/models", "", "Authorization: Bearer wrong\r\n"), 401);
    check_error_shape(http(p, "POST", "/tokenize", R"({"content":"x"})"), 401);
    CHECK(http(p, "GET", "/v1/models", "", "Authorization: Bearer sesame\r\n").status == 200);
    // The scheme's name is case-insensitive (RFC 9110 11.1), and one or more spaces follow it
    // (RFC 6750 2.1: "Bearer" 1*SP b64token).
    for (const char* auth : {"bearer sesame", "BEARER sesame", "Bearer  sesame"}) {
        INFO(auth);
        CHECK(http(p, "GET", "/v1/models", "", std::string("Authorization: ") + auth + "\r\n").status == 200);
    }
    check_error_shape(http(p, "GET", "/v1/models", "", "Authorization: Basic c2VzYW1l\r\n"), 401);
    check_error_shape(http(p, "GET", "/v1/models", "", "Authorization: Bearersesame\r\n"), 401);
    // A 401 names the scheme it asks for (RFC 9110 15.5.2: it MUST carry WWW-Authenticate).
    for (const std::string auth : {"", "Authorization: Bearer wrong\r\n"}) {
        const Response r = http(p, "POST", "/v1/chat/completions", R"({"messages":[]})", auth);
        CHECK(r.status == 401);
        CHECK(header_of(r, "WWW-Authenticate").rfind("Bearer", 0) == 0);
    }
    // The page and /health need no key.
    Response page = http(p, "GET", "/");
    CHECK(page.status == 200);
    CHECK(page.headers.find("text/html") != std::string::npos);
    CHECK(page.body == read_text("server/chat_page.html"));
    CHECK(http(p, "GET", "/health").status == 200);
    // A request refused before its body is read leaves the body unread; the next request on
    // the connection is still read from its start (the openai client reuses connections).
    for (const std::string& body : {std::string(R"({"content":"x"})"), std::string(100000, ' ')}) {
        const int fd = connect_to(p, 10);
        REQUIRE(fd >= 0);
        send_all(fd, "POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body);
        check_error_shape(read_one(fd), 401);
        send_all(fd, "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sesame\r\n\r\n");
        CHECK(read_one(fd).status == 200);
        close(fd);
    }

    // node:test's TAP output ends with "# pass N" and "# fail N".
    CommandResult r =
        run_command("node tests/server/openai_client_test.mjs --url http://127.0.0.1:" + std::to_string(p) + " --api-key sesame");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("\n# fail 0\n") != std::string::npos);
    CHECK(r.out.find("\n# skipped 0\n") != std::string::npos);
    CHECK(s.stop() == 0);
}

TEST_CASE(
    "server http: a follow-up turn goes to the slot that holds its conversation, reuses its prompt, and is answered as a cold server answers it") {
    Server s("-np 2 -c 2048");
    REQUIRE(s.ready());
    const int p = s.port();
    auto chat = [&](const json& messages) {
        return http(p, "POST", "/v1/chat/completions",
                    json{{"messages", messages}, {"max_tokens", 24}, {"temperature", 0}}.dump())
            .j();
    };
    const json a1 = {{{"role", "system"}, {"content", "Thou art the king's herald."}},
                     {{"role", "user"}, {"content", "What news from France?"}}};
    const json ra = chat(a1);
    REQUIRE(ra.contains("usage"));
    // Another conversation meanwhile: it takes the other slot, and A's stays cached.
    const json rb = chat(json{{{"role", "user"}, {"content", "Good morrow, sweet Hal."}}});
    REQUIRE(rb.contains("usage"));
    json a2 = a1;
    a2.push_back({{"role", "assistant"}, {"content", ra["choices"][0]["message"]["content"]}});
    a2.push_back({{"role", "user"}, {"content", "And from Scotland?"}});
    const json ra2 = chat(a2);
    REQUIRE(ra2.contains("usage"));
    // The log's last line: "slot N: chat, prompt P tokens (C cached), ...".
    const std::string log = s.log();
    const size_t last = log.rfind("slot ");
    REQUIRE(last != std::string::npos);
    const int slot_a2 = std::atoi(log.c_str() + last + 5);
    const size_t first_a = log.find("slot ");
    CHECK(slot_a2 == std::atoi(log.c_str() + first_a + 5));  // the slot of turn 1
    const int cached = std::atoi(log.c_str() + log.find('(', last) + 1);
    const int before = ra["usage"]["prompt_tokens"].get<int>() + ra["usage"]["completion_tokens"].get<int>();
    INFO(log.substr(last));
    // Turn 1's prompt is reused from the cache. Its reply comes back as text and is tokenized as
    // sent (as llama-server does), so it is reused as far as those ids are the generated ones.
    CHECK(cached >= ra["usage"]["prompt_tokens"].get<int>() - 1);
    CHECK(ra2["usage"]["prompt_tokens"].get<int>() > before);
    CHECK(s.stop() == 0);
    // A request is a function of its body: the same follow-up on a server that never saw turn 1
    // gets the same prompt and the same greedy reply.
    Server cold("-np 2 -c 2048");
    REQUIRE(cold.ready());
    const json rc =
        http(cold.port(), "POST", "/v1/chat/completions", json{{"messages", a2}, {"max_tokens", 24}, {"temperature", 0}}.dump())
            .j();
    CHECK(rc["usage"] == ra2["usage"]);
    CHECK(rc["choices"][0]["message"]["content"] == ra2["choices"][0]["message"]["content"]);
    CHECK(cold.stop() == 0);
}

// Qwen2.5's Jinja template puts its own system message first when a dialog has none; Hugging
// Face's apply_chat_template and llama-server (with its Jinja engine) render the dialog so, and
// the server must too: a chat without one takes as many prompt tokens as the same chat with
// that message given.
TEST_CASE("server http: a chat without a system message gets the one the model's chat template puts first") {
    REQUIRE(run_command("rm -rf build/tests/server-qwen25-hf && cp -r tests/data/parity/gqa build/tests/server-qwen25-hf")
                .exit_code == 0);
    {
        std::ofstream f("build/tests/server-qwen25-hf/tokenizer_config.json");
        f << json{{"chat_template", read_text("tests/data/chat/Qwen2.5-7B-Instruct.jinja")}}.dump();
    }
    REQUIRE(run_command("./quantize build/tests/server-qwen25-hf build/tests/server-qwen25.hearth -q").exit_code == 0);
    Server s("-np 1 -c 512", "build/tests/server-qwen25.hearth");
    REQUIRE(s.ready());
    auto prompt_tokens = [&](const json& messages) {
        const json r = http(s.port(), "POST", "/v1/chat/completions",
                            json{{"messages", messages}, {"max_tokens", 1}, {"temperature", 0}}.dump())
                           .j();
        REQUIRE(r.contains("usage"));
        return r["usage"]["prompt_tokens"].get<int>();
    };
    const json user = {{"role", "user"}, {"content", "Hello!"}};
    const int none = prompt_tokens(json::array({user}));
    const int given = prompt_tokens(json::array(
        {{{"role", "system"}, {"content", "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."}}, user}));
    const int other = prompt_tokens(json::array({{{"role", "system"}, {"content", "Be brief."}}, user}));
    CHECK(none == given);
    CHECK(other < none);
    CHECK(s.stop() == 0);
}

// The data: events of a whole streamed reply, [DONE] left out.
std::vector<json> stream_events(const Response& r) {
    std::vector<json> events;
    for (size_t at = r.body.find("data: "); at != std::string::npos; at = r.body.find("data: ", at + 1)) {
        const size_t end = r.body.find("\n\n", at);
        const std::string data = r.body.substr(at + 6, end == std::string::npos ? std::string::npos : end - at - 6);
        if (data != "[DONE]") events.push_back(json::parse(data));
    }
    return events;
}

// Expected values: llama-server's (llama.cpp b10587) answers to the same requests, the default
// model written as GGUF (quantize models/tiny-shakespeare.hearth ts.gguf keep) and served with
// llama-server -m ts.gguf --chat-template-file, the template's published Jinja (a plain ChatML
// one; Meta-Llama-3-8B-Instruct's; Llama-2-chat's): greedy, the same tokens.
TEST_CASE("server http: a last assistant message is continued and a later system message is a turn, as llama-server answers") {
    const json prefill = {{{"role", "system"}, {"content", "Be brief."}},
                          {{"role", "user"}, {"content", "Who art thou?"}},
                          {{"role", "assistant"}, {"content", "  I am the prince "}}};
    const json later_system = {{{"role", "user"}, {"content", "Who?"}},
                               {{"role", "assistant"}, {"content", "Sir"}},
                               {{"role", "system"}, {"content", "Be brief."}},
                               {{"role", "user"}, {"content", "Speak"}}};
    const json after_system = {{{"role", "system"}, {"content", "Be brief."}},
                               {{"role", "assistant"}, {"content", "  I am the prince "}}};
    auto body = [](const json& messages, bool stream = false) {
        return json{{"messages", messages}, {"max_tokens", 6}, {"temperature", 0}, {"stream", stream}}.dump();
    };
    {
        Server s("-np 1 -c 512 --template chatml");
        REQUIRE(s.ready());
        // The reply's content is the message's text and its continuation (llama-server's content
        // holds both, the prefill first); the usage counts the generated tokens.
        const Response r = http(s.port(), "POST", "/v1/chat/completions", body(prefill));
        INFO(r.body);
        REQUIRE(r.status == 200);
        CHECK(text_of(r) == "  I am the prince enternofull");
        CHECK(r.j()["usage"]["prompt_tokens"] == 72);
        CHECK(r.j()["usage"]["completion_tokens"] == 6);
        // Streamed, the deltas make the same content.
        std::string streamed;
        for (const json& e : stream_events(http(s.port(), "POST", "/v1/chat/completions", body(prefill, true))))
            if (e["choices"].size() && e["choices"][0]["delta"].contains("content"))
                streamed += e["choices"][0]["delta"]["content"].get<std::string>();
        CHECK(streamed == "  I am the prince enternofull");
        // The first generated token's text joins the message's as the whole would decode: a
        // SentencePiece piece keeps its leading space there (" a").
        const json thou = {{{"role", "user"}, {"content", "Who art thou?"}}, {{"role", "assistant"}, {"content", "Thou art"}}};
        const Response t = http(s.port(), "POST", "/v1/chat/completions",
                                json{{"messages", thou}, {"max_tokens", 4}, {"temperature", 0}}.dump());
        CHECK(text_of(t) == "Thou art a banish");
        CHECK(t.j()["usage"]["prompt_tokens"] == 42);
        // A reply begun after the system message alone: the system turn, the generation prompt, the text.
        const Response a = http(s.port(), "POST", "/v1/chat/completions", body(after_system));
        INFO(a.body);
        CHECK(text_of(a) == "  I am the prince enterors, and");
        CHECK(a.j()["usage"]["prompt_tokens"] == 48);
        // continue_final_message true, with add_generation_prompt false as llama-server (and vLLM)
        // ask: the same prefill. false: the message is a finished turn and the reply a new one,
        // as llama-server --no-prefill-assistant renders it (vLLM's false).
        auto with = [&](const std::string& extra) {
            json b = {{"messages", thou}, {"max_tokens", 4}, {"temperature", 0}};
            b.update(json::parse(extra));
            return http(s.port(), "POST", "/v1/chat/completions", b.dump());
        };
        const Response cont = with(R"({"continue_final_message": true, "add_generation_prompt": false})");
        CHECK(text_of(cont) == "Thou art a banish");
        CHECK(cont.j()["usage"]["prompt_tokens"] == 42);
        check_error_shape(with(R"({"continue_final_message": true})"), 400, "add_generation_prompt");
        const Response closed = with(R"({"continue_final_message": false})");
        CHECK(text_of(closed) == "To the c");
        CHECK(closed.j()["usage"]["prompt_tokens"] == 62);
        CHECK(s.stop() == 0);
    }
    {
        Server s("-np 1 -c 512 --template llama3");
        REQUIRE(s.ready());
        const Response r = http(s.port(), "POST", "/v1/chat/completions", body(later_system));
        INFO(r.body);
        REQUIRE(r.status == 200);
        CHECK(text_of(r) == "To the court");
        CHECK(r.j()["usage"]["prompt_tokens"] == 187);
        const Response a = http(s.port(), "POST", "/v1/chat/completions", body(after_system));
        INFO(a.body);
        CHECK(text_of(a) == "  I am the prince enterructed");
        CHECK(a.j()["usage"]["prompt_tokens"] == 80);
        const json thou = {{{"role", "user"}, {"content", "Who art thou?"}}, {{"role", "assistant"}, {"content", "Thou art"}}};
        const Response closed =
            http(s.port(), "POST", "/v1/chat/completions",
                 json{{"messages", thou}, {"max_tokens", 4}, {"temperature", 0}, {"continue_final_message", false}}.dump());
        CHECK(text_of(closed) == "To the c");
        CHECK(closed.j()["usage"]["prompt_tokens"] == 110);
        CHECK(s.stop() == 0);
    }
    {
        // Llama-2-chat's Jinja raises "Conversation roles must alternate" (llama-server: 400).
        Server s("-np 1 -c 512 --template llama2");
        REQUIRE(s.ready());
        const Response r = http(s.port(), "POST", "/v1/chat/completions", body(later_system));
        check_error_shape(r, 400, "messages");
        CHECK(r.body.find("system message only as the first message") != std::string::npos);
        // Its Jinja writes the system message into the first user message; without one it drops
        // it, and llama-server continues the reply's text alone: refused instead.
        const Response a = http(s.port(), "POST", "/v1/chat/completions", body(after_system));
        check_error_shape(a, 400, "messages");
        CHECK(a.body.find("puts the system message into the first user message") != std::string::npos);
        // Llama-2-chat's Jinja has no generation prompt: no new turn after a finished reply.
        const json thou = {{{"role", "user"}, {"content", "Who art thou?"}}, {{"role", "assistant"}, {"content", "Thou art"}}};
        check_error_shape(http(s.port(), "POST", "/v1/chat/completions",
                               json{{"messages", thou}, {"max_tokens", 4}, {"continue_final_message", false}}.dump()),
                          400, "messages");
        CHECK(s.stop() == 0);
    }
}

// A token's text as SentencePiece's own pieces say (U+2581 as a space, a byte piece its byte):
// the expected `tokens` of the logprobs tests.
std::string piece_text(const sentencepiece::SentencePieceProcessor& sp, int id) {
    if (sp.IsByte(id)) return std::string(1, char(std::stoi(sp.IdToPiece(id).substr(3, 2), nullptr, 16)));
    std::string t = sp.IdToPiece(id);
    for (size_t at; (at = t.find("\xE2\x96\x81")) != std::string::npos;) t.replace(at, 3, " ");
    return t;
}

TEST_CASE("server http: logprobs are the PyTorch reference's log-softmax, in OpenAI's shapes") {
    // Expected values: the reference's logits at every position of the golden prompt
    // (tests/reference/make_default_golden.py), and SentencePiece's own pieces for the ids.
    const json golden = json::parse(read_text("tests/data/default_model_golden.json"));
    const std::vector<int> ids = golden["prompt_ids"];
    const std::vector<std::vector<double>> logits = golden["logits"];
    sentencepiece::SentencePieceProcessor sp;
    REQUIRE(sp.Load("tests/data/tiny-shakespeare-tokenizer.model").ok());
    auto text_of_id = [&](int id) { return piece_text(sp, id); };
    // The reference keeps its cache in f32: so does this server.
    Server s("-np 1 -c 512 -ctk f32 -ctv f32");
    REQUIRE(s.ready());
    const int p = s.port();
    constexpr int kTop = 5;
    for (size_t k = 1; k <= ids.size(); k++) {
        // The prompt's first k ids: the next token's distribution is the reference's row k - 1.
        const std::vector<double>& row = logits[k - 1];
        double max = row[0], sum = 0, max_abs = 0;
        for (double x : row) max = std::max(max, x), max_abs = std::max(max_abs, std::fabs(x));
        for (double x : row) sum += std::exp(x - max);
        const double log_z = max + std::log(sum);
        std::vector<int> order(row.size());
        for (size_t i = 0; i < order.size(); i++) order[i] = int(i);
        std::partial_sort(order.begin(), order.begin() + kTop, order.end(), [&](int a, int b) { return row[a] > row[b]; });
        const double tol = 2e-3 * max_abs;  // the parity tests' bound on the logits, and the softmax's sum
        const json body = {{"prompt", std::vector<int>(ids.begin(), ids.begin() + long(k))},
                           {"max_tokens", 1},
                           {"temperature", 0},
                           {"logprobs", kTop}};
        const Response r = http(p, "POST", "/v1/completions", body.dump());
        INFO("prompt of " << k << " ids: " << r.body);
        REQUIRE(r.status == 200);
        const json lp = r.j()["choices"][0]["logprobs"];
        REQUIRE(lp["tokens"].size() == 1);
        // Greedy: the reference's most likely id, with its log-probability.
        CHECK(lp["tokens"][0] == text_of_id(order[0]));
        CHECK(std::fabs(lp["token_logprobs"][0].get<double>() - (row[order[0]] - log_z)) <= tol);
        const json& top = lp["top_logprobs"][0];
        CHECK(top.size() <= size_t(kTop));  // ids of the same text share an entry
        for (int i = 0; i < kTop; i++) {
            const std::string t = text_of_id(order[i]);
            INFO("alternative " << i << ": id " << order[i] << " " << json(t).dump());
            REQUIRE(top.contains(t));
            CHECK(top[t].get<double>() <= 0);
            CHECK(std::fabs(top[t].get<double>() - (row[order[i]] - log_z)) <= tol);
        }
    }

    // Chat, unstreamed and streamed: one entry per generated token, in order, each with its
    // bytes and its alternatives, most likely first; greedy, each is its own first alternative.
    const json chat = {{"messages", {{{"role", "user"}, {"content", "Speak of the king."}}}},
                       {"max_tokens", 12},
                       {"temperature", 0},
                       {"logprobs", true},
                       {"top_logprobs", 3}};
    const Response whole = http(p, "POST", "/v1/chat/completions", chat.dump());
    REQUIRE(whole.status == 200);
    const json reply = whole.j();
    const json& choice = reply["choices"][0];
    const json content = choice["logprobs"]["content"];
    REQUIRE(content.is_array());
    CHECK(content.size() == reply["usage"]["completion_tokens"].get<size_t>());
    std::string joined;
    for (const json& t : content) {
        INFO(t.dump());
        std::string bytes;
        for (int b : t["bytes"]) bytes += char(b);
        CHECK(bytes == t["token"].get<std::string>());  // these tokens are whole UTF-8 characters
        joined += bytes;
        REQUIRE(t["top_logprobs"].size() == 3);
        CHECK(t["top_logprobs"][0]["token"] == t["token"]);
        CHECK(t["top_logprobs"][0]["logprob"] == t["logprob"]);
        for (int i = 0; i + 1 < 3; i++) CHECK(t["top_logprobs"][i]["logprob"] >= t["top_logprobs"][i + 1]["logprob"]);
    }
    // A chat reply's text drops the leading space of its first piece, as SentencePiece does.
    const std::string text = choice["message"]["content"];
    CHECK((joined == text || joined == " " + text));
    json streamed_chat = chat;
    streamed_chat["stream"] = true;
    json streamed = json::array();
    for (const json& e : stream_events(http(p, "POST", "/v1/chat/completions", streamed_chat.dump())))
        if (e["choices"][0]["logprobs"].is_object())
            for (const json& t : e["choices"][0]["logprobs"]["content"]) streamed.push_back(t);
    // The same entries. The streamed request's prompt is the cached one but its last token, which
    // is evaluated alone, where the first request's was one of a batch: a batch's logits may
    // differ from one token's in the last bits (model/generate.h), so the numbers within 1e-4.
    REQUIRE(streamed.size() == content.size());
    for (size_t i = 0; i < content.size(); i++) {
        INFO("entry " << i << ": " << streamed[i].dump() << " against " << content[i].dump());
        CHECK(streamed[i]["token"] == content[i]["token"]);
        CHECK(streamed[i]["bytes"] == content[i]["bytes"]);
        CHECK(streamed[i]["logprob"].get<double>() == doctest::Approx(content[i]["logprob"].get<double>()).epsilon(1e-4));
        const json &ts = streamed[i]["top_logprobs"], &tc = content[i]["top_logprobs"];
        REQUIRE(ts.size() == tc.size());
        for (size_t k = 0; k < tc.size(); k++) {
            CHECK(ts[k]["token"] == tc[k]["token"]);
            CHECK(ts[k]["logprob"].get<double>() == doctest::Approx(tc[k]["logprob"].get<double>()).epsilon(1e-4));
        }
    }
    // Without logprobs they are null; a bad top_logprobs is refused.
    CHECK(http(p, "POST", "/v1/completions", completion_body("ROMEO:", 2)).j()["choices"][0]["logprobs"].is_null());
    check_error_shape(http(p, "POST", "/v1/chat/completions",
                           R"({"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":21})"),
                      400, "top_logprobs");
    check_error_shape(
        http(p, "POST", "/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}],"top_logprobs":2})"), 400,
        "top_logprobs");
    check_error_shape(http(p, "POST", "/v1/completions", R"({"prompt":"hi","logprobs":true})"), 400, "logprobs");
    CHECK(s.stop() == 0);
}

TEST_CASE("server http: echo with logprobs scores a prompt as the PyTorch reference does, with text offsets") {
    // A scorer's request (lm-evaluation-harness's loglikelihood): the prompt as token ids, echo,
    // logprobs and max_tokens 1. Expected values: the reference's logits at every position of
    // the golden prompt, its greedy id, its prompt text, and SentencePiece's pieces for the ids.
    const json golden = json::parse(read_text("tests/data/default_model_golden.json"));
    const std::vector<int> ids = golden["prompt_ids"];
    const std::vector<std::vector<double>> logits = golden["logits"];
    const std::string prompt_text = golden["prompt_text"];
    const int greedy = golden["greedy_ids"][0];
    sentencepiece::SentencePieceProcessor sp;
    REQUIRE(sp.Load("tests/data/tiny-shakespeare-tokenizer.model").ok());
    auto text_of_id = [&](int id) { return piece_text(sp, id); };
    auto log_softmax_at = [&](const std::vector<double>& row, int id, double* max_abs) {
        double max = row[0], sum = 0;
        *max_abs = 0;
        for (double x : row) max = std::max(max, x), *max_abs = std::max(*max_abs, std::fabs(x));
        for (double x : row) sum += std::exp(x - max);
        return row[size_t(id)] - max - std::log(sum);
    };
    Server s("-np 2 -c 1024 -ctk f32 -ctv f32");
    REQUIRE(s.ready());
    const int p = s.port();
    // First the same prompt without echo, so that a slot caches it: echo must still score it all.
    REQUIRE(http(p, "POST", "/v1/completions", json{{"prompt", ids}, {"max_tokens", 1}}.dump()).status == 200);
    const json body = {{"prompt", ids}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 1}, {"temperature", 0}};
    const Response r = http(p, "POST", "/v1/completions", body.dump());
    INFO(r.body);
    REQUIRE(r.status == 200);
    const json choice = r.j()["choices"][0];
    const json lp = choice["logprobs"];
    const size_t n = ids.size();
    REQUIRE(lp["tokens"].size() == n + 1);
    REQUIRE(lp["token_logprobs"].size() == n + 1);
    REQUIRE(lp["top_logprobs"].size() == n + 1);
    REQUIRE(lp["text_offset"].size() == n + 1);
    CHECK(lp["token_logprobs"][0].is_null());  // BOS: nothing before it
    CHECK(lp["top_logprobs"][0].is_null());
    const std::string text = choice["text"];
    CHECK(text.rfind(prompt_text, 0) == 0);  // the prompt's text, then the reply's
    for (size_t i = 1; i <= n; i++) {
        const int id = i < n ? ids[i] : greedy;
        double max_abs = 0;
        const double want = log_softmax_at(logits[i - 1], id, &max_abs);
        INFO("token " << i << ", id " << id);
        CHECK(lp["tokens"][i] == text_of_id(id));
        CHECK(std::fabs(lp["token_logprobs"][i].get<double>() - want) <= 2e-3 * max_abs);
        CHECK(lp["top_logprobs"][i].size() == 1);
        // Each token's text is where its offset says (the first piece's leading space is not:
        // a text's first SentencePiece piece drops it). The prompt is ASCII: characters are bytes.
        const size_t at = lp["text_offset"][i];
        CHECK(at >= lp["text_offset"][i - 1].get<size_t>());
        std::string t = text_of_id(id);
        if (at == 0 && !t.empty() && t[0] == ' ') t.erase(0, 1);
        CHECK(text.compare(at, t.size(), t) == 0);
    }
    CHECK(lp["text_offset"][n] == prompt_text.size());  // the reply starts where the prompt ends
    // The prompt but its last id, in the same slot: the reply's token follows the reference's
    // row n - 2 (its most likely id), not what the slot held before.
    const std::vector<int> shorter(ids.begin(), ids.end() - 1);
    const Response r2 =
        http(p, "POST", "/v1/completions",
             json{{"prompt", shorter}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 1}, {"temperature", 0}}.dump());
    REQUIRE(r2.status == 200);
    const json lp2 = r2.j()["choices"][0]["logprobs"];
    REQUIRE(lp2["tokens"].size() == n);
    const std::vector<double>& row = logits[n - 2];
    const int best = int(std::max_element(row.begin(), row.end()) - row.begin());
    double max_abs = 0;
    const double want = log_softmax_at(row, best, &max_abs);
    CHECK(lp2["tokens"][n - 1] == text_of_id(best));
    CHECK(std::fabs(lp2["token_logprobs"][n - 1].get<double>() - want) <= 2e-3 * max_abs);

    // A text prompt, max_tokens 0: the prompt's text alone, BOS added as `run -p` does; streamed,
    // the same text and tokens arrive first. Without echo, offsets still count from the prompt.
    const json scored = {{"prompt", prompt_text}, {"echo", true}, {"logprobs", 0}, {"max_tokens", 0}};
    const Response only = http(p, "POST", "/v1/completions", scored.dump());
    REQUIRE(only.status == 200);
    const json oc = only.j()["choices"][0];
    CHECK(oc["text"] == prompt_text);
    CHECK(oc["finish_reason"] == "length");
    CHECK(only.j()["usage"]["completion_tokens"] == 0);
    CHECK(oc["logprobs"]["tokens"].size() == n);
    CHECK(oc["logprobs"]["token_logprobs"][n - 1] == lp["token_logprobs"][n - 1]);
    json streamed_body = scored;
    streamed_body["stream"] = true;
    std::string streamed_text;
    json streamed_tokens = json::array();
    for (const json& e : stream_events(http(p, "POST", "/v1/completions", streamed_body.dump()))) {
        if (e["choices"].empty()) continue;
        streamed_text += e["choices"][0]["text"].get<std::string>();
        if (e["choices"][0]["logprobs"].is_object())
            for (const json& t : e["choices"][0]["logprobs"]["tokens"]) streamed_tokens.push_back(t);
    }
    CHECK(streamed_text == prompt_text);
    CHECK(streamed_tokens == oc["logprobs"]["tokens"]);
    const Response plain = http(p, "POST", "/v1/completions",
                                json{{"prompt", prompt_text}, {"logprobs", 0}, {"max_tokens", 3}, {"temperature", 0}}.dump());
    REQUIRE(plain.status == 200);
    CHECK(plain.j()["choices"][0]["logprobs"]["text_offset"][0] == prompt_text.size());
    check_error_shape(http(p, "POST", "/v1/completions", json{{"prompt", prompt_text}, {"max_tokens", 0}}.dump()), 400,
                      "max_tokens");
    CHECK(s.stop() == 0);
}

TEST_CASE("server http: logprobs of drafted tokens are those of the same tokens generated without drafts") {
    // Greedy, the default model loops on this prompt, so prompt lookup proposes tokens and
    // many are accepted: their logprobs come from the verifying batch's logits
    // (Generator::end_step), the others' from a step's own.
    Server drafting("-np 1 -c 512 -ctk f32 -ctv f32"), plain("-np 1 -c 512 -ctk f32 -ctv f32 --draft 0");
    REQUIRE(drafting.ready());
    REQUIRE(plain.ready());
    const std::string body = json{{"prompt", "ROMEO:"}, {"max_tokens", 120}, {"temperature", 0}, {"logprobs", 3}}.dump();
    const Response a = http(drafting.port(), "POST", "/v1/completions", body);
    const Response b = http(plain.port(), "POST", "/v1/completions", body);
    REQUIRE(a.status == 200);
    REQUIRE(b.status == 200);
    const json la = a.j()["choices"][0]["logprobs"], lb = b.j()["choices"][0]["logprobs"];
    REQUIRE(la["tokens"] == lb["tokens"]);  // greedy ids are the same with and without drafts
    REQUIRE(la["tokens"].size() == 120);
    for (size_t i = 0; i < 120; i++) {
        INFO("token " << i << ": " << la["tokens"][i].dump());
        // A batch's logits may differ from one token's in the last bits.
        CHECK(la["token_logprobs"][i].get<double>() == doctest::Approx(lb["token_logprobs"][i].get<double>()).epsilon(1e-4));
        const json &ta = la["top_logprobs"][i], &tb = lb["top_logprobs"][i];
        REQUIRE(ta.size() == tb.size());
        for (auto it = tb.begin(); it != tb.end(); ++it) {
            REQUIRE(ta.contains(it.key()));
            CHECK(ta[it.key()].get<double>() == doctest::Approx(it.value().get<double>()).epsilon(1e-4));
        }
    }
    CHECK(drafting.stop() == 0);
    CHECK(plain.stop() == 0);
    // Drafts were accepted (the log's "drafts: N of M tokens accepted", N > 0), and none without.
    const std::string log = drafting.log();
    const size_t at = log.find("drafts: ");
    REQUIRE(at != std::string::npos);
    CHECK(std::atoi(log.c_str() + at + 8) > 0);
    CHECK(plain.log().find("drafts: ") == std::string::npos);
}
